"""``langchain_openai.ChatOpenAI`` sending the same request without the OpenAI client re-walking it.

The OpenAI client checks every request body against its typed parameters before sending it
(``openai._utils.maybe_transform``: a recursive walk, in Python, of every message and content part
against the ``TypedDict`` it is annotated with). For the chat messages langchain-openai hands it,
the walk changes nothing (they are plain JSON built by langchain; no field of a message has an
alias or a format to apply), but it costs in proportion to the history: with 31 messages, about
9.5 of the 13 ms of CPU a call took (docs/development.md), the largest part of the worker's own CPU
at 32 concurrent agent jobs, where every step of every job waits for the worker's one event loop
(issue 27, ``bench.queue``).

So the messages go in ``extra_body``, which the client merges into the request body as given
(its documented purpose: properties sent as they are; the merge replaces the empty ``messages``
the typed walk saw). The request on the wire is the same JSON, with the same keys in the same
order. Everything else (model, sampling, ``response_format``, tools, the structured-output
``parse`` path, retries, errors) is langchain-openai's and the client's, unchanged.

``provider.build`` uses ``DirectChatOpenAI`` when ``BROWSERD_LLM_PROVIDER`` names ``ChatOpenAI`` itself
(the default); a subclass of it the user names is used as it is.
"""

from __future__ import annotations

from typing import Any

import langchain_openai
from langchain_core.language_models import LanguageModelInput


class DirectChatOpenAI(langchain_openai.ChatOpenAI):
    """The chat completions request of ``langchain_openai.ChatOpenAI``, its messages passed through."""

    def _get_request_payload(self, input_: LanguageModelInput, *, stop: list[str] | None = None,
                             **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        messages = payload.get("messages")
        if isinstance(messages, list) and messages:  # the chat completions API (not the responses API's input)
            payload["extra_body"] = {**(payload.get("extra_body") or {}), "messages": messages}
            payload["messages"] = []
        return payload
