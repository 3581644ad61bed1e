"""The LLM layer: chat models by role, structured answers, retries, usage and latency.

Any langchain chat model works. Each role's answers are asked for by its output method
(``BROWSERD_<ROLE>_OUTPUT``): one forced tool call whose parameters are the wanted JSON schema
(``tools``), a JSON-schema response format (``json_schema``), JSON mode (``json_object``) or plain
text (``text``); for the last two the schema is written into the system prompt. Whatever the
method, a model that answers in text (code fences, prose around the JSON) is parsed tolerantly.
An answer that stopped at the role's ``max_tokens`` is unusable and said to be cut
(``LLMTruncated``), also when the server calls it finished but its JSON ends mid-way at the cap.

Rate limits, 5xx and connection errors are retried with backoff, but no retry starts that the
step's deadline would cut (``workers.agent.deadline``); 401/403/400 end the job at once, since
retrying cannot fix them. Every answer served is charged, usable or not: an unusable one's
``LLMOutputError`` carries its reply (tokens, seconds).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from config import ROLES, OutputMethod, Role
from workers.agent.allowance import allowance_of
from workers.agent.cancel import CancelToken
from workers.agent.config import LlmConfig
from workers.agent.errors import (
    AgentError,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMForbiddenError,
    LLMOutputError,
    LLMTruncated,
)
from workers.agent.deadline import current_clock
from workers.agent.provider import build
from workers.agent.telemetry import SILENT, LlmCall, Telemetry
from workers.jobs.model.spec import ModelOverrides, RoleModelParams
from workers.jobs.model.status import LlmOutcome

log = logging.getLogger("browserd.agent.llm")


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for retryable failures; a server's Retry-After wins when it is shorter than ``max_delay``."""

    attempts: int = 4
    base_delay: float = 1.0
    max_delay: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        return min(self.base_delay * 2**attempt, self.max_delay) * (0.5 + random.random() / 2)


@dataclass
class Llms:
    """The chat model of each role; planner and extractor default to the navigator's."""

    navigator: BaseChatModel
    planner: BaseChatModel | None = None
    extractor: BaseChatModel | None = None
    validator: BaseChatModel | None = None  # asked about a claim of done the checks passed (None: not asked)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    outputs: dict[str, OutputMethod] = field(default_factory=dict)  # a role's output method; unset: tools

    def for_role(self, role: Role) -> BaseChatModel:
        return getattr(self, role) or self.navigator

    def output(self, role: Role) -> OutputMethod:
        return self.outputs.get(role, "tools")

    @classmethod
    def from_config(cls, llm: LlmConfig, overrides: ModelOverrides | None = None,
                    params: RoleModelParams | None = None) -> Llms:
        """A model per role from the provider (BROWSERD_LLM_PROVIDER), the role's model name (the
        job's, else the settings'), its parameters and its output method (the job's, each over the
        settings'; a job's max_tokens at most the setting's)."""
        overrides, params = overrides or ModelOverrides(), params or RoleModelParams()
        models: dict[str, BaseChatModel] = {}
        built: dict[str, BaseChatModel] = {}
        outputs: dict[str, OutputMethod] = {}
        for role in ROLES:
            configured, own = llm.role(role), getattr(params, role)
            name = getattr(overrides, role) or configured.name
            sampling = {**configured.params, **own.set()}
            # a job may lower its output cap, never raise it past the operator's: the cap is the runaway stop
            sampling["max_tokens"] = min(sampling.get("max_tokens", configured.max_tokens), configured.max_tokens)
            key = json.dumps([name, sampling], sort_keys=True)
            if key not in built:
                built[key] = build(llm, name, sampling)
            models[role] = built[key]
            outputs[role] = own.output or configured.output
        validator = None
        if llm.validator:  # with the planner's parameters and output method
            planner = llm.role("planner")
            validator = build(llm, llm.validator, {**planner.params, "max_tokens": planner.max_tokens})
        return cls(**models, validator=validator, outputs=outputs)


def model_name(model: BaseChatModel) -> str:
    return str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)


@dataclass
class LLMReply:
    """One structured answer and what it cost."""

    data: dict[str, Any]
    raw: str
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 1
    error: LLMOutputError | None = None  # why the answer cannot be used (raised by ``call_structured``)


