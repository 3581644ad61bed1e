"""One settings object for every browserd process.

Everything is read from the environment (prefix ``BROWSERD_``) or an optional ``.env`` file, so the
API, the workers and the beat see the same configuration. A bad value fails at start with the
variable's name and what is allowed, instead of surfacing as a confusing error deep in a job.
"""

from __future__ import annotations

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

ENV_PREFIX = "BROWSERD_"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


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
    """Every knob of browserd, with its default. The README's configuration table mirrors this."""

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
    launch_timeout: float = Field(20.0, gt=0, description="Seconds a launched browser has to open its DevTools port.")
    cdp_timeout: float = Field(30.0, gt=0, description="Default timeout in seconds for one CDP command.")

    # --- pool ------------------------------------------------------------------------------
    pool_browsers: int = Field(1, ge=1, description="Browsers in each process's pool.")
    pool_warm: int = Field(2, ge=0, description="Ready contexts with a blank page kept per browser.")
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

    # --- Redis, queue, API -----------------------------------------------------------------
    redis_url: str | None = Field(
        None, description="Redis URL for job state and the Celery broker; the demo starts its own when unset."
    )
    api_host: str = Field("127.0.0.1", description="Address the HTTP API binds to.")
    api_port: int = Field(8080, ge=0, le=65535, description="Port of the HTTP API.")
    api_token: SecretStr | None = Field(None, description="Bearer token the API requires; unset disables auth.")
    webhook_secret: SecretStr | None = Field(
        None, description="Key of the HMAC-SHA256 signature on webhook POSTs (X-Browserd-Signature); unset sends them unsigned."
    )
    metrics_port: int = Field(
        9464, ge=0, le=65535, description="Port a worker serves its Prometheus metrics on; 0 picks a free port."
    )
    worker_concurrency: int = Field(4, ge=1, description="Jobs one worker process runs at once on its event loop.")
    result_ttl: int = Field(7 * 24 * 3600, ge=60, description="Seconds finished job records and results are kept.")
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

    # --- LLM -------------------------------------------------------------------------------
    llm_model: str = Field("gpt-4o-mini", description="Chat model for every agent role unless overridden.")
    llm_base_url: AnyHttpUrl | None = Field(None, description="OpenAI-compatible endpoint; default: OpenAI.")
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("BROWSERD_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="API key for the LLM endpoint (OPENAI_API_KEY also works).",
    )
    planner_model: str | None = Field(None, description="Model for the planner; default: llm_model.")
    navigator_model: str | None = Field(None, description="Model for the navigator; default: llm_model.")
    extractor_model: str | None = Field(None, description="Model for extract_content; default: llm_model.")
    llm_timeout: float = Field(120.0, gt=0, description="Seconds one LLM call may take.")

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
    search_url: str = Field(
        "https://www.google.com/search?q={query}", description="URL template of the search action."
    )

    @field_validator("chrome_args", "cdp_urls", "allowed_domains", "denied_domains", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split_list(value)

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

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"{value!r} is not a redis://, rediss:// or unix:// URL")
        return value

    @field_validator("search_url")
    @classmethod
    def _search_url(cls, value: str) -> str:
        if "{query}" not in value:
            raise ValueError("must contain the placeholder {query}")
        return value

    def model_for(self, role: Literal["planner", "navigator", "extractor"]) -> str:
        """The model a role uses: its own override, else the shared one."""
        return getattr(self, f"{role}_model") or self.llm_model

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets replaced by asterisks."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else ""
            elif value is not None and not isinstance(value, (str, int, float, bool, list)):
                value = str(value)
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
            lines.append(f"{env_name(field)}={given!r}: {err['msg']}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()


def settings_table() -> str:
    """The README's configuration table, generated so that it cannot drift from the code."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, list):
            default = ",".join(default)
        shown = "" if default in (None, "") else f"`{default}`"
        rows.append(f"| `{env_name(name)}` | {shown} | {field.description or ''} |")
    return "\n".join(rows)
