"""Which langchain chat model class builds the agent's models: ``BROWSERD_LLM_PROVIDER=module:Class``.

Any ``BaseChatModel`` subclass plugs in without code (``langchain_anthropic:ChatAnthropic``,
``langchain_google_genai:ChatGoogleGenerativeAI``, …). The constructor arguments browserd passes
are langchain's common names (``model``, ``base_url``, ``timeout``, ``max_retries``,
``temperature``, ``top_p``, ``reasoning_effort``, ``max_tokens``); one the class does not take is
left out when browserd merely prefers it (``timeout``, ``max_retries``, ``max_tokens``, which always
has a value) and is an error when the user asked for it (a base URL, a sampling parameter), so no
setting is silently ignored. ``ChatOpenAI`` itself (the default) is built as ``openai_chat.DirectChatOpenAI``,
which sends the same requests for less of the worker's CPU.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any

import langchain_openai
from langchain_core.language_models import BaseChatModel

from workers.agent.config import LlmConfig
from workers.agent.errors import LLMAuthError, LLMProviderError
from workers.agent.openai_chat import DirectChatOpenAI

DEFAULT_PROVIDER = "langchain_openai:ChatOpenAI"


@lru_cache(maxsize=8)
def provider_class(path: str) -> type[BaseChatModel]:
    """The chat model class at ``path`` (``module:Class``); ``LLMProviderError`` naming it if it does not load."""
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise LLMProviderError(path, "not an import path module:Class")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LLMProviderError(path, f"module {module_name!r} cannot be imported ({exc}); is its package installed?") from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise LLMProviderError(path, f"module {module_name!r} has no {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, BaseChatModel)):
        raise LLMProviderError(path, f"{class_name!r} is not a langchain chat model (BaseChatModel)")
    return cls


def accepts(cls: type[BaseChatModel], name: str) -> bool:
    """Whether the class takes the constructor argument ``name`` (a field or its alias)."""
    return any(name in (field, info.alias) for field, info in cls.model_fields.items())


def build(llm: LlmConfig, model: str, params: dict[str, Any]) -> BaseChatModel:
    """One chat model of the configured provider for ``model`` with the role's sampling ``params``.

    Retries are ours (``max_retries=0``) so cancel can cut them short."""
    path = llm.provider
    cls = provider_class(path)
    if cls is langchain_openai.ChatOpenAI:
        cls = DirectChatOpenAI  # the same requests, without the client's walk over every message
    kwargs: dict[str, Any] = {"model": model}
    for name, value in (("timeout", llm.timeout), ("max_retries", 0)):
        if accepts(cls, name):
            kwargs[name] = value
    wanted = dict(params)
    cap = wanted.pop("max_tokens", None)
    if cap is not None and _is_openai(cls) and llm.base_url:
        # ChatOpenAI sends its max_tokens as max_completion_tokens, which OpenAI wants and servers of
        # the older API (llama-cpp-python, older Ollama) ignore or refuse; every one takes max_tokens
        kwargs["extra_body"] = {**(wanted.pop("extra_body", None) or {}), "max_tokens": cap}
    elif cap is not None and accepts(cls, "max_tokens"):
        kwargs["max_tokens"] = cap  # a class without an output cap gets none rather than failing
    if llm.base_url:
        wanted["base_url"] = llm.base_url
    refused = sorted(name for name in wanted if not accepts(cls, name))
    if refused:
        raise LLMProviderError(path, f"{cls.__name__} takes no {', '.join(refused)} (set for model {model!r})")
    kwargs.update(wanted)
    if _is_openai(cls):
        key = llm.api_key.get_secret_value() if llm.api_key else None
        if not key and not llm.base_url:
            raise LLMAuthError("no API key: set OPENAI_API_KEY (or BROWSERD_LLM_BASE_URL for a keyless endpoint)",
                               model=model)
        kwargs["api_key"] = key or "unused"
    try:
        return cls(**kwargs)
    except Exception as exc:  # the provider's own validation (a missing key variable, a bad value)
        raise LLMProviderError(path, f"{cls.__name__}(model={model!r}) could not be built: {exc}") from exc


def _is_openai(cls: type[BaseChatModel]) -> bool:
    """ChatOpenAI and its subclasses: the only ones the OpenAI key setting is meant for."""
    return any(base.__module__.startswith("langchain_openai") and base.__name__ == "ChatOpenAI" for base in cls.__mro__)