T = TypeVar("T")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A model's answer as the caller reads it (``output``: a plan, the navigator's actions) and the
    reply it came in (its tokens and seconds, charged to the step)."""

    output: T
    reply: LLMReply


@dataclass(frozen=True)
class Classified:
    """What a failed call means: its typed ``error``, whether retrying may help, and how long the
    server asked to wait first (its Retry-After)."""

    error: LLMError
    retryable: bool
    retry_after: float | None = None


@dataclass
class ToolSpec:
    """The JSON schema the answer must fill, offered to the model as one function."""

    name: str
    description: str
    parameters: dict[str, Any]

    def as_tool(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


async def call_structured(
    model: BaseChatModel,
    messages: list[BaseMessage],
    tool: ToolSpec,
    *,
    role: Role,
    cancel: CancelToken | None = None,
    retry: RetryPolicy | None = None,
    telemetry: Telemetry = SILENT,
    method: OutputMethod = "tools",
) -> LLMReply:
    """Ask ``model`` for an answer shaped by ``tool`` the ``method`` way; retries what is retryable
    (within the step's deadline), raises typed errors."""
    cancel = cancel or CancelToken()
    retry = retry or RetryPolicy()
    bound, messages = _bind(model, tool, method), shaped(messages, tool, method)
    started = time.monotonic()
    name = model_name(model)
    clock = current_clock()
    budget = allowance_of()
    for attempt in range(retry.attempts):
        cancel.check(f"before the {role} call")
        budget.check(role)
        attempt_started = time.monotonic()
        if clock is not None:  # left set if the step's limit cancels the call: the step says which call it was
            clock.role, clock.model = role, name
        watch = budget.timeout()  # the job's LLM seconds left: past them the call is cancelled (connection closed)
        try:
            async with watch:
                message = await cancel.run(bound.ainvoke(messages), f"during the {role} call")
        except openai.LengthFinishReasonError as exc:  # with a response_format the client refuses a cut answer
            reply = _cut_reply(exc.completion, role, output_cap(model))
        except AgentError:
            budget.spend(0, time.monotonic() - attempt_started)
            telemetry.llm_call(LlmCall(name, LlmOutcome.cancelled, time.monotonic() - attempt_started))
            raise
        except Exception as exc:
            budget.spend(0, time.monotonic() - attempt_started)
            if watch.expired():
                telemetry.llm_call(LlmCall(name, LlmOutcome.cancelled, time.monotonic() - attempt_started))
                raise budget.ran_out(role) from exc
            failed = classify(exc, role=role, model=name)
            telemetry.llm_call(LlmCall(name, outcome(failed.error, exc), time.monotonic() - attempt_started))
            if not failed.retryable:
                raise failed.error from exc
            if attempt + 1 >= retry.attempts:  # the job's message says the retries were spent, and how many
                failed.error.args = (f"{failed.error} (no answer after {retry.attempts} attempts)",)
                raise failed.error from exc
            wait = retry.delay(attempt, failed.retry_after)
            if clock is not None and clock.remaining() <= wait:
                raise clock.expired(str(failed.error)) from exc  # a retry the step's limit would cut
            log.warning("%s call failed (%s); retrying in %.1fs", role, failed.error, wait)
            await cancel.sleep(wait, f"before retrying the {role} call")
            continue
        else:
            reply = _reply(message, role, output_cap(model))
        finally:
            if clock is not None and not _cancelling():
                clock.role = clock.model = ""
        reply.seconds, reply.attempts = time.monotonic() - started, attempt + 1
        budget.spend(reply.input_tokens + reply.output_tokens, time.monotonic() - attempt_started)
        telemetry.llm_call(LlmCall(name, LlmOutcome.ok, time.monotonic() - attempt_started, reply.input_tokens,
                                   reply.output_tokens))
        if reply.error is not None:
            raise charged(reply.error, reply)
        return reply
    raise AssertionError("unreachable")


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def charged(error: LLMOutputError, reply: LLMReply) -> LLMOutputError:
    """``error`` (an unusable answer) carrying the reply it came in, so the caller charges its cost."""
    if error.reply is None:
        error.reply = reply
    return error


ANSWER_FORMAT = ('Answer with one JSON object, the "{name}" answer ({description}), and nothing else. '
                 "It must match this JSON schema:\n{schema}")


def shaped(messages: list[BaseMessage], tool: ToolSpec, method: OutputMethod) -> list[BaseMessage]:
    """The messages as sent: for an output method without a tool, the schema the answer must match is
    written at the end of the system prompt (a user or assistant turn more would break the turn order
    some chat templates insist on)."""
    if method == "tools":
        return messages
    note = ANSWER_FORMAT.format(name=tool.name, description=tool.description.rstrip("."),
                                schema=json.dumps(tool.parameters, ensure_ascii=False))
    first = messages[0] if messages else None
    if isinstance(first, SystemMessage) and isinstance(first.content, str):
        return [SystemMessage(f"{first.content}\n\n{note}"), *messages[1:]]
    return [SystemMessage(note), *messages]


def _bind(model: BaseChatModel, tool: ToolSpec, method: OutputMethod) -> Any:
    if method == "json_schema":
        return model.bind(response_format={"type": "json_schema", "json_schema": {
            "name": tool.name, "description": tool.description, "schema": tool.parameters, "strict": False}})
    if method == "json_object":
        return model.bind(response_format={"type": "json_object"})
    if method == "text":
        return model
    try:
        return model.bind_tools([tool.as_tool()], tool_choice=tool.name)
    except (NotImplementedError, TypeError, ValueError):
        return model  # a model without tool calling answers in text; parsed tolerantly


def output_cap(model: BaseChatModel) -> int | None:
    """The model's ``max_tokens`` (its own field, or sent in ``extra_body`` to a compatible server)."""
    cap = getattr(model, "max_tokens", None) or (getattr(model, "extra_body", None) or {}).get("max_tokens")
    return cap if isinstance(cap, int) else None


def _reply(message: Any, role: str, cap: int | None) -> LLMReply:
    """The reply with its usage, whatever the answer; ``error`` says why its answer is unusable."""
    usage = getattr(message, "usage_metadata", None) or {}
    reply = LLMReply(data={}, raw="", input_tokens=int(usage.get("input_tokens") or 0),
                     output_tokens=int(usage.get("output_tokens") or 0))
    finish = (getattr(message, "response_metadata", None) or {}).get("finish_reason")
    try:
        reply.raw, reply.data = _extract(message)
    except LLMOutputError as exc:
        reply.raw = exc.raw
        at_cap = cap is not None and reply.output_tokens >= cap  # some servers call a cut answer finished
        reply.error = LLMTruncated(role, cap, raw=exc.raw) if finish == "length" or at_cap else exc
        return reply
    if finish == "length":
        reply.error = LLMTruncated(role, cap, raw=reply.raw)
    return reply


def _cut_reply(completion: Any, role: str, cap: int | None) -> LLMReply:
    """The reply of an answer the openai client itself refused as cut (``LengthFinishReasonError``)."""
    usage = getattr(completion, "usage", None)
    choices = getattr(completion, "choices", None) or []
    raw = str(getattr(choices[0].message, "content", "") or "") if choices else ""
    return LLMReply(data={}, raw=raw, input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                    error=LLMTruncated(role, cap, raw=raw))


def _extract(message: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            return json.dumps(call["args"]), dict(call["args"])
        for bad in message.invalid_tool_calls:
            text = bad.get("args") or ""
            return text, parse_json_text(text)
        text = message.text if isinstance(message.text, str) else str(message.content)
    else:
        text = str(getattr(message, "content", message))
    return text, parse_json_text(text)


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_json_text(text: str) -> dict[str, Any]:
    """The JSON object in a text answer: bare, fenced, or with prose before or after it."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (m.start() for m in re.finditer(r"\{", candidate)):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    snippet = text.strip().replace("\n", " ")[:200]
    raise LLMOutputError(f"the answer holds no JSON object: {snippet!r}", raw=text)


def classify(exc: BaseException, *, role: str, model: str) -> Classified:
    """The typed error for a failed call, whether retrying may help, and the server's Retry-After."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    status = status if isinstance(status, int) else None
    message = _short(exc)
    kinds: dict[int, type[LLMError]] = {401: LLMAuthError, 403: LLMForbiddenError, 400: LLMBadRequestError,
                                        404: LLMBadRequestError, 422: LLMBadRequestError}
    if status in kinds:
        return Classified(kinds[status](message, role=role, model=model, status=status), retryable=False)
    retryable = (status is not None and (status == 429 or status >= 500)) or isinstance(
        exc, (openai.APIConnectionError, openai.APITimeoutError, httpx.TransportError, asyncio.TimeoutError)
    )
    return Classified(LLMError(message, role=role, model=model, status=status), retryable, _retry_after(exc))


def outcome(failure: LLMError, exc: BaseException) -> LlmOutcome:
    """How a failed request ended, for the telemetry."""
    if isinstance(failure, (LLMAuthError, LLMForbiddenError)):
        return LlmOutcome.auth
    if isinstance(failure, LLMBadRequestError):
        return LlmOutcome.bad_request
    if failure.status == 429:
        return LlmOutcome.rate_limited
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError, httpx.TimeoutException)):
        return LlmOutcome.timeout
    return LlmOutcome.error


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _short(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        detail = body.get("message") or body.get("error", {})
        if isinstance(detail, dict):
            detail = detail.get("message")
        if detail:
            return str(detail)[:300]
    return (str(exc) or type(exc).__name__)[:300]
