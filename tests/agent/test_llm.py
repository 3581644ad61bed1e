"""The LLM layer against the real ChatOpenAI client and a scripted OpenAI-compatible endpoint."""

from __future__ import annotations

import time

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from prometheus_client import REGISTRY

from tests.support.jobs import llms_of
from tests.support.llm_server import Reply
from workers.agent import (
    Cancelled,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMForbiddenError,
    LLMOutputError,
    RetryPolicy,
)
from workers.agent.cancel import CancelToken
from workers.agent.llm import ToolSpec, call_structured, parse_json_text
from workers.agent.messages import MessageManager
from workers.instrument import PrometheusTelemetry

TOOL = ToolSpec("Answer", "an answer", {"type": "object", "properties": {"n": {"type": "integer"}}})
MESSAGES = [SystemMessage("system"), HumanMessage("question")]
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05)


async def ask(settings, **kw):
    return await call_structured(llms_of(settings).navigator, MESSAGES, TOOL, role="navigator",
                                 retry=kw.pop("retry", FAST), **kw)


@pytest.mark.parametrize("text", [
    '{"n": 1}',
    'Here you go:\n```json\n{"n": 1}\n```\nAnything else?',
    '```\n{"n": 1}\n```',
    'I think {"n": 1} is right. {"other": 2}',
    'Sure! {"n": 1}\nThat was easy.',
])
def test_text_answers_are_parsed_tolerantly(text):
    assert parse_json_text(text) == {"n": 1}


def test_text_without_json_is_an_output_error():
    with pytest.raises(LLMOutputError, match="holds no JSON object"):
        parse_json_text("I clicked the button for you.")


async def test_tool_call_answer_with_usage(llm, settings):
    llm.add("Answer", Reply.tool({"n": 7}))
    reply = await ask(settings)
    assert reply.data == {"n": 7}
    assert (reply.input_tokens, reply.output_tokens, reply.attempts) == (100, 20, 1)
    request = llm.requests[0]
    assert request["tool_choice"]["function"]["name"] == "Answer"
    assert request["model"] == "gpt-4o-mini"


async def test_text_answer_in_code_fence(llm, settings):
    llm.add("Answer", Reply.text('```json\n{"n": 3}\n```'))
    assert (await ask(settings)).data == {"n": 3}


async def test_rate_limit_then_success(llm, settings):
    llm.add("Answer", Reply.error(429, "slow down", retry_after=0), Reply.error(503), Reply.tool({"n": 1}))
    model = settings.model_for("navigator")
    before = {k: _llm_sample(model, k) for k in ("rate_limited", "error", "ok")}
    tokens_before = REGISTRY.get_sample_value("browserd_llm_tokens_total", {"model": model, "direction": "input"}) or 0
    reply = await ask(settings, telemetry=PrometheusTelemetry())  # as a worker wires the agent
    assert reply.data == {"n": 1} and reply.attempts == 3
    assert len(llm.requests) == 3
    # Each request, retried or not, is one sample of browserd_llm_requests_total.
    assert {k: _llm_sample(model, k) - v for k, v in before.items()} == {"rate_limited": 1, "error": 1, "ok": 1}
    tokens = REGISTRY.get_sample_value("browserd_llm_tokens_total", {"model": model, "direction": "input"})
    assert tokens - tokens_before == reply.input_tokens > 0


def _llm_sample(model: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("browserd_llm_requests_total", {"model": model, "outcome": outcome}) or 0.0


async def test_server_errors_give_up_after_the_retries(llm, settings):
    llm.add("Answer", *[Reply.error(500, "boom")] * 5)
    with pytest.raises(LLMError) as err:
        await ask(settings)
    assert err.value.status == 500 and "boom" in str(err.value)
    assert len(llm.requests) == FAST.attempts
    assert str(err.value).endswith(f"boom (no answer after {FAST.attempts} attempts)")


@pytest.mark.parametrize("status, error", [(401, LLMAuthError), (403, LLMForbiddenError), (400, LLMBadRequestError)])
async def test_auth_and_bad_request_are_not_retried(llm, settings, status, error):
    llm.add("Answer", Reply.error(status, "nope"), Reply.tool({"n": 1}))
    with pytest.raises(error) as err:
        await ask(settings)
    assert err.value.status == status
    assert len(llm.requests) == 1


async def test_cancel_aborts_an_in_flight_call(llm, settings):
    llm.add("Answer", Reply.tool({"n": 1}, delay=30))
    started = time.monotonic()
    with pytest.raises(Cancelled):  # cancelled once the request is at the server (not at a fixed time:
        await ask(settings, cancel=CancelToken(lambda: bool(llm.requests)))  # under load it came later)
    assert len(llm.requests) == 1
    assert time.monotonic() - started < 25  # the 30 s answer was not waited for


def test_missing_key_is_an_auth_error():
    from config import load_settings

    with pytest.raises(LLMAuthError, match="no API key"):
        llms_of(load_settings(openai_api_key=None, _env_file=None))


def test_per_role_models(llm):
    from config import load_settings

    s = load_settings(llm_base_url=llm.base_url, openai_api_key="k", planner_model="big", extractor_model="small")
    llms = llms_of(s)
    assert (llms.navigator.model_name, llms.planner.model_name, llms.extractor.model_name) == (
        "gpt-4o-mini", "big", "small")


def test_history_stays_under_the_token_budget_oldest_steps_first():
    manager = MessageManager("system " * 100, "find the price", max_input_tokens=3000)
    initial = manager.total_tokens
    for step in range(1, 30):
        manager.add_state(f"state {step} " + "x" * 2000)
        manager.reduce_last_state(f"[State at step {step}] url: http://x/{step}")
        manager.add_model_output({"current_state": {}, "action": [{"wait": {"seconds": step}}]})
    manager.add_state("current " + "y" * 5000)
    messages = manager.messages()
    assert manager.total_tokens <= 3000
    text = "\n".join(str(m.content) for m in messages)
    assert "[State at step 29]" in text and "[State at step 1]" not in text
    assert messages[0].content.startswith("system") and "find the price" in messages[1].content
    assert "current yyy" in str(messages[-1].content)  # the current state survives, trimmed if need be
    assert initial < manager.total_tokens


def test_a_huge_state_is_trimmed_to_fit():
    manager = MessageManager("system", "task", max_input_tokens=2000)
    manager.add_state("z" * 50_000)
    manager.messages()
    assert manager.total_tokens <= 2000
    assert "cut to fit the token budget" in str(manager.entries[-1].message.content)
