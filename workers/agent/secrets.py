"""A job's secrets inside the agent: typed in the browser, never shown to the model or recorded.

The model knows only names: the task message lists them, and it writes ``<secret>name</secret>``
where a value belongs; ``input_text`` fills the value in at the last moment (``fill``), and the
action's result and record keep the placeholder. Whatever the page echoes back (an input's value
in the next snapshot, a greeting with the user name, a URL carrying it) is replaced by the
placeholder on its way to the model, to step records, events, the result and the logs
(``scrub``), both as written and as JSON writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from workers.agent.errors import ActionError

PLACEHOLDER = re.compile(r"<secret>\s*([A-Za-z][A-Za-z0-9_]{0,63})\s*</secret>")


def placeholder(name: str) -> str:
    return f"<secret>{name}</secret>"


@dataclass(frozen=True)
class Secrets:
    values: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.values)

    def fill(self, text: str, action: str) -> str:
        """``text`` with each placeholder replaced by its value (an unknown name is an action error)."""
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.values:
                known = ", ".join(sorted(self.values)) or "none"
                raise ActionError(f"no secret named {name!r} (this job's secrets: {known})", action=action)
            return self.values[name]

        return PLACEHOLDER.sub(value, text)

    def scrub(self, text: str) -> str:
        """``text`` with every value (longest first, raw and JSON-escaped) replaced by its placeholder."""
        for name, secret in sorted(self.values.items(), key=lambda kv: -len(kv[1])):
            text = text.replace(secret, placeholder(name))
            escaped = json.dumps(secret)[1:-1]
            if escaped != secret:
                text = text.replace(escaped, placeholder(name))
        return text

    def scrub_model(self, model: BaseModel) -> BaseModel:
        """A pydantic record (a step, a result) with its text scrubbed everywhere."""
        if not self.values:
            return model
        return type(model).model_validate_json(self.scrub(model.model_dump_json()))

    def task_note(self) -> str:
        """What the task message says about them: names and how to use them, never a value."""
        if not self.values:
            return ""
        names = ", ".join(placeholder(n) for n in sorted(self.values))
        return ("\nThe job gave you these secrets, by name only: " + names + ". To type one, write its placeholder "
                "exactly as shown as (part of) the text of input_text; the browser receives the value. You never "
                "see the values, and no other password or secret may be typed.")
