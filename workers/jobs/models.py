"""The job's data at every boundary: what a user submits and what a job produces.

These models are shared by the API (validation of bodies), the Redis job record, the Celery task
and the agent, so that a job means the same thing everywhere it travels. Pure pydantic: importing
them loads neither Redis, Celery nor the agent.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from config import ReasoningEffort
from config.networks import parse_networks
from workers.jobs.browsing import (
    Geolocation,
    ProxySettings,
    ResourceKind,
    SecretName,
    UserAgent,
    Viewport,
    check_block,
    check_headers,
    check_locale,
    check_timezone,
)
from workers.jobs.locators import Locator
from workers.jobs.politeness import PolitenessOptions

"""A secret's (or credential set's) name: the model writes it in ``<secret>name</secret>``."""
STORED_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""The name a user gives a stored thing (an auth profile, a recipe): letters, digits, ``_.-``, at
most 64; it is a hash field or part of a key, and a path segment of the API."""
ProfileName = Annotated[str, StringConstraints(pattern=STORED_NAME)]
RecipeName = Annotated[str, StringConstraints(pattern=STORED_NAME)]
MAX_SECRETS = 20
MIN_SECRET, MAX_SECRET = 4, 4096


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    retrying = "retrying"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled})
"""States a job never leaves; the Lua scripts (``is_final``) spell the same three."""


class FailureCategory(StrEnum):
    """Why a job failed; bounded, so it can be a metrics label."""

    max_steps = "max_steps"
    max_failures = "max_failures"
    llm_auth = "llm_auth"
    llm_error = "llm_error"
    llm_bad_request = "llm_bad_request"
    url_blocked = "url_blocked"
    browser_crash = "browser_crash"
    timeout = "timeout"
    worker_lost = "worker_lost"
    invalid_output = "invalid_output"
    action_error = "action_error"
    resource_limit = "resource_limit"
    internal = "internal"
    incomplete = "incomplete"  # the agent gave up or ran out of steps; its partial findings are in the result
    login_required = "login_required"  # the site asks to sign in and the task gives no credentials
    refused = "refused"  # the task is harmful or disallowed
    blocked_by_site = "blocked_by_site"  # a captcha or bot wall stopped the agent
    proxy_error = "proxy_error"  # the job's own proxy was unreachable, refused its credentials or spoke nonsense
    # what the job names does not exist (any more): the tenant's mistake, not browserd's
    profile_missing = "profile_missing"  # the auth profile it starts from
    credentials_missing = "credentials_missing"  # the credential set it types from
    recipe_unavailable = "recipe_unavailable"  # the recipe it replays: deleted, marked broken, or changed


class Outcome(StrEnum):
    """How an agent says a task ended: ``complete``, or why not (each reason is a failure category)."""

    complete = "complete"
    incomplete = "incomplete"
    login_required = "login_required"
    refused = "refused"
    blocked_by_site = "blocked_by_site"

    @property
    def category(self) -> FailureCategory | None:
        """The job's failure category, or None when the task is complete."""
        return None if self is Outcome.complete else FailureCategory(self.value)


class Priority(StrEnum):
    high = "high"
    normal = "normal"
    low = "low"


class ModelParams(BaseModel):
    """Sampling parameters of one role's model; None keeps the setting (``BROWSERD_<ROLE>_<PARAM>``)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    reasoning_effort: ReasoningEffort | None = Field(None, description="low, medium or high (reasoning models).")

    def set(self) -> dict[str, Any]:
        """Only the parameters this job sets."""
        return self.model_dump(exclude_none=True)


class RoleModelParams(BaseModel):
    """``ModelParams`` per role."""

    model_config = ConfigDict(extra="forbid")

    planner: ModelParams = Field(default_factory=ModelParams)
    navigator: ModelParams = Field(default_factory=ModelParams)
    extractor: ModelParams = Field(default_factory=ModelParams)


class AgentOptions(BaseModel):
    """Nanobrowser's executor options, with its defaults (None: take the setting's value)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(None, ge=1, le=1000)
    planning_interval: int | None = Field(None, ge=1, le=100)
    max_failures: int | None = Field(None, ge=1, le=100)
    max_actions_per_step: int | None = Field(None, ge=1, le=50)
    max_input_tokens: int | None = Field(None, ge=1000)
    strategy: Literal["planner_navigator", "rolling_horizon"] = Field(
        "planner_navigator", description="planner_navigator: Nanobrowser's loop; rolling_horizon: the planner "
        "plans the next `horizon` actions, run one per step, replanning at the end, on a failure or a page change.")
    horizon: int = Field(3, ge=1, le=20, description="Actions per rolling-horizon plan.")
    memory_interval: int = Field(10, ge=0, le=1000, description="Summarise past steps every N steps (0: never).")
    use_vision: bool = Field(
        False, description="Send the navigator a JPEG of the viewport with each indexed element's box and index "
        "drawn on it (the page is not changed); only the latest screenshot stays in the history.")
    use_vision_for_planner: bool = Field(False, description="Send the planner the same screenshot.")
    viewport_expansion: int | None = Field(None, ge=-1)
    model_params: RoleModelParams = Field(
        default_factory=RoleModelParams, description="temperature, top_p and reasoning_effort per role, e.g. "
        '{"navigator": {"temperature": 0.2}}; unset ones take the settings.')
    keep_session: float | None = Field(
        None, gt=0, le=86_400, description="Keep the browser context and the agent's history this many idle "
        "seconds after the task ends, for follow-up tasks (POST /v1/jobs/{id}/follow-up); at most "
        "BROWSERD_KEEP_SESSION_MAX. Agent jobs only.")
    dialogs: Literal["accept", "dismiss"] = Field(
        "dismiss", description="How JavaScript dialogs (alert, confirm, prompt) are answered; prompts get empty text."
    )


