"""What a user submits: a job spec and its option models, and a follow-up task.

``JobSpec`` is validated by the API (the request body), stored in the job record, read back by
the worker and shown by the client, so a job means the same thing everywhere it travels. Pure
pydantic: importing it loads neither Redis, Celery nor the agent.
"""

from __future__ import annotations

import base64
import binascii
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

from config import OutputMethod, ReasoningEffort
from config.proxy_pools import PoolName
from workers.jobs.model.browsing import (
    Geolocation,
    ProxySettings,
    ResourceKind,
    SecretName,
    UserAgent,
    Viewport,
    check_block,
    check_domains,
    check_headers,
    check_locale,
    check_timezone,
)
from workers.jobs.artifacts.names import SAFE_NAME
from workers.jobs.ids import ID_SHAPE
from workers.jobs.model.bounds import Networks, Seconds, Steps
from workers.jobs.model.status import Priority
from workers.jobs.politeness.options import PolitenessOptions

STORED_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""The name a user gives a stored thing (an auth profile, a recipe): letters, digits, ``_.-``, at
most 64; it is a hash field or part of a key, and a path segment of the API."""
ProfileName = Annotated[str, StringConstraints(pattern=STORED_NAME)]
RecipeName = Annotated[str, StringConstraints(pattern=STORED_NAME)]
MAX_SECRETS = 20
MAX_SECRET_DOMAINS = 64  # domains one credential set (or a job's own secrets) may be typed on
MIN_SECRET, MAX_SECRET = 4, 4096


class ModelParams(BaseModel):
    """Sampling parameters of one role's model; None keeps the setting (``BROWSERD_<ROLE>_<PARAM>``)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    reasoning_effort: ReasoningEffort | None = Field(None, description="low, medium or high (reasoning models).")
    max_tokens: int | None = Field(None, ge=16, le=1_000_000, description="Most tokens one answer may have; at "
                                   "most BROWSERD_<ROLE>_MAX_TOKENS (a higher value is lowered to it).")
    output: OutputMethod | None = Field(None, description="How the answer is asked for: tools, json_schema, "
                                        "json_object or text (BROWSERD_<ROLE>_OUTPUT).")

    def set(self) -> dict[str, Any]:
        """Only the parameters this job sets for the model itself (the output method is not one)."""
        return self.model_dump(exclude_none=True, exclude={"output"})


class RoleModelParams(BaseModel):
    """``ModelParams`` per role."""

    model_config = ConfigDict(extra="forbid")

    planner: ModelParams = Field(default_factory=ModelParams)
    navigator: ModelParams = Field(default_factory=ModelParams)
    extractor: ModelParams = Field(default_factory=ModelParams)


