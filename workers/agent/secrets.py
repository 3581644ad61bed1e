"""A job's secrets inside the agent: typed in the browser, never shown to the model or recorded.

The model knows only names: the task message lists them, and it writes ``<secret>name</secret>``
where a value belongs; ``input_text`` fills the value in at the last moment (``fill``), and the
action's result and record keep the placeholder. Whatever the page echoes back (an input's value
in the next snapshot, a greeting with the user name, a URL carrying it) is replaced by the
placeholder on its way to the model, to step records, events, the result, the logs and the
artifacts (``scrub``), in every form a page can echo it: the one scrubber,
``workers.jobs.secrets.scrubber``, built once per job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from workers.agent.errors import ActionError
from workers.jobs.secrets.scrubber import Scrubber, placeholder

PLACEHOLDER = re.compile(r"<secret>\s*([A-Za-z][A-Za-z0-9_]{0,63})\s*</secret>")


@dataclass(frozen=True)
class Secrets:
    values: Mapping[str, str] = field(default_factory=dict)
    scrubber: Scrubber = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scrubber", Scrubber(self.values))  # every form of every value, compiled once

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
        """``text`` with every echo of every value (any encoding, any case) replaced by its placeholder."""
        return self.scrubber.scrub(text)

    def scrub_value(self, value: Any) -> Any:
        """A JSON-like value (a console entry, a record's dump) with every string scrubbed."""
        return self.scrubber.scrub_value(value)

    def scrub_model(self, model: BaseModel) -> BaseModel:
        """A pydantic record (a step, a result) with every string in it scrubbed, field by field
        (scrubbing its JSON text could cut through the quotes around a value)."""
        if not self.values:
            return model
        return type(model).model_validate(self.scrub_value(model.model_dump(mode="json")))

    def task_note(self) -> str:
        """What the task message says about them: names and how to use them, never a value."""
        if not self.values:
            return ""
        names = ", ".join(placeholder(n) for n in sorted(self.values))
        return ("\nThe job gave you these secrets, by name only: " + names + ". To type one, write its placeholder "
                "exactly as shown as (part of) the text of input_text; the browser receives the value. You never "
                "see the values, and no other password or secret may be typed.")