ScreenshotPolicy = Literal["every_step", "on_failure", "off"]
KeepPolicy = Literal["always", "on_failure", "off"]


class ArtifactOptions(BaseModel):
    """What a job keeps in the artifact store (``BROWSERD_ARTIFACTS_URL``). By default a failed job
    keeps everything it can show about what it saw, and a succeeded one nothing but its downloads."""

    model_config = ConfigDict(extra="forbid")

    screenshots: ScreenshotPolicy = Field(
        "on_failure", description="A JPEG per step: every_step (stored and linked as each step ends), "
        "on_failure (taken each step, stored only if the job does not succeed), or off.")
    page: KeepPolicy = Field(
        "on_failure", description="The final page's HTML (page.html) and its text as markdown (page.md): "
        "always, on_failure, off.")
    logs: KeepPolicy = Field(
        "on_failure", description="The pages' console log (console.jsonl) and failed requests (network.jsonl): "
        "always, on_failure, off.")


class ModelOverrides(BaseModel):
    """Per-job model names; None keeps the configured model of that role."""

    model_config = ConfigDict(extra="forbid")

    planner: str | None = None
    navigator: str | None = None
    extractor: str | None = None


class JobSpec(BaseModel):
    """One job: an agent task in words, a script of actions run with no LLM, or a saved recipe replayed."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = Field(None, min_length=1, max_length=20_000, description="What the agent should do.")
    script: list[dict[str, Any]] | None = Field(
        None, description='Actions to run instead of an agent, e.g. [{"go_to_url": {"url": "…"}}].'
    )
    recipe: RecipeName | None = Field(
        None, description="Replay this saved recipe (POST /v1/jobs/{id}/recipe) with no LLM; when a step no longer "
        "matches the page, the agent takes over from there and the recipe is updated.")
    params: dict[str, str] = Field(default_factory=dict, description="The recipe's parameters, by name.")
    llm_extraction: bool = Field(False, description="Let a recipe's extract_content steps call the extractor model "
                                 "(a recipe job, or an automatic one: auto_recipe).")
    heal: bool = Field(True, description="When a recipe step no longer matches the page, let the agent finish the "
                       "job (and update the recipe); false: the job fails there, with no LLM call.")
    auto_recipe: RecipeName | None = Field(
        None, description="Automatic mode: the first successful run of this task saves recipe N; later jobs whose "
        "task matches its template replay it.")
    start_url: HttpUrl | None = Field(None, description="Page opened before the first step.")
    output_schema: dict[str, Any] | None = Field(None, description="JSON schema the job's data must satisfy.")
    allowed_domains: list[str] = Field(default_factory=list, description="Only these domains (and subdomains).")
    denied_domains: list[str] = Field(default_factory=list, description="Never these domains (and subdomains).")
    allowed_networks: list[str] = Field(
        default_factory=list, max_length=64,
        description="Private networks this job may reach (CIDRs, e.g. '10.1.0.0/16', '127.0.0.1/32'); "
        "private networks are closed unless opened here or by the settings.",
    )
    options: AgentOptions = Field(default_factory=AgentOptions)
    politeness: PolitenessOptions = Field(
        default_factory=PolitenessOptions,
        description="Per-domain limits for this job: stricter than the settings, or looser where the operator "
        "allows it (BROWSERD_POLITENESS_ALLOW_LOOSER).")
    artifacts: ArtifactOptions = Field(default_factory=ArtifactOptions)
    models: ModelOverrides = Field(default_factory=ModelOverrides)
    timeout: float | None = Field(None, gt=0, le=86_400, description="Wall-clock limit in seconds.")
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form key/value tags for filtering.")
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)
    webhook_url: HttpUrl | None = Field(None, description="POSTed the result when the job finishes.")
    secrets: dict[SecretName, SecretStr] = Field(
        default_factory=dict, max_length=MAX_SECRETS,
        description="Values the job may type without the model seeing them: the model writes <secret>name</secret> "
        "in input_text and the browser gets the value. Stored encrypted (BROWSERD_SECRETS_KEY); shown masked.",
    )
    credentials: SecretName | None = Field(
        None, description="Name of a stored credential set (POST /v1/credentials) whose secrets the job may use.")
    sealed_secrets: str | None = Field(
        None, description="Set by browserd: the job's secrets, encrypted. Not accepted in a submission.")
    profile: ProfileName | None = Field(
        None, description="Auth profile (POST /v1/profiles) whose cookies and localStorage the job starts with.")
    save_profile: ProfileName | None = Field(
        None, description="Auth profile the job's cookies and localStorage are saved to when it succeeds "
        "(created or replaced; last writer wins, each save bumps the profile's version).")
    proxy: ProxySettings | None = Field(
        None, description="The job's own upstream proxy; browserd's egress policy still applies to every destination.")
    extra_http_headers: dict[str, str] = Field(
        default_factory=dict, description="Headers sent with every request of the job's pages (shown in the record).")
    user_agent: UserAgent | None = Field(None, description="The User-Agent header and navigator.userAgent.")
    locale: str | None = Field(None, description="BCP 47 locale, e.g. 'de-DE': Accept-Language, Intl, navigator.language.")
    timezone: str | None = Field(None, description="IANA time zone of the pages' clocks, e.g. 'Europe/Berlin'.")
    viewport: Viewport | None = Field(None, description="Window size in CSS pixels.")
    geolocation: Geolocation | None = Field(None, description="Position reported to pages (permission granted).")
    block_resources: list[ResourceKind] = Field(
        default_factory=list, description="Resource kinds never loaded, to save bandwidth: images, media, fonts.")

    @model_validator(mode="after")
    def _task_or_script(self) -> JobSpec:
        if sum(x is not None for x in (self.task, self.script, self.recipe)) != 1:
            raise ValueError("give exactly one of 'task' (an agent job), 'script' (a list of actions) or 'recipe' "
                             "(a saved recipe's name)")
        if self.params and self.recipe is None:
            raise ValueError("'params' are a recipe's parameters: give them with 'recipe'")
        if not self.heal and self.recipe is None:
            raise ValueError("'heal' applies to a recipe job: give it with 'recipe'")
        if self.llm_extraction and self.recipe is None and self.auto_recipe is None:
            raise ValueError("'llm_extraction' applies to a recipe job: give it with 'recipe' or 'auto_recipe'")
        if self.recipe is not None and self.options.strategy != "planner_navigator":
            raise ValueError("options.strategy: a recipe job heals with the planner_navigator loop (the recipe's "
                             "remaining steps are its first plan); leave strategy out")
        if self.auto_recipe is not None and self.task is None:
            raise ValueError("'auto_recipe' records an agent task: give it with 'task'")
        if self.script is not None and not self.script:
            raise ValueError("'script' must hold at least one action")
        return self

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        cleaned = []
        for domain in value:
            d = domain.strip().lower().lstrip(".")
            if not d or "/" in d or " " in d:
                raise ValueError(f"{domain!r} is not a domain name (give e.g. 'example.com', no scheme or path)")
            cleaned.append(d)
        return cleaned

    @field_validator("extra_http_headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        return check_headers(value)

    @field_validator("locale")
    @classmethod
    def _locale(cls, value: str | None) -> str | None:
        return check_locale(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        return check_timezone(value)

    @field_validator("block_resources")
    @classmethod
    def _block(cls, value: list[str]) -> list[str]:
        return check_block(value)

    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return parse_networks(value)

    @field_validator("secrets")
    @classmethod
    def _secret_values(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, secret in value.items():
            if not MIN_SECRET <= len(secret.get_secret_value()) <= MAX_SECRET:
                raise ValueError(f"secret {name!r}: {MIN_SECRET} to {MAX_SECRET} characters (a shorter value could "
                                 "not be told apart from ordinary text, so it could not be kept out of prompts)")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 20:
            raise ValueError("at most 20 labels")
        for key, val in value.items():
            if not key or len(key) > 64 or len(val) > 256:
                raise ValueError(f"label {key!r}: keys are 1-64 characters, values at most 256")
        return value


class ActionRecord(BaseModel):
    """One action the agent (or the script) ran, and what came of it."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    index: int | None = Field(None, description="the index of the element acted on (also when a locator named it)")
    locator: Locator | None = Field(None, description="what the element acted on is, to find it again on a new page")
    ok: bool = True
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0


