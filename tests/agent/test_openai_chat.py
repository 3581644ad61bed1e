"""``DirectChatOpenAI`` (the messages passed around the OpenAI client's typed walk) sends what
``langchain_openai.ChatOpenAI`` sends: the same JSON body, keys in the same order, on every path
the agent uses (a json_schema ``response_format``, which goes through the client's ``parse``; a
forced tool; json_object; plain text), with images, a tool-call history and a ``max_tokens``
in ``extra_body``; the answer reads back the same. Against the strict scripted endpoint."""

from __future__ import annotations

import json
from typing import Any

import langchain_openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from config import load_settings
from tests.support.llm_server import LLMServer, Reply
from workers.agent.openai_chat import DirectChatOpenAI
from workers.agent.config import AgentConfig
from workers.agent.provider import build

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
TOOL = {"type": "function", "function": {"name": "answer", "description": "Answer.", "parameters": SCHEMA}}
PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
         "RU5ErkJggg==")
HISTORY = [
    SystemMessage("You answer with the tool <answer>. Unicode: é ✓ \u2028 \"quotes\" </script>"),
    HumanMessage([{"type": "text", "text": "What is on the page?"}, {"type": "image_url", "image_url": {"url": PIXEL}}]),
    AIMessage("", tool_calls=[{"id": "call_1", "name": "answer", "args": {"answer": "a pixel"}}]),
    ToolMessage("ok", tool_call_id="call_1"),
    HumanMessage("And now? " * 50),
]
BINDINGS: dict[str, dict[str, Any]] = {
    "json_schema": {"response_format": {"type": "json_schema", "json_schema": {
        "name": "answer", "description": "Answer.", "schema": SCHEMA, "strict": False}}},
    "json_object": {"response_format": {"type": "json_object"}},
    "tool": {"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "answer"}}},
    "text": {},
}


def sent(cls: type[langchain_openai.ChatOpenAI], llm: LLMServer, binding: dict[str, Any], **extra: Any) -> tuple[str, Any]:
    model = cls(model="m", base_url=llm.base_url, api_key="test-key", max_retries=0, temperature=0.3, **extra)
    reply = model.bind(**binding).invoke(HISTORY)
    return json.dumps(llm.requests[-1]), reply


@pytest.mark.parametrize("name", list(BINDINGS))
@pytest.mark.parametrize("extra", [{}, {"extra_body": {"max_tokens": 77, "top_k": 5}}], ids=["plain", "extra_body"])
def test_the_same_body_is_sent_and_read_back(name: str, extra: dict[str, Any]) -> None:
    with LLMServer(strict=False) as llm:  # top_k is no standard field; the body is what is compared here
        answer = Reply.tool({"answer": "a pixel"}) if name in ("tool", "json_schema") else Reply.text('{"answer": "x"}')
        llm.add(None if name in ("json_object", "text") else "answer", answer, answer)
        theirs, their_reply = sent(langchain_openai.ChatOpenAI, llm, BINDINGS[name], **extra)
        ours, our_reply = sent(DirectChatOpenAI, llm, BINDINGS[name], **extra)
    assert ours == theirs  # the same JSON, keys in the same order
    assert json.loads(ours)["messages"][1]["content"][1]["image_url"]["url"] == PIXEL
    assert our_reply.content == their_reply.content
    assert [(c["name"], c["args"]) for c in our_reply.tool_calls] == [(c["name"], c["args"]) for c in their_reply.tool_calls]


class Mine(langchain_openai.ChatOpenAI):
    """A user's own subclass, named in BROWSERD_LLM_PROVIDER."""


@pytest.mark.parametrize(("provider", "built"), [("langchain_openai:ChatOpenAI", DirectChatOpenAI),
                                                 (f"{__name__}:Mine", Mine)])
def test_the_default_provider_builds_it_and_a_named_subclass_is_kept(provider: str, built: type) -> None:
    llm = AgentConfig.from_settings(load_settings(llm_base_url="http://127.0.0.1:9/v1", openai_api_key="k",
                                                  llm_provider=provider)).llm
    assert type(build(llm, "m", {})) is built