class AgentOptions(BaseModel):
    """Nanobrowser's executor options, with its defaults (None: take the setting's value)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: Steps | None = None
    planning_interval: int | None = Field(None, ge=1, le=100)
    max_failures: int | None = Field(None, ge=1, le=100)
    max_actions_per_step: int | None = Field(None, ge=1, le=50)
    max_input_tokens: int | None = Field(None, ge=1000)
    max_tokens_total: int | None = Field(
        None, ge=1000, le=1_000_000_000, description="Most LLM tokens (in and out, every call) this job may spend "
        "before it ends llm_budget; at most BROWSERD_MAX_TOKENS_TOTAL.")
    max_llm_seconds: float | None = Field(
        None, gt=0, le=86_400, description="Most seconds this job may wait for model answers; the call under way "
        "is stopped and the job ends llm_budget. At most BROWSERD_MAX_LLM_SECONDS where that is set.")
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
        default_factory=RoleModelParams, description="temperature, top_p, reasoning_effort, max_tokens and output per role, e.g. "
        '{"navigator": {"temperature": 0.2}}; unset ones take the settings.')
    keep_session: float | None = Field(
        None, gt=0, le=86_400, description="Keep the browser context and the agent's history this many idle "
        "seconds after the task ends, for follow-up tasks (POST /v1/jobs/{id}/follow-up); at most "
        "BROWSERD_KEEP_SESSION_MAX. Agent jobs only.")
    allow_human: bool = Field(
        False, description="Let the agent ask a human for help (the request_human action: a captcha, a second "
        "factor, a confirmation the task requires): the job waits as waiting_for_human, keeping its browser, until "
        "someone hands it back (POST /v1/jobs/{id}/hand-back or /input) or human_timeout passes. Off by default: a "
        "job nobody watches (a batch's) ends such pages honestly (blocked_by_site, login_required).")
    human_timeout: float | None = Field(
        None, gt=0, le=86_400, description="Seconds the job may wait for humans in all (BROWSERD_HUMAN_TIMEOUT "
        "when unset; at most BROWSERD_HUMAN_TIMEOUT_MAX), on top of its own timeout; with allow_human only.")
    dialogs: Literal["accept", "dismiss"] = Field(
        "dismiss", description="How JavaScript dialogs (alert, confirm, prompt) are answered; prompts get empty text."
    )


ScreenshotPolicy = Literal["every_step", "on_failure", "off"]
KeepPolicy = Literal["always", "on_failure", "off"]


def check_secret_values(value: dict[str, SecretStr]) -> dict[str, SecretStr]:
    """A job's or a credential set's values: each ``MIN_SECRET`` to ``MAX_SECRET`` characters, the
    bound of the scrubber (``workers.jobs.secrets.scrubber``)."""
    for name, secret in value.items():
        if not MIN_SECRET <= len(secret.get_secret_value()) <= MAX_SECRET:
            raise ValueError(f"secret {name!r}: {MIN_SECRET} to {MAX_SECRET} characters (a shorter value could "
                             "not be told apart from ordinary text, so it could not be kept out of prompts)")
    return value


MASKED = "**********"  # how pydantic writes a SecretStr: a stored spec's seeds read back (the sealed ones are real)
TOTP_SEED_MIN, TOTP_SEED_MAX = 16, 128  # base32 characters of a TOTP seed: 80 bits (RFC 4226's minimum) and up


def check_totp_seeds(value: dict[str, SecretStr]) -> dict[str, SecretStr]:
    """Each seed as authenticator apps take it: base32 (spaces and case ignored), ``TOTP_SEED_MIN`` to
    ``TOTP_SEED_MAX`` characters; kept normalised (upper case, no spaces or padding)."""
    checked = {}
    for name, secret in value.items():
        raw = secret.get_secret_value()
        if raw == MASKED:  # a stored spec read back: its seeds are in sealed_totp
            checked[name] = secret
            continue
        seed = "".join(raw.split()).upper().rstrip("=")
        if not TOTP_SEED_MIN <= len(seed) <= TOTP_SEED_MAX:
            raise ValueError(f"totp {name!r}: a base32 seed of {TOTP_SEED_MIN} to {TOTP_SEED_MAX} characters")
        try:
            base64.b32decode(seed + "=" * (-len(seed) % 8))
        except (binascii.Error, ValueError):
            raise ValueError(f"totp {name!r}: not a base32 seed (letters A-Z and digits 2-7)") from None
        checked[name] = SecretStr(seed)
    return checked


MAX_INPUT_FILES = 10  # input files of one job
MAX_INPUT_FILE_BYTES = 2 << 20  # one input file sent in the submission (decoded): 2 MiB
MAX_INPUT_BYTES = 8 << 20  # all of a job's input files sent in the submission together (decoded)
INPUT_FILE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._ -]{0,127}$"  # a plain file name: never a path, never '..'


class ArtifactRef(BaseModel):
    """An artifact of another job of the same tenant (a download, a result): ``GET
    /v1/jobs/{job}/artifacts`` lists their names."""

    model_config = ConfigDict(extra="forbid")

    job: str = Field(pattern=f"^{ID_SHAPE}$", description="The id of the job that kept the artifact.")
    name: str = Field(pattern=SAFE_NAME.pattern, description="The artifact's name in that job's folder.")


class InputFile(BaseModel):
    """A file the job may upload (the ``upload_file`` action names it by ``name``): its content in
    the submission (base64), or an artifact of another job of the same tenant."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=INPUT_FILE_NAME, description="The file's name, as the page receives it and as the "
                      "model names it in upload_file (letters, digits, '.', '_', '-', spaces; no path).")
    content_base64: str | None = Field(None, description=f"The file's bytes in base64: at most "
                                       f"{MAX_INPUT_FILE_BYTES >> 20} MiB decoded.")
    artifact: ArtifactRef | None = Field(None, description="Or: an artifact of another job of the same tenant "
                                         "(at most the artifact store's download cap).")

    @model_validator(mode="after")
    def _one_source(self) -> InputFile:
        if (self.content_base64 is None) == (self.artifact is None):
            raise ValueError("content_base64: give exactly one of content_base64 or artifact")
        if ".." in self.name:
            raise ValueError("name: a plain file name ('..' is not allowed)")
        if self.content_base64 is not None and decoded_size(self.content_base64) > MAX_INPUT_FILE_BYTES:
            raise ValueError(f"content_base64: more than {MAX_INPUT_FILE_BYTES >> 20} MiB decoded")
        return self

    def content(self) -> bytes:
        """The bytes sent in the submission (only when ``content_base64`` is set)."""
        assert self.content_base64 is not None
        return base64.b64decode(self.content_base64, validate=True)