class DialogRecord(BaseModel):
    """A JavaScript dialog a page opened and how it was answered; ``message`` is untrusted page text."""

    type: str
    message: str
    url: str
    accepted: bool


class DownloadRecord(BaseModel):
    """A file the job downloaded (``mime`` is guessed from the name)."""

    name: str
    size: int
    mime: str
    url: str
    artifact: str | None = Field(None, description="Where the API serves the file (/v1/jobs/{id}/artifacts/{name}).")


class ArtifactLink(BaseModel):
    """One file in a job's artifact folder; ``url`` is the API path that serves it."""

    name: str
    size: int
    content_type: str
    url: str
    run: int = Field(1, description="The run of the job that left it: 1, or a follow-up's number "
                     "(options.keep_session), whose files are named run-N-... (run-2-step-001.jpg).")


class NavigatorBrain(BaseModel):
    """What the navigator said of its step (its ``current_state``): model text that may quote the
    page, so it is untrusted; shown as text only, and scrubbed of the job's secrets like the step."""

    evaluation_previous_goal: str = Field("", description="How the model judged the previous step's goal.")
    memory: str = Field("", description="What the model keeps in mind for the task so far.")
    next_goal: str = Field("", description="What the model means to do with this step's actions.")


class StepRecord(BaseModel):
    """One executor step; also the payload of a step event in the job's stream."""

    step: int
    url: str | None = None
    actions: list[ActionRecord] = Field(default_factory=list)
    dom_seconds: float = 0.0
    llm_seconds: float = 0.0
    action_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    image_tokens: int = Field(0, description="Estimated share of input_tokens spent on screenshots (vision).")
    elements: int | None = None
    plan: dict[str, Any] | None = None
    brain: NavigatorBrain | None = Field(None, description="The navigator's evaluation, memory and next goal "
                                         "(agent steps the navigator answered; none for script, replayed or "
                                         "rolling-horizon steps).")
    dialogs: list[DialogRecord] = Field(default_factory=list)
    error: str | None = None
    screenshot: str | None = Field(None, description="API path of the screenshot taken at the end of this step.")
    replayed: bool = Field(False, description="Run from a recipe with no LLM (false: an agent or script step).")


