"""``AgentConfig``: what the agent reads of ``config.Settings``, made once per process.

The settings object holds every knob of every browserd process (the API's port, the pool's
browsers, the reconciler's interval, ...). The agent needs about thirty of them, read deep inside
its actions; reading them from the whole object hid which ones it depends on and let any action
reach any knob. ``AgentConfig.from_settings`` picks them out once, grouped by who reads them (the
models, the loop's defaults, the actions, downloads, screenshots, the egress rule), in the manner
of ``cdp.PoolConfig.from_settings``. The pipeline builds one per process (``Services.agent``), and
every job's ``JobInputs``, ``JobContext`` and action reads that.

Secrets stay ``SecretStr`` here (the LLM key, the key that opens sealed proxy passwords): they are
opened only where they are used, and a config printed or logged shows asterisks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from config import DEFAULT_MAX_TOKENS, ROLES, OutputMethod, Role, Settings


@dataclass(frozen=True)
class RoleModel:
    """One role's model from the settings: its name, the sampling parameters set for it, how its
    answers are asked for and the most tokens one answer may have."""

    name: str
    params: dict[str, Any]
    output: OutputMethod = "tools"
    max_tokens: int = DEFAULT_MAX_TOKENS


@dataclass(frozen=True)
class LlmConfig:
    """Which chat models the agent builds and how it reaches them (``workers.agent.provider``)."""

    provider: str  # module:Class of the langchain chat model (BROWSERD_LLM_PROVIDER)
    timeout: float  # seconds one call may take
    step_timeout: float | None  # seconds one agent step may take; None: derived from ``timeout``
    base_url: str | None  # an OpenAI-compatible endpoint; None: the provider's own
    api_key: SecretStr | None  # for ChatOpenAI and its subclasses only
    roles: dict[Role, RoleModel]  # planner, navigator, extractor
    max_tokens_total: int | None = None  # a job's LLM budget (``workers.agent.allowance``); None: none
    max_llm_seconds: float | None = None
    validator: str | None = None  # the model asked about a claim of done the checks passed; None: none

    def role(self, role: Role) -> RoleModel:
        return self.roles[role]


@dataclass(frozen=True)
class AgentDefaults:
    """The loop's limits when the job's options leave them unset (Nanobrowser's defaults)."""

    max_steps: int
    planning_interval: int
    max_failures: int
    max_actions_per_step: int
    max_input_tokens: int
    viewport_expansion: int  # pixels beyond the viewport whose elements are offered; -1: the whole page


@dataclass(frozen=True)
class ActionLimits:
    """What the actions read: how much page text one extraction reads, where a search goes."""

    max_extract_chars: int
    search_url: str  # a URL template with {query}


@dataclass(frozen=True)
class DownloadQuota:
    """How much one job may download (a job's ``cdp.DownloadLimits`` is made from this)."""

    max_bytes: int
    max_files: int  # 0 refuses every download


@dataclass(frozen=True)
class ScreenshotLimits:
    """Step screenshots kept as artifacts: their JPEG quality and largest size."""

    quality: int
    max_bytes: int


@dataclass(frozen=True)
class GlobalEgress:
    """The settings' half of every job's (and session's) egress rule; the job adds its own lists."""

    allowed_domains: tuple[str, ...]
    denied_domains: tuple[str, ...]
    allow_private_networks: bool
    allowed_networks: tuple[str, ...]

    @classmethod
    def from_settings(cls, s: Settings) -> GlobalEgress:
        return cls(allowed_domains=tuple(s.allowed_domains), denied_domains=tuple(s.denied_domains),
                   allow_private_networks=s.allow_private_networks, allowed_networks=tuple(s.allowed_networks))


@dataclass(frozen=True)
class AgentConfig:
    """Everything the agent reads of the settings, grouped; built by ``from_settings`` only."""

    llm: LlmConfig
    defaults: AgentDefaults
    actions: ActionLimits
    downloads: DownloadQuota
    screenshots: ScreenshotLimits
    egress: GlobalEgress
    pause_max_seconds: float  # longest a paused job holds its lease
    secrets_key: SecretStr | None  # opens a job's sealed proxy password (``sealing.proxy_password``)

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentConfig:
        s = settings
        return cls(
            llm=LlmConfig(
                provider=s.llm_provider,
                timeout=s.llm_timeout,
                step_timeout=s.step_timeout,
                base_url=str(s.llm_base_url).rstrip("/") if s.llm_base_url else None,
                api_key=s.openai_api_key,
                roles={role: RoleModel(s.model_for(role), s.model_params(role), s.output_method(role),
                                       s.max_tokens(role)) for role in ROLES},
                max_tokens_total=s.max_tokens_total,
                max_llm_seconds=s.max_llm_seconds,
                validator=s.validator_model,
            ),
            defaults=AgentDefaults(
                max_steps=s.max_steps,
                planning_interval=s.planning_interval,
                max_failures=s.max_failures,
                max_actions_per_step=s.max_actions_per_step,
                max_input_tokens=s.max_input_tokens,
                viewport_expansion=s.viewport_expansion,
            ),
            actions=ActionLimits(max_extract_chars=s.max_extract_chars, search_url=s.search_url),
            downloads=DownloadQuota(max_bytes=s.download_max_mb * 1024 * 1024, max_files=s.download_max_files),
            screenshots=ScreenshotLimits(quality=s.artifact_screenshot_quality,
                                         max_bytes=s.artifact_screenshot_max_kb * 1024),
            egress=GlobalEgress.from_settings(s),
            pause_max_seconds=s.pause_max_seconds,
            secrets_key=s.secrets_key,
        )
