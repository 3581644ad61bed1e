"""Recipe templates: ``{{name}}`` placeholders in a recipe's task, start URL and step parameters,
filled with a job's values (``fill``) or made from a recorded run's values (``template_of``)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote_plus

PLACEHOLDER = re.compile(r"\{\{([A-Za-z][A-Za-z0-9_]{0,31})\}\}")


def fill(value: Any, params: dict[str, str], *, url: bool = False) -> Any:
    """``value`` with every ``{{name}}`` replaced by its parameter (URL-encoded in a URL), recursively."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: quote_plus(params[m[1]]) if url else params[m[1]], value)
    if isinstance(value, dict):
        return {k: fill(v, params, url=url or k == "url") for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, params, url=url) for v in value]
    return value


def templated(text: str, params: dict[str, str], *, url: bool = False) -> str:
    """``text`` with each parameter's value written as its placeholder (longest values first)."""
    for name, value in sorted(params.items(), key=lambda kv: -len(kv[1])):
        if value:
            text = text.replace(quote_plus(value) if url else value, "{{" + name + "}}")
            if url:
                text = text.replace(value, "{{" + name + "}}")
    return text


def template_of(value: Any, params: dict[str, str], key: str = "") -> Any:
    if isinstance(value, str):
        return templated(value, params, url=key == "url")
    if isinstance(value, dict):
        return {k: template_of(v, params, k) for k, v in value.items()}
    if isinstance(value, list):
        return [template_of(v, params, key) for v in value]
    return value


def params_from_task(template: str, task: str) -> dict[str, str] | None:
    """The parameter values that make ``template`` read as ``task``; None when it does not match."""
    parts = PLACEHOLDER.split(template)
    pattern, names = "", []
    for i, part in enumerate(parts):
        if i % 2:
            pattern += f"(?P<{part}>.+?)" if part not in names else f"(?P={part})"
            names.append(part)
        else:
            pattern += re.escape(part)
    found = re.fullmatch(pattern, task, flags=re.DOTALL)
    return {name: found[name] for name in dict.fromkeys(names)} if found else None