class JobTotals(BaseModel):
    steps: int = 0
    actions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    image_tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0


class JobResult(BaseModel):
    """What a finished job produced."""

    status: JobStatus
    category: FailureCategory | None = None
    error: str | None = None
    final_answer: str | None = None
    data: Any = None
    steps: list[StepRecord] = Field(default_factory=list)
    downloads: list[DownloadRecord] = Field(default_factory=list)
    artifacts: list[ArtifactLink] = Field(default_factory=list, description="Files the job left in the artifact store.")
    result_artifact: str | None = Field(
        None, description="Set when final answer, data and steps were too large for the record "
        "(BROWSERD_ARTIFACT_INLINE_BYTES): the API path of result.json holding them; GET /v1/jobs/{id} fills them in.")
    totals: JobTotals = Field(default_factory=JobTotals)
    started_at: datetime | None = None
    finished_at: datetime | None = None


class SessionState(StrEnum):
    """Where a job's kept session (``options.keep_session``) stands."""

    kept = "kept"  # the worker holds the browser context and history, waiting for a follow-up
    closed = "closed"  # the idle time passed, the job was cancelled, or the browser could not be kept


class RunRecord(BaseModel):
    """One run of a job that keeps its session: the first task, then each follow-up, with its own result."""

    run: int = Field(description="1 for the job's own task, 2 for the first follow-up, ...")
    task: str
    state: JobStatus
    category: FailureCategory | None = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: JobResult | None = None


class FollowUpRequest(BaseModel):
    """The body of ``POST /v1/jobs/{id}/follow-up``."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, max_length=20_000, description="The next task, run in the same browser "
                      "context with the same history.")

    @field_validator("task")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value
