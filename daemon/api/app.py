"""The HTTP API (``browserd serve``): jobs, batches, schedules, sessions, health checks and ``/metrics``.

Every request's ``Host`` must be one the API answers (``config.api_hosts``; 421 otherwise). Every ``/v1`` route needs ``Authorization: Bearer $BROWSERD_API_TOKEN`` when a token is set;
``/healthz``, ``/readyz`` and ``/metrics`` never do. ``/v1`` POSTs take JSON bodies only
(``content_types``: no cross-site form can post), and CORS is off unless
``BROWSERD_CORS_ORIGINS`` lists origins. The OpenAPI schema is at ``/openapi.json``
(docs: ``/docs``). The API imports the job kernel (``workers.jobs``) and nothing of the agent:
it publishes tasks by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from pydantic import BaseModel, Field

import daemon.api.artifacts as artifacts
import daemon.api.batches as batches
import daemon.api.crawls as crawls
import daemon.api.credentials as credentials
import daemon.api.docs_page as docs_page
import daemon.api.profiles as profiles
import daemon.api.errors as errors
import daemon.api.jobs as jobs
import daemon.api.recipes as recipes
import daemon.api.schedules as schedules
import daemon.api.sessions as sessions
import daemon.api.webhooks as webhooks
import daemon.api.tenants as tenants
import daemon.console as console
import daemon.mcp.http as mcp_http
from config import Settings, get_settings
from config.api_hosts import AllowedHosts
from config.isolation import IsolationLayer
from daemon.api.content_types import RequireJsonBodies
from daemon.api.deps import Store
from daemon.api.hosts import HostGuard
from daemon.api.errors import ApiError, ErrorBody
from daemon.api.limits import BodyLimit
from daemon.api.request_metrics import RequestMetrics
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.batches.sent_events import SentEvents
from workers.jobs.metrics import MetricsApp
from workers.jobs.queue.app import bind, broker_url
from workers.jobs.queue.limits import check_limits
from workers.jobs.store.connection import API_CONNECT_TIMEOUT, API_RETRIES, connect
from workers.jobs.store.jobs import WORKER_FRESH_SECONDS, JobStore


class Health(BaseModel):
    status: str
    workers: int | None = None


class Ready(Health):
    isolation: dict[IsolationLayer, bool] | None = Field(
        None, description="Each isolation layer of the workers' browsers (docs/security.md): true when every live "
                          "worker that reports it has it (a worker says why one is off in its log and `browserd doctor`).")


READY_CHECK_SECONDS = 2.0  # /readyz's Redis checks, all told: a probe must not hang with Redis

health = APIRouter()


@health.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The API process is up."""
    return Health(status="ok")


@health.get("/readyz", response_model=Ready, responses={503: {"model": ErrorBody}})
async def readyz(store: Store) -> Ready:
    """Redis answers and at least one worker sent a heartbeat recently; ``isolation`` says which layers
    the workers' browsers have (docs/security.md)."""
    try:
        async with asyncio.timeout(READY_CHECK_SECONDS):  # a probe answers in time, whatever Redis does
            await store.redis.ping()
            workers = await store.live_workers()
            isolation = await store.worker_isolation(workers) if workers else None
    except Exception as exc:
        raise ApiError(503, "not_ready", f"Redis is unreachable ({type(exc).__name__}); check BROWSERD_REDIS_URL") from None
    if not workers:
        raise ApiError(503, "not_ready", f"no worker sent a heartbeat in the last {WORKER_FRESH_SECONDS:g}s; "
                       "start one with 'browserd worker'")
    return Ready(status="ready", workers=len(workers), isolation=isolation)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    broker_url(settings)
    check_limits(settings)
    bind(settings)  # this app's Redis, whatever the process's environment says (an app made in a test)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = JobStore(connect(settings.redis_url or "", retries=API_RETRIES, connect_timeout=API_CONNECT_TIMEOUT),
                                   result_ttl=settings.result_ttl)
        try:
            async with mcp.running():
                yield
        finally:
            await app.state.sent_events.drain()  # a batch's task-sent events, after its answer
            await app.state.store.redis.aclose()

    app = FastAPI(
        title="browserd",
        version="0.1.0",
        description="Run LLM browser agents at scale on pooled headless Chromium.",
        lifespan=lifespan,
        docs_url=None, redoc_url=None,  # docs_page: the same Swagger UI without a CDN
    )
    app.state.settings = settings
    app.state.artifacts = ArtifactStore.from_settings(settings)
    app.state.sent_events = SentEvents()
    errors.install(app)
    app.add_middleware(RequireJsonBodies)
    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    if settings.cors_origins:  # off unless configured: no other origin's page may read or send
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "Last-Event-ID"])
    app.include_router(jobs.router)
    app.include_router(artifacts.router)
    app.include_router(batches.router)
    app.include_router(crawls.router)
    app.include_router(schedules.router)
    app.include_router(credentials.router)
    app.include_router(sessions.router)
    app.include_router(profiles.router)
    app.include_router(recipes.router)
    app.include_router(webhooks.router)
    app.include_router(tenants.router)
    app.include_router(health)
    docs_page.mount(app)
    app.add_middleware(RequestMetrics)
    console.mount(app, settings)  # the web console at /ui, same token
    mcp = mcp_http.mount(app, settings)  # MCP over streamable HTTP at /mcp, same token (or a tenant key)
    app.state.mcp = mcp
    # outside bearer auth, like the health checks
    app.add_route("/metrics", MetricsApp.from_url(settings.redis_url or ""), include_in_schema=False)
    # outermost: a rebound name (DNS rebinding) is refused before any route, the console or /mcp sees it
    app.add_middleware(HostGuard, allowed=AllowedHosts.from_settings(settings))
    return app
