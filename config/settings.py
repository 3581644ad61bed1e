"""One settings object for every browserd process.

Everything is read from the environment (prefix ``BROWSERD_``) or an optional ``.env`` file, so the
API, the workers and the beat see the same configuration. A bad value fails at start with the
variable's name and what is allowed, instead of surfacing as a confusing error deep in a job.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    AnyHttpUrl,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from config.api_hosts import parse_hosts
from config.data_dirs import SYSTEM_ARTIFACTS, default_artifacts_url
from config.hosts import normalise_entries
from config.isolation import CHROME_USER
from config.masking import MASK, mask_url
from config.messages import error_message
from config.networks import parse_networks
from config.proxy_pools import ProxyPool, check_pool_names, describe_pools
from config.redis_url import parse_redis_url

ENV_PREFIX = "BROWSERD_"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
ReasoningEffort = Literal["low", "medium", "high"]
OutputMethod = Literal["tools", "json_schema", "json_object", "text"]
"""How a role's model is asked for its JSON answer: a forced tool call, a JSON-schema response format,
JSON mode (the schema in the prompt), or plain text (the schema in the prompt, parsed tolerantly)."""
DEFAULT_MAX_TOKENS = 2048
Role = Literal["planner", "navigator", "extractor"]
ROLES: tuple[Role, ...] = ("planner", "navigator", "extractor")
MODEL_PARAMS = ("temperature", "top_p", "reasoning_effort")
"""What may be set per role (settings ``BROWSERD_<ROLE>_<PARAM>`` and a job's ``options.model_params``)."""
PROVIDER_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(Exception):
    """A setting has a value browserd cannot use; the message names the variable."""


def _split_list(value: Any) -> Any:
    """Accept a JSON list or a plain comma-separated string for list settings."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    """Every knob of browserd, with its default. The docs' configuration page is written from this."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        validate_default=True,
    )

    # --- logging ---------------------------------------------------------------------------
    log_level: LogLevel = Field("INFO", description="Log level: DEBUG, INFO, WARNING, ERROR.")
    log_json: bool = Field(False, description="Emit logs as one JSON object per line.")

    # --- Chromium --------------------------------------------------------------------------
    chrome_path: str | None = Field(
        None, description="Chrome/Chromium binary; default: first of chromium, chromium-browser, google-chrome on PATH."
    )
    chrome_args: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Extra command-line flags for launched browsers (comma-separated)."
    )
    cdp_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Attach to running browsers instead of launching (comma-separated ws:// or http://host:port).",
    )
    chrome_user: str = Field(
        CHROME_USER,
        description=("The unprivileged user a worker running as root starts Chrome as, so Chrome can run sandboxed "
                     "and holds none of the worker's files; empty: none (Chrome then runs as root, unsandboxed)."),
    )
    browser_network_namespace: bool = Field(
        True,
        description=("Launch browsers in their own network namespace holding only loopback, their egress gates the "
                     "one way out (needs root or CAP_SYS_ADMIN; where refused, browserd says so and falls back). "
                     "Off: browsers share the worker's network (docs/security.md)."),
    )
    launch_timeout: float = Field(20.0, gt=0, description="Seconds a launched browser has to open its DevTools port.")
    cdp_timeout: float = Field(30.0, gt=0, description="Default timeout in seconds for one CDP command.")

    # --- pool ------------------------------------------------------------------------------
    pool_browsers: int = Field(
        0,
        ge=0,
        description=("Browsers in each process's pool; 0: one per BROWSERD_POOL_JOBS_PER_BROWSER jobs of "
                     "BROWSERD_WORKER_CONCURRENCY, rounded up (concurrency 32: 2 browsers)."),
    )
    pool_jobs_per_browser: int = Field(
        16,
        ge=1,
        description=("With BROWSERD_POOL_BROWSERS=0, the concurrent jobs one browser serves before the pool starts "
                     "another: every CDP message of a browser's jobs goes through its one main thread, which 32 "
                     "jobs stepping at once keep busy (docs/development.md, bench.queue)."),
    )
    pool_warm: int = Field(
        2, ge=0, description="Ready contexts with a blank page kept per process, shared out over its browsers.",
    )
    pool_max_leases: int = Field(200, ge=1, description="A browser is recycled after serving this many leases.")
    pool_max_memory_mb: int = Field(
        4096,
        ge=64,
        description=(
            "A browser whose process tree uses more memory (PSS, MiB) is recycled. Each running job with its "
            "warm spare context takes about 130 MiB: keep this above that times the concurrency."
        ),
    )
    pool_health_interval: float = Field(
        5.0,
        gt=0,
        description=(
            "Seconds between pool memory checks. Reading PSS costs ~2.5 ms of CPU per Chrome process, so "
            "checking often steals CPU from the jobs; a dead browser is replaced at once regardless."
        ),
    )

    context_memory_limit_mb: int = Field(
        1024,
        ge=0,
        description=(
            "A job whose pages hold more memory (page heap, or its renderer's resident size when the page is too "
            "busy to answer; MiB) is stopped and fails with resource_limit; other jobs go on. 0 turns it off."
        ),
    )
    download_max_mb: int = Field(50, ge=1, description="A download larger than this (MiB) is cancelled and reported.")
    download_max_files: int = Field(
        10, ge=0, description="Downloads one job may save; more are cancelled. 0 refuses every download."
    )

    # --- artifacts -------------------------------------------------------------------------
    artifacts_url: str = Field(
        "",
        description="Where jobs' artifacts (screenshots, final page, logs, downloads, large data) are kept: any "
        f"fsspec URL (file:///dir, s3://bucket/prefix, gs://...); every worker and the API must reach the same one. "
        f"Kept as long as the job's record (BROWSERD_RESULT_TTL). Unset: file://{SYSTEM_ARTIFACTS} where the "
        "process may write it (root, the container image), else the user's $XDG_DATA_HOME/browserd/artifacts "
        "(~/.local/share/browserd/artifacts). A worker whose store cannot be written refuses to start.",
    )
    artifact_inline_bytes: int = Field(
        64 * 1024, ge=1024, description="Data and final answer larger than this (bytes of JSON) are stored as an "
        "artifact (the run's result.json) instead of in the Redis record; GET /v1/jobs/{id} still returns them.",
    )
    artifact_screenshot_quality: int = Field(70, ge=10, le=100, description="JPEG quality of step screenshots.")
    artifact_screenshot_max_kb: int = Field(
        300, ge=16, description="A step screenshot larger than this (KiB) is taken again at half scale and lower "
        "quality; one still larger is skipped.",
    )

    # --- Redis, queue, API -----------------------------------------------------------------
    redis_url: str | None = Field(
        None, description="Redis URL for job state and the Celery broker: redis://, rediss://, unix://, or Redis "
        "Sentinel in kombu's form sentinel://host1:26379;sentinel://host2:26379/0?master_name=NAME (the master's "
        "password as sentinel://:PASSWORD@host1..., the sentinels' own as &sentinel_password=); the demo starts its "
        "own when unset."
    )
    api_host: str = Field("127.0.0.1", description="Address the HTTP API binds to.")
    api_port: int = Field(8080, ge=0, le=65535, description="Port of the HTTP API.")
    api_token: SecretStr | None = Field(
        None,
        description="Bearer token the API requires. Unset (or empty) disables auth, which 'serve' allows only on "
        "a loopback address.",
    )
    api_insecure: bool = Field(
        False,
        description="Let 'serve' listen on a non-loopback address without BROWSERD_API_TOKEN (anyone who can "
        "reach the port drives the API); logged as a warning at every start.",
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="More Host names the API answers (comma-separated host or host:port; a name without a port "
        "matches any port), besides the address it binds (and localhost, 127.0.0.1, [::1] when that is loopback "
        "or 0.0.0.0/::). Any other Host gets 421 (but /healthz, /readyz and /metrics): a page that points its DNS "
        "name at the API (DNS rebinding) cannot drive it. Checked always without BROWSERD_API_TOKEN; with a "
        "token, only when set.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins whose pages may call the API from a browser (comma-separated, e.g. "
        "https://console.example); empty: no CORS headers, so no other origin can read or send JSON.",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="Key of the HMAC-SHA256 signature on webhook POSTs (webhook-signature, Standard Webhooks); "
        "unset sends them unsigned.",
    )
    webhook_allowed_networks: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Private networks webhooks may be delivered to (comma-separated CIDRs, e.g. 127.0.0.1/32); "
        "loopback, private, link-local and metadata addresses are refused otherwise.",
    )
    webhook_retry_seconds: float = Field(
        7200.0, ge=0, description="How long a failing webhook delivery is tried again (waits of 1 s, 2 s, 4 s ... up "
        "to 10 minutes apart) before it is given up; 0: never retried.",
    )
    secrets_key: SecretStr | None = Field(
        None,
        description="Fernet key (32 url-safe base64 bytes) that encrypts job secrets, stored credentials, proxy "
        "passwords and auth profiles in Redis; make one with python -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())'. Unset: jobs cannot carry secrets and there are no auth profiles.",
    )
    metrics_port: int = Field(
        9464, ge=0, le=65535, description="Port a worker serves its Prometheus metrics on; 0 picks a free port. Taken (a second worker "
        "on the host): the worker serves on a free port, logs which, and reports it in its heartbeat (browserd doctor)."
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Address a worker serves its Prometheus metrics on. Loopback by default: "
        "nothing else on the network can read them. The image, compose and Kubernetes set 0.0.0.0 so that "
        "Prometheus and the kubelet's probe reach each worker's container."
    )
    worker_concurrency: int = Field(4, ge=1, description="Jobs one worker process runs at once on its event loop.")
    tenant_release: int = Field(
        0, ge=0, le=100_000, description="Fair dispatch across tenants: most jobs of one tenant released to the "
        "broker and not finished at once; the rest wait in the tenant's own list and are released round-robin "
        "as slots free (0: the job slots of the live workers, their BROWSERD_WORKER_CONCURRENCY summed). A "
        "tenant's max_running lowers it. The operator's (admin token's) jobs go to the broker directly."
    )
    result_ttl: int = Field(7 * 24 * 3600, ge=1, description="Seconds finished job records and results are kept.")
    job_timeout: float = Field(600.0, gt=0, description="Default wall-clock limit for one job, in seconds.")
    max_attempts: int = Field(3, ge=1, description="Deliveries of one job before it fails as worker_lost.")
    visibility_timeout: float = Field(
        3600.0,
        gt=0,
        description="Seconds before the broker redelivers a job whose worker stopped answering; "
        "must exceed every job's hard time limit (its timeout plus a grace period).",
    )
    api_url: str | None = Field(
        None, description="Where the CLI reaches the HTTP API; default: http://BROWSERD_API_HOST:BROWSERD_API_PORT."
    )

    # --- reconciler and limits -------------------------------------------------------------
    reconcile_interval: float = Field(
        30.0, gt=0, description="Seconds between reconciler passes (the workers run them, one at a time across the fleet; no `browserd beat` needed)."
    )
    stale_job_seconds: float = Field(
        60.0, gt=0, description="A running job without a heartbeat this long is sent again by the reconciler "
        "(its worker died or lost its message); attempts past BROWSERD_MAX_ATTEMPTS end worker_lost."
    )
    orphan_job_seconds: float = Field(
        60.0, gt=0, description="A queued job this old with no message in the broker is published by the reconciler "
        "(its submitter died before publishing, or the broker lost the message)."
    )
    max_request_bytes: int = Field(
        16 * 1024 * 1024, ge=1024, description="Largest HTTP request body the API reads; larger ones get 413."
    )
    max_script_actions: int = Field(1000, ge=1, description="Most actions in one job's script.")
    keep_session_max: float = Field(
        600.0, gt=0, le=86_400, description="Longest idle time a job may ask to keep its browser session for "
        "follow-up tasks (options.keep_session, in seconds); a longer one is refused."
    )
    pause_max_seconds: float = Field(
        300.0, gt=0, le=86_400, description="Longest a paused job holds its browser lease; a job paused longer "
        "fails with category timeout."
    )
    human_timeout: float = Field(
        300.0, gt=0, le=86_400, description="How long a job that may ask a human (options.allow_human) waits for "
        "one in all, unless it sets options.human_timeout; counted outside the job's own timeout. A job not handed "
        "back in time fails with category human_timeout."
    )
    human_timeout_max: float = Field(
        1800.0, gt=0, le=86_400, description="Longest options.human_timeout a job may ask for; a longer one is "
        "refused. The job's timeout and its human_timeout together stay within what the queue can hold "
        "(BROWSERD_VISIBILITY_TIMEOUT)."
    )
    recipe_max_failures: int = Field(
        3, ge=1, le=1000, description="Failed runs in a row (replay and healing both failed) after which a recipe "
        "is marked broken: jobs naming it are refused until it is saved again.")
    max_result_bytes: int = Field(
        2 * 1024 * 1024, ge=1024, description="Largest result (answer, data, steps) a job may record; a larger "
        "one fails the job as invalid_output, naming this limit."
    )
    max_extract_chars: int = Field(
        600_000, ge=100, description="Characters of page text one extract_content call reads, in chunks of "
        "60,000 per model call (the rest is cut, and the model told so)."
    )

    # --- interactive sessions --------------------------------------------------------------
    session_idle_timeout: float = Field(
        300.0, gt=0, le=86_400, description="Seconds an interactive session (POST /v1/sessions, the MCP "
        "open_session tool) stays open without a command; then its worker closes it and frees its browser "
        "context. A session may ask for less, never more."
    )
    session_max_seconds: float = Field(
        3600.0, gt=0, le=86_400, description="Longest life of one interactive session, however busy, in seconds."
    )
    session_max_open: int = Field(
        20, ge=1, description="Interactive sessions open at once across all workers; one more is refused (429)."
    )
    # --- politeness (per registrable domain, shared by every worker through Redis) -------
    politeness_max_concurrent: int = Field(
        0, ge=0, le=1000, description="Jobs at most on one registrable domain at once, across every worker "
        "(0: no limit). A job waits for a slot without holding a browser; the wait counts against its timeout."
    )
    politeness_min_delay: float = Field(
        0.0, ge=0, le=3600, description="Seconds at least between two navigations to one registrable domain, "
        "across every worker (0: none)."
    )
    politeness_max_wait: float = Field(
        300.0, gt=0, description="Seconds a job waits at most for a slot on its domain (and within its own "
        "timeout); then it fails as timeout."
    )
    politeness_allow_looser: bool = Field(
        False, description="Let a job's politeness options be looser than these settings (by default a job may "
        "only be stricter; a looser value is refused with 422)."
    )
    politeness_backoff_max: float = Field(
        300.0, ge=1, le=86400, description="Adaptive back-off: the longest a registrable domain is slowed after it "
        "answered 429 or 503 (its Retry-After is honoured up to this) or a job reported it blocked_by_site; "
        "each such answer doubles the spacing of its navigations, across every worker."
    )
    politeness_backoff_recovery: float = Field(
        60.0, ge=1, le=86400, description="Seconds without a 429, 503 or blocked_by_site after which a slowed "
        "domain's back-off drops one level (the spacing halves), until it is gone."
    )
    respect_robots_txt: bool = Field(
        False, description="Refuse navigations that the site's robots.txt disallows (url_blocked); a job may "
        "ask for it itself."
    )
    robots_ttl: int = Field(3600, ge=1, description="Seconds a fetched robots.txt is cached in Redis.")
    robots_user_agent: str = Field(
        "browserd", min_length=1, description="User-agent token matched against robots.txt groups."
    )

    # --- LLM -------------------------------------------------------------------------------
    llm_model: str = Field("gpt-4o-mini", description="Chat model for every agent role unless overridden.")
    llm_prices: str | None = Field(
        None, description="LLM prices, as JSON: {\"model\": {\"input\": 2.5, \"cached_input\": 1.25, \"output\": 10}} "
        "in USD per million tokens, over the built-in table of common models (workers/jobs/costs.py). A model in "
        "neither is unpriced: its calls count no dollars and results name it in unpriced_models."
    )
    llm_base_url: AnyHttpUrl | None = Field(None, description="OpenAI-compatible endpoint; default: OpenAI.")
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("BROWSERD_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="API key for the LLM endpoint (BROWSERD_OPENAI_API_KEY also works).",
    )
    planner_model: str | None = Field(None, description="Model for the planner; default: llm_model.")
    navigator_model: str | None = Field(None, description="Model for the navigator; default: llm_model.")
    extractor_model: str | None = Field(None, description="Model for extract_content; default: llm_model.")
    validator_model: str | None = Field(
        None, description="A model (at the same endpoint, with the planner's parameters; may be the planner's) asked "
        "whether a claim of done is shown, after browserd's own checks passed it; its 'no' gives the agent the "
        "reason and another step (bounded, then unverified). Default: none, only browserd's checks.")
    llm_timeout: float = Field(120.0, gt=0, description="Seconds one LLM call may take.")
    llm_provider: str = Field(
        "langchain_openai:ChatOpenAI",
        description="The langchain chat model class, as module:Class (e.g. langchain_anthropic:ChatAnthropic; its "
        "package must be installed). Only ChatOpenAI and its subclasses get OPENAI_API_KEY; others read their own "
        "key variables. A path that does not load stops the worker at start.",
    )
    planner_temperature: float | None = Field(None, ge=0, le=2, description="Planner sampling temperature (0-2); "
                                              "default: the provider's.")
    navigator_temperature: float | None = Field(None, ge=0, le=2, description="Navigator sampling temperature (0-2).")
    extractor_temperature: float | None = Field(None, ge=0, le=2, description="Extractor sampling temperature (0-2).")
    planner_top_p: float | None = Field(None, gt=0, le=1, description="Planner nucleus sampling top_p (0-1]; "
                                        "default: the provider's.")
    navigator_top_p: float | None = Field(None, gt=0, le=1, description="Navigator nucleus sampling top_p (0-1].")
    extractor_top_p: float | None = Field(None, gt=0, le=1, description="Extractor nucleus sampling top_p (0-1].")
    planner_reasoning_effort: ReasoningEffort | None = Field(
        None, description="Planner reasoning effort for reasoning models: low, medium or high.")
    navigator_reasoning_effort: ReasoningEffort | None = Field(
        None, description="Navigator reasoning effort: low, medium or high.")
    extractor_reasoning_effort: ReasoningEffort | None = Field(
        None, description="Extractor reasoning effort: low, medium or high.")
    planner_output: OutputMethod = Field(
        "tools", description="How the planner is asked for its JSON answer: tools (a forced tool call), json_schema "
        "(response_format json_schema), json_object (JSON mode, the schema in the prompt) or text (the schema in the "
        "prompt, JSON read from the text or a code fence). docs/agent.md lists what each server takes.")
    navigator_output: OutputMethod = Field("tools", description="How the navigator is asked for its JSON answer "
                                           "(as BROWSERD_PLANNER_OUTPUT).")
    extractor_output: OutputMethod = Field("tools", description="How the extractor is asked for its JSON answer "
                                           "(as BROWSERD_PLANNER_OUTPUT).")
    planner_max_tokens: int = Field(
        DEFAULT_MAX_TOKENS, ge=16, le=1_000_000, description="Most tokens one planner answer may have (sent as "
        "max_tokens; max_completion_tokens to OpenAI itself); an answer cut there fails its step as 'answer cut "
        "at max_tokens'. Also stops a model that never ends its answer.")
    navigator_max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=16, le=1_000_000,
                                      description="Most tokens one navigator answer may have.")
    extractor_max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=16, le=1_000_000,
                                      description="Most tokens one extractor answer may have.")
    step_timeout: float | None = Field(
        None, gt=0, description="Seconds one agent step (its model calls and actions) may take; a step past it "
        "fails (llm_timeout when a model call was running) and counts towards max_failures. Default: twice "
        "BROWSERD_LLM_TIMEOUT plus 60, at least 60.")

    max_tokens_total: int | None = Field(
        2_000_000, ge=1000, description="Most LLM tokens (input and output, every call, usable or not) one job may "
        "spend; a job past it ends llm_budget. A job's options.max_tokens_total may be lower, not higher. Empty: no "
        "limit.")
    max_llm_seconds: float | None = Field(
        None, gt=0, description="Most seconds one job may spend waiting for model answers; the call under way when "
        "they run out is stopped (its connection closed) and the job ends llm_budget. A job's "
        "options.max_llm_seconds may be lower, not higher. Default: no limit but the job's timeout.")

    # --- agent defaults (Nanobrowser's) ----------------------------------------------------
    max_steps: int = Field(100, ge=1, description="Agent steps before a job fails with max_steps.")
    planning_interval: int = Field(3, ge=1, description="The planner runs every this many steps.")
    max_failures: int = Field(3, ge=1, description="Consecutive failures before a job fails with max_failures.")
    max_actions_per_step: int = Field(10, ge=1, description="Actions the navigator may chain in one step.")
    max_input_tokens: int = Field(128_000, ge=1000, description="Token budget of the message history.")
    viewport_expansion: int = Field(
        0, ge=-1, description="Pixels beyond the viewport whose elements are offered; -1 offers the whole page."
    )
    allowed_domains: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Domains every job may visit (comma-separated; empty allows all)."
    )
    denied_domains: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Domains no job may visit (comma-separated)."
    )
    allow_private_networks: bool = Field(
        False,
        description="Let jobs' browsers reach private networks (loopback, RFC 1918, link-local and cloud "
        "metadata, CGNAT, IPv6 ULA/link-local), judged on the resolved address. Off: only what "
        "BROWSERD_ALLOWED_NETWORKS or a job's allowed_networks opens.",
    )
    allowed_networks: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Private networks every job may reach (comma-separated CIDRs, e.g. 10.1.0.0/16,127.0.0.1/32); "
        "also the most a job's or session's allowed_networks may name (unless BROWSERD_ALLOW_PRIVATE_NETWORKS).",
    )
    proxy_pools: dict[str, ProxyPool] = Field(
        default_factory=dict,
        description="Named pools of upstream proxies a job may name (proxy_pool), as JSON: "
        '{"name": {"proxies": [{"server": "socks5://host:1080", "username": "u", "password": "p", "label": "a"}], '
        '"max_rotations": 3, "cooldown": 60}}. A job keeps one proxy for its life and moves to another of the pool '
        "when a page answers 403/429 or the agent reports blocked_by_site (at most max_rotations times); a proxy that "
        "fails is left out for cooldown seconds. A tenant may name only the pools the operator grants it "
        "(tenant proxy_pools). Set it for the API and the workers.",
    )
    search_url: str = Field(
        "https://www.google.com/search?q={query}", description="URL template of the search action."
    )

    @field_validator("chrome_args", "cdp_urls", "allowed_domains", "denied_domains", "allowed_networks",
                     "cors_origins", "webhook_allowed_networks", "allowed_hosts", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("api_token", "webhook_secret", "secrets_key", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """``BROWSERD_API_TOKEN=`` means no token, never "an empty token that header-less requests match"."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("secrets_key")
    @classmethod
    def _fernet_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                raw = base64.urlsafe_b64decode(value.get_secret_value().encode())
            except (ValueError, binascii.Error):
                raw = b""
            if len(raw) != 32:
                raise ValueError("not a Fernet key: 32 bytes in url-safe base64 (44 characters)")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if origin == "*":
                raise ValueError("'*' would let every web page drive the API; list the origins")
            if not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port], no path)")
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return parse_hosts(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("cdp_urls")
    @classmethod
    def _cdp_urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(("ws://", "wss://", "http://", "https://")):
                raise ValueError(f"{url!r} is not a ws:// or http://host:port endpoint")
        return value

    @field_validator("proxy_pools")
    @classmethod
    def _pools(cls, value: dict[str, ProxyPool]) -> dict[str, ProxyPool]:
        return check_pool_names(value)

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        """Entries kept in their one spelling (``config.hosts``), as a job's are."""
        return normalise_entries(value)

    @field_validator("allowed_networks", "webhook_allowed_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return parse_networks(value)

    @field_validator("artifacts_url")
    @classmethod
    def _artifacts_url(cls, value: str) -> str:
        text = value.strip() or default_artifacts_url()
        if text.rstrip("/") in ("", "file:"):
            raise ValueError(f"give an fsspec URL such as file://{SYSTEM_ARTIFACTS} or s3://bucket/prefix")
        return text.rstrip("/")

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str | None) -> str | None:
        """``localhost:8000`` would be read as a URL of scheme ``localhost``: a configuration mistake,
        told as one, not as an API that cannot be reached."""
        if value is not None and not value.strip().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:8000)")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_redis_url(value)
            except ValueError as exc:
                raise ValueError(f"{mask_url(value)!r} {exc}") from None
        return value

    @field_validator("llm_provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        """Only the form is checked here (the API process must not import langchain); workers load it."""
        value = value.strip()
        if not PROVIDER_PATH.match(value):
            raise ValueError(f"{value!r} is not an import path module:Class (e.g. langchain_openai:ChatOpenAI)")
        return value

    @field_validator("search_url")
    @classmethod
    def _search_url(cls, value: str) -> str:
        if "{query}" not in value:
            raise ValueError("must contain the placeholder {query}")
        return value

    def model_for(self, role: Role) -> str:
        """The model a role uses: its own override, else the shared one."""
        return getattr(self, f"{role}_model") or self.llm_model

    def model_params(self, role: Role) -> dict[str, Any]:
        """The sampling parameters set for a role (unset ones are left to the provider)."""
        values = {name: getattr(self, f"{role}_{name}") for name in MODEL_PARAMS}
        return {name: value for name, value in values.items() if value is not None}

    def output_method(self, role: Role) -> OutputMethod:
        return getattr(self, f"{role}_output")

    def max_tokens(self, role: Role) -> int:
        """A role's output cap: always set, since a model that never ends its answer must be stopped."""
        return getattr(self, f"{role}_max_tokens")

    def pool_browser_count(self) -> int:
        """Browsers in each process's pool: the ones listed in BROWSERD_CDP_URLS, else BROWSERD_POOL_BROWSERS,
        else (0) one per BROWSERD_POOL_JOBS_PER_BROWSER jobs of the concurrency, rounded up. Why more than
        one: a browser relays every CDP message of its jobs on its one main thread, which 32 jobs stepping
        together saturate long before the worker or the machine (bench.queue)."""
        if self.cdp_urls:
            return len(self.cdp_urls)
        return self.pool_browsers or math.ceil(self.worker_concurrency / self.pool_jobs_per_browser)

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets replaced by asterisks: the secret fields, and
        the passwords and secret-looking query parameters inside URL values (``config.masking``)."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = MASK if value.get_secret_value() else ""
            elif name == "proxy_pools":
                value = describe_pools(value)  # names and labels: a pool's credentials are never shown
            elif value is not None and not isinstance(value, (str, int, float, bool, list)):
                value = str(value)
            if isinstance(value, str):
                value = mask_url(value)
            elif isinstance(value, list):
                value = [mask_url(str(item)) for item in value]
            out[name] = value
        return out


def env_name(field: str) -> str:
    """The environment variable that sets a field."""
    if field == "openai_api_key":
        return "OPENAI_API_KEY"
    return ENV_PREFIX + field.upper()


def load_settings(**overrides: Any) -> Settings:
    """Build settings, turning a validation error into one message per bad variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            given = err.get("input")
            given = mask_url(given) if isinstance(given, str) else given  # a URL's password is never shown
            if field == "proxy_pools" and not isinstance(given, (int, float)):
                given = "(hidden: it may hold a proxy's credentials)"
            lines.append(f"{env_name(field)}={given!r}: {error_message(err)}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()


def settings_table() -> str:
    """The configuration table of the docs (docs/reference/configuration.md, written by
    ``python -m docs.gen``), generated so that it cannot drift from the code."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, list):
            default = ",".join(default)
        shown = "" if default in (None, "") else f"`{default}`"
        rows.append(f"| `{env_name(name)}` | {shown} | {field.description or ''} |")
    return "\n".join(rows)
