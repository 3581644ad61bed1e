"""What a job produces: its result, its steps and their actions, its files, and each run's record.

Shared by the agent (which fills them), the store (which keeps them as JSON in the job record),
the API and the client (which show them). Pure pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from workers.jobs.model.locators import Locator
from workers.jobs.model.status import FailureCategory, JobStatus


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


class Verification(BaseModel):
    """How browserd checked a model's claim that the task is done (workers/agent/validator.py):
    a success is accepted only when what the run recorded shows it, not on the model's word."""

    accepted: bool
    checks: list[str] = Field(default_factory=list, description="The checks the claim passed, in order: "
                              "answer_given, not_boilerplate, no_open_steps, evidence_seen, figures_seen, "
                              "direct_answer, answer_on_first_page, actions_ran, data_extracted, answer_on_page.")
    reason: str | None = Field(None, description="Why the claim was refused (told to the model), when it was.")
    rejections: int = Field(0, description="Claims of this run refused before this one.")


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
    verification: Verification | None = Field(None, description="The check of the done claimed at this step.")


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
    cost_usd: float | None = Field(
        None, description="What the run's LLM calls cost, in USD (the price table: BROWSERD_LLM_PRICES); 0 for a run "
        "that asked no model; null where no cost was measured (a result recorded before costs were).")
    unpriced_models: list[str] = Field(
        default_factory=list, description="Models the run called that have no price: their calls are not in cost_usd.")
    verification: Verification | None = Field(
        None, description="Why an agent's success was accepted (or its last claim refused): the checks it passed.")
    reused_from: str | None = Field(
        None, description="A scheduled run's page unchanged since the last run: the job whose extraction (data, "
        "final answer) was reused, with no model call (incremental runs).")
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class EncodedResult:
    """A result and its JSON, made once: the size the result limits measure is the text the record
    stores, not a second serialization of the same result. Valid for that very object: whoever
    replaces the result (``result is not encoded.result``) serializes the new one."""

    result: JobResult
    json: str

    @classmethod
    def of(cls, result: JobResult) -> EncodedResult:
        return cls(result, result.model_dump_json())


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