def decoded_size(text: str) -> int:
    """The bytes a base64 text decodes to; ValueError when it is not base64."""
    try:
        return len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        raise ValueError("content_base64: not base64") from None


class ArtifactOptions(BaseModel):
    """What a job keeps in the artifact store (``BROWSERD_ARTIFACTS_URL``). By default a failed job
    keeps everything it can show about what it saw, and a succeeded one nothing but its downloads."""

    model_config = ConfigDict(extra="forbid")

    screenshots: ScreenshotPolicy = Field(
        "on_failure", description="A JPEG per step: every_step (stored and linked as each step ends), "
        "on_failure (one of the live page when the job does not succeed, kept as its last step's), or off.")
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


MAX_LABELS = 20  # labels on one job
MAX_LABEL_KEY, MAX_LABEL_VALUE = 64, 256  # characters


def check_labels(value: dict[str, str], reserved: int = 0) -> dict[str, str]:
    """A job's labels: at most ``MAX_LABELS`` (less ``reserved``, the ones browserd adds, such as a
    crawl's id), keys 1-64 characters, values at most 256. One rule for every spec that labels jobs."""
    if len(value) > MAX_LABELS - reserved:
        raise ValueError(f"at most {MAX_LABELS - reserved} labels")
    for key, val in value.items():
        if not key or len(key) > MAX_LABEL_KEY or len(val) > MAX_LABEL_VALUE:
            raise ValueError(f"label {key!r}: keys are 1-{MAX_LABEL_KEY} characters, values at most {MAX_LABEL_VALUE}")
    return value


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
    output_schema: dict[str, Any] | None = Field(
        None, description="JSON schema the job's data must satisfy; bounded in size, depth, $ref (inside the schema, "
        "never recursive) and anyOf/oneOf/allOf branches, each refused with 422 naming its limit (docs/jobs.md).")
    allowed_domains: list[str] = Field(default_factory=list, description="Only these domains (and subdomains).")
    denied_domains: list[str] = Field(default_factory=list, description="Never these domains (and subdomains).")
    allowed_networks: Networks = Field(
        default_factory=list,
        description="Private networks this job may reach (CIDRs, e.g. '10.1.0.0/16', '127.0.0.1/32'), inside what "
        "the operator allows (BROWSERD_ALLOWED_NETWORKS, a tenant's allowed_networks): more is refused with 422.",
    )
    options: AgentOptions = Field(default_factory=AgentOptions)
    politeness: PolitenessOptions = Field(
        default_factory=PolitenessOptions,
        description="Per-domain limits for this job: stricter than the settings, or looser where the operator "
        "allows it (BROWSERD_POLITENESS_ALLOW_LOOSER).")
    artifacts: ArtifactOptions = Field(default_factory=ArtifactOptions)
    models: ModelOverrides = Field(default_factory=ModelOverrides)
    timeout: Seconds | None = Field(None, description="Wall-clock limit in seconds.")
    max_cost_usd: float | None = Field(
        None, gt=0, le=100_000, description="Most USD the job's LLM calls may cost (BROWSERD_LLM_PRICES): once its "
        "cost reaches it, the job stops before its next LLM call, failed with category budget_exceeded. Calls to an "
        "unpriced model count nothing toward it.")
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form key/value tags for filtering.")
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)
    webhook_url: HttpUrl | None = Field(None, description="POSTed the result when the job finishes.")
    secrets: dict[SecretName, SecretStr] = Field(
        default_factory=dict, max_length=MAX_SECRETS,
        description="Values the job may type without the model seeing them: the model writes <secret>name</secret> "
        "in input_text and the browser gets the value. Stored encrypted (BROWSERD_SECRETS_KEY); shown masked.",
    )
    secret_domains: list[str] = Field(
        default_factory=list, max_length=MAX_SECRET_DOMAINS,
        description="Where the job's own secrets and totp codes may be typed: a page (top frame or iframe) whose "
        "host is one of these domains or under it, checked at the moment of typing; elsewhere the job fails with "
        "category secret_domain_refused. Empty: anywhere. A credential set's secrets follow the set's own domains.")
    credentials: SecretName | None = Field(
        None, description="Name of a stored credential set (POST /v1/credentials) whose secrets the job may use.")
    sealed_secrets: str | None = Field(
        None, description="Set by browserd: the job's secrets, encrypted. Not accepted in a submission.")
    totp: dict[SecretName, SecretStr] = Field(
        default_factory=dict, max_length=MAX_SECRETS,
        description="Second factors: base32 seeds of time-based one-time passwords (RFC 6238, what authenticator "
        "apps are given), by name. The model writes <secret>name</secret> in input_text and the browser gets the "
        "current 6-digit code; neither the seed nor a code reaches the model, records or logs. Stored encrypted "
        "(BROWSERD_SECRETS_KEY); shown masked.")
    sealed_totp: str | None = Field(
        None, description="Set by browserd: the job's TOTP seeds, encrypted. Not accepted in a submission.")
    input_files: list[InputFile] = Field(
        default_factory=list, max_length=MAX_INPUT_FILES,
        description="Files the job may upload into the pages' file inputs (the upload_file action names them); "
        f"no other file can be uploaded. Sent in the submission: at most {MAX_INPUT_BYTES >> 20} MiB together.")
    profile: ProfileName | None = Field(
        None, description="Auth profile (POST /v1/profiles) whose cookies and localStorage the job starts with.")
    save_profile: ProfileName | None = Field(
        None, description="Auth profile the job's cookies and localStorage are saved to when it succeeds "
        "(created or replaced; last writer wins, each save bumps the profile's version).")
    proxy: ProxySettings | None = Field(
        None, description="The job's own upstream proxy; browserd's egress policy still applies to every destination.")
    proxy_pool: PoolName | None = Field(
        None, description="Name of one of the operator's proxy pools (BROWSERD_PROXY_POOLS) instead of a 'proxy': the "
        "job keeps one of its proxies and moves to another when a page answers 403/429 or the agent reports "
        "blocked_by_site. A tenant may name only the pools the operator grants it.")
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
        names = [f.name for f in self.input_files]
        if len(set(names)) != len(names):
            raise ValueError("input_files: each file's name once (the model names them by it)")
        if sum(decoded_size(f.content_base64) for f in self.input_files if f.content_base64) > MAX_INPUT_BYTES:
            raise ValueError(f"input_files: more than {MAX_INPUT_BYTES >> 20} MiB together")
        if self.proxy is not None and self.proxy_pool is not None:
            raise ValueError("give the job's own 'proxy' or a 'proxy_pool', not both")
        if both := sorted(set(self.secrets) & set(self.totp)):
            raise ValueError(f"totp: {', '.join(both)} named in 'secrets' too: one name, one value")
        if self.secret_domains and not self.secrets and not self.totp and self.sealed_secrets is None \
                and self.sealed_totp is None:
            raise ValueError("secret_domains binds the job's own 'secrets' (or 'totp'): give them with it (a credential "
                             "set's domains are the set's own)")
        return self

    @field_validator("allowed_domains", "denied_domains", "secret_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        """Entries kept in their one spelling (``config.hosts``): ``EVIL.example.`` is stored
        ``evil.example``, ``bücher.example`` its punycode, ``2130706433`` 127.0.0.1."""
        return check_domains(value)

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

    @field_validator("secrets")
    @classmethod
    def _secret_values(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return check_secret_values(value)

    @field_validator("totp")
    @classmethod
    def _totp_seeds(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return check_totp_seeds(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return check_labels(value)


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


class InputRequest(BaseModel):
    """The body of ``POST /v1/jobs/{id}/input``: a value for a running job (a code sent by SMS or e-mail)."""

    model_config = ConfigDict(extra="forbid")

    name: SecretName = Field(description="The placeholder's name: the agent types it as <secret>name</secret>.")
    value: SecretStr = Field(description=f"{MIN_SECRET} to {MAX_SECRET} characters; sealed with "
                             "BROWSERD_SECRETS_KEY, never shown to the model, scrubbed from records and logs.")

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: SecretStr) -> SecretStr:
        return check_secret_values({"value": value})["value"]
