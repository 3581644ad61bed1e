"""The MCP server's way to browserd: the HTTP API, through the public ``AsyncClient``.

One backend for both transports: ``browserd mcp`` (stdio) reaches the API at ``BROWSERD_API_URL``
with ``BROWSERD_API_TOKEN``; the streamable HTTP transport mounted on the API at ``/mcp`` calls the
same app in process (``httpx.ASGITransport``). Either way every call passes the API's own checks
and its refusals come back with the API's message. Answers are the API's JSON (dicts), which is
what MCP tools return.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel

from daemon.client import AsyncClient, ClientError
from workers.jobs.model.browsing import Viewport
from workers.jobs.model.record import EventType, JobEvent


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


class Api:
    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    @classmethod
    def remote(cls, base_url: str, token: str | None, timeout: float = 30.0) -> Api:
        return cls(AsyncClient(base_url, token or "", timeout))

    @classmethod
    def in_process(cls, transport: httpx.AsyncBaseTransport, timeout: float = 30.0, host: str = "127.0.0.1") -> Api:
        """The API app in process through ``transport`` (``http.CallerTransport``: it sets each
        call's bearer value), as ``host`` (a Host header the API answers: its DNS-rebinding guard)."""
        return cls(AsyncClient(f"http://{host}", "", timeout, transport=transport))

    async def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        return _plain(await self.client.submit(spec))

    async def job(self, job_id: str) -> dict[str, Any]:
        return _plain(await self.client.get(job_id))

    async def cancel(self, job_id: str) -> dict[str, Any]:
        return _plain(await self.client.cancel(job_id))

    async def pause(self, job_id: str) -> dict[str, Any]:
        return _plain(await self.client.pause(job_id))

    async def resume(self, job_id: str) -> dict[str, Any]:
        return _plain(await self.client.resume(job_id))

    async def hand_back(self, job_id: str) -> dict[str, Any]:
        return _plain(await self.client.hand_back(job_id))

    async def send_input(self, job_id: str, name: str, value: str) -> dict[str, Any]:
        return _plain(await self.client.send_input(job_id, name, value))

    async def jobs(self, *, state: str | None = None, label: list[str] | None = None, limit: int = 50,
                   cursor: int | None = None) -> dict[str, Any]:
        labels = dict(item.partition("=")[::2] for item in label or [])
        return _plain(await self.client.jobs(state=state, labels=labels or None, limit=limit, cursor=cursor))

    async def submit_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        return _plain(await self.client.submit_batch(body["jobs"], defaults=body.get("defaults"),
                                                     webhook_url=body.get("webhook_url")))

    async def batch(self, batch_id: str) -> dict[str, Any]:
        return _plain(await self.client.batch(batch_id))

    async def results(self, batch_id: str) -> list[dict[str, Any]]:
        return [_plain(line) async for line in self.client.results(batch_id)]

    async def events(self, job_id: str) -> list[JobEvent]:
        """The job's events so far, without following (and without the stream's end)."""
        return [e async for e in self.client.events(job_id, follow=False) if e.type != EventType.end]

    # --- crawls -------------------------------------------------------------------------------

    async def start_crawl(self, spec: dict[str, Any]) -> dict[str, Any]:
        return _plain(await self.client.start_crawl(spec))

    async def crawl(self, crawl_id: str) -> dict[str, Any]:
        return _plain(await self.client.crawl(crawl_id))

    async def cancel_crawl(self, crawl_id: str) -> dict[str, Any]:
        return _plain(await self.client.cancel_crawl(crawl_id))

    async def resume_crawl(self, crawl_id: str) -> dict[str, Any]:
        return _plain(await self.client.resume_crawl(crawl_id))

    async def crawl_results(self, crawl_id: str, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        return [_plain(line) async for line in self.client.crawl_results(crawl_id, offset=offset, limit=limit)]

    # --- interactive sessions ----------------------------------------------------------------

    async def open_session(self, start_url: str | None, allowed_networks: list[str] | None,
                           idle_timeout: float | None, viewport: Viewport | None, allowed_domains: list[str] | None,
                           denied_domains: list[str] | None) -> dict[str, Any]:
        return _plain(await self.client.open_session(
            start_url, allowed_networks=allowed_networks, idle_timeout=idle_timeout, viewport=viewport,
            allowed_domains=allowed_domains, denied_domains=denied_domains))

    async def sessions(self) -> list[dict[str, Any]]:
        return _plain(await self.client.sessions())

    async def navigate(self, session_id: str, url: str) -> dict[str, Any]:
        return _plain(await self.client.navigate(session_id, url))

    async def state(self, session_id: str, text: bool) -> dict[str, Any]:
        return _plain(await self.client.get_state(session_id, text=text))

    async def click(self, session_id: str, index: int) -> dict[str, Any]:
        return _plain(await self.client.click(session_id, index))

    async def type_text(self, session_id: str, index: int, text: str) -> dict[str, Any]:
        return _plain(await self.client.type_text(session_id, index, text))

    async def select(self, session_id: str, index: int, option: str) -> dict[str, Any]:
        return _plain(await self.client.select(session_id, index, option))

    async def scroll(self, session_id: str, direction: str | None, text: str | None) -> dict[str, Any]:
        return _plain(await self.client.scroll(session_id, direction, text=text))

    async def screenshot(self, session_id: str) -> bytes:
        return await self.client.screenshot(session_id)

    async def tabs(self, session_id: str) -> dict[str, Any]:
        return _plain(await self.client.tabs(session_id))

    async def close_session(self, session_id: str) -> dict[str, Any]:
        return _plain(await self.client.close_session(session_id))

    async def aclose(self) -> None:
        await self.client.close()


__all__ = ["Api", "ClientError"]
