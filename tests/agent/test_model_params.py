"""Per-role sampling parameters and the provider import path, against the real ChatOpenAI client
and the scripted endpoint (what each role's request carries is read from the server's log)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import ConfigError, load_settings
from tests.agent.scripted import EXTRACTOR, NAVIGATOR, PLANNER, act, plan, run
from tests.support.jobs import llms_of
from tests.support.llm_server import Reply
from workers.agent import LLMProviderError, provider_class
from workers.agent.openai_chat import DirectChatOpenAI
from workers.jobs.model.spec import AgentOptions, ModelParams
from workers.jobs.model.status import JobStatus
from workers.runtime import check_provider

SAMPLING = ("temperature", "top_p", "reasoning_effort")


def sent(request: dict) -> dict:
    return {k: request[k] for k in SAMPLING if k in request}


async def test_each_role_gets_its_parameters_settings_under_the_job(pool, site, llm):
    settings = load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120,
                             planner_temperature=0.1, planner_top_p=0.5, navigator_temperature=0.9,
                             extractor_reasoning_effort="low")
    llm.add(PLANNER, plan(), plan(done=True, final_answer="3 products"))
    llm.add(NAVIGATOR, act({"extract_content": {"goal": "products"}}), act({"done": {"text": "x"}}))
    llm.add(EXTRACTOR, Reply.tool({"items": []}))
    options = {"model_params": {"navigator": {"temperature": 0.2, "reasoning_effort": "high"},
                                "extractor": {"top_p": 0.3}}}
    result, _, _ = await run(pool, settings, task="List the products", start_url=site.url("agent/catalog.html"),
                             options=options)
    assert result.status == JobStatus.succeeded, result.error
    assert {str(sent(r)) for r in llm.requests_for(PLANNER)} == {str({"temperature": 0.1, "top_p": 0.5})}
    assert sent(llm.requests_for(NAVIGATOR)[0]) == {"temperature": 0.2, "reasoning_effort": "high"}
    assert sent(llm.requests_for(EXTRACTOR)[0]) == {"top_p": 0.3, "reasoning_effort": "low"}


async def test_unset_parameters_are_not_sent(pool, site, llm, settings):
    llm.add(PLANNER, plan(done=True, final_answer="ok"))
    result, _, _ = await run(pool, settings, task="Look", start_url=site.url("agent/catalog.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert sent(llm.requests_for(PLANNER)[0]) == {}


@pytest.mark.parametrize(("params", "field"), [
    ({"temperature": 2.5}, "temperature"), ({"temperature": -0.1}, "temperature"), ({"top_p": 0}, "top_p"),
    ({"top_p": 1.5}, "top_p"), ({"reasoning_effort": "max"}, "reasoning_effort"), ({"seed": 1}, "seed"),
])
def test_job_parameters_are_validated(params, field):
    with pytest.raises(ValidationError, match=field):
        ModelParams(**params)
    with pytest.raises(ValidationError, match=f"model_params.navigator.{field}"):
        AgentOptions(model_params={"navigator": params})


@pytest.mark.parametrize(("name", "value", "env"), [
    ("navigator_temperature", 5, "BROWSERD_NAVIGATOR_TEMPERATURE"),
    ("planner_top_p", 0, "BROWSERD_PLANNER_TOP_P"),
    ("extractor_reasoning_effort", "huge", "BROWSERD_EXTRACTOR_REASONING_EFFORT"),
    ("llm_provider", "langchain_anthropic.ChatAnthropic", "BROWSERD_LLM_PROVIDER"),
    ("llm_provider", "a b:C", "BROWSERD_LLM_PROVIDER"),
])
def test_bad_settings_name_the_variable(name, value, env):
    with pytest.raises(ConfigError, match=env):
        load_settings(**{name: value})


async def test_an_explicit_provider_path_loads_the_class(llm):
    from langchain_openai import ChatOpenAI

    settings = load_settings(llm_base_url=llm.base_url, openai_api_key="k", llm_provider="langchain_openai:ChatOpenAI",
                             navigator_top_p=0.25)
    llms = llms_of(settings)
    # ChatOpenAI itself is built as its pass-through subclass (workers/agent/openai_chat.py: the same requests)
    assert type(llms.navigator) is DirectChatOpenAI and isinstance(llms.navigator, ChatOpenAI)
    assert llms.navigator.top_p == 0.25
    assert llms.planner is not llms.navigator  # other parameters: a model of its own
    assert provider_class("langchain_openai:ChatOpenAI") is ChatOpenAI
    check_provider(settings)


@pytest.mark.parametrize(("path", "says"), [
    ("no_such_module_xyz:ChatX", "module 'no_such_module_xyz' cannot be imported"),
    ("langchain_openai:ChatNothing", "has no 'ChatNothing'"),
    ("json:JSONDecoder", "not a langchain chat model"),
])
def test_a_bad_provider_path_fails_at_start_naming_it(path, says):
    settings = load_settings(llm_provider=path, openai_api_key="k")
    with pytest.raises(ConfigError, match=f"BROWSERD_LLM_PROVIDER='{path}'.*{says}"):
        check_provider(settings)  # what a worker runs before it takes jobs
    with pytest.raises(LLMProviderError, match=says):
        llms_of(settings)


def test_a_parameter_the_provider_does_not_take_is_an_error_not_ignored(llm):
    # the class is only inspected: browserd refuses before building any model of it
    settings = load_settings(llm_provider="langchain_core.language_models.fake_chat_models:FakeListChatModel",
                             planner_reasoning_effort="high", llm_base_url=llm.base_url)
    with pytest.raises(LLMProviderError, match="FakeListChatModel takes no base_url, reasoning_effort"):
        llms_of(settings)
