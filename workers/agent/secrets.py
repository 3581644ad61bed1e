"""A job's secrets inside the agent: typed in the browser, never shown to the model or recorded.

The model knows only names: the task message lists them, and it writes ``<secret>name</secret>``
where a value belongs; ``input_text`` fills the value in at the last moment (``fill``), and the
action's result and record keep the placeholder. Whatever the page echoes back (an input's value
in the next snapshot, a greeting with the user name, a URL carrying it) is replaced by the
placeholder on its way to the model, to step records, events, the result, the logs and the
artifacts (``scrub``), in every form a page can echo it: the one scrubber,
``workers.jobs.secrets.scrubber``, built once per job.

A second factor (``totp``: a name and its base32 seed) is written the same way; ``fill`` types
the code of the moment (RFC 6238, ``pyotp``). Each code typed joins the secrets the scrubber
knows before it reaches the browser, so a page echoing it (or a log quoting the field) shows the
placeholder; the seed is one of the values scrubbed from the start.

A secret may be **bound to domains** (``domains``: name -> entries; a credential set's
``domains``, a job's ``secret_domains``): ``fill`` is then given the URL of the frame being typed
into, read from the browser at that moment (``frame_url``), and refuses (``SecretDomainRefused``,
which ends the job) unless its host is an entry or under one. A frame with no host (about:blank,
data:, a frame the browser no longer knows) is refused too: a bound secret goes only where it is sure to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit
from dataclasses import dataclass, field
from typing import Any

import pyotp
from pydantic import BaseModel

from config.hosts import listed, parse_entry
from workers.agent.errors import ActionError, SecretDomainRefused
from workers.jobs.secrets.scrubber import Scrubber, placeholder

PLACEHOLDER = re.compile(r"<secret>\s*([A-Za-z][A-Za-z0-9_]{0,63})\s*</secret>")


@dataclass(frozen=True)
class Secrets:
    values: Mapping[str, str] = field(default_factory=dict)
    totp: Mapping[str, str] = field(default_factory=dict)  # name -> base32 seed
    domains: Mapping[str, Sequence[str]] = field(default_factory=dict)  # name -> where it may be typed (absent: anywhere)
    scrubber: Scrubber = field(init=False, repr=False, compare=False)
    codes: dict[str, list[str]] = field(init=False, repr=False, compare=False)  # name -> the codes typed
    pushed: dict[str, str] = field(init=False, repr=False, compare=False)  # name -> a value a human pushed

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", {})
        object.__setattr__(self, "pushed", {})
        self._compile()

    def _compile(self) -> None:
        """Every form of every value (the seeds too) and of every code typed so far, in one scrubber;
        a code is scrubbed to its second factor's placeholder."""
        object.__setattr__(self, "scrubber", Scrubber({**self.values, **self.totp, **self.pushed}, self.codes))

    def __bool__(self) -> bool:
        return bool(self.values) or bool(self.totp) or bool(self.pushed)

    def add(self, name: str, value: str) -> None:
        """A value a human pushed while the job runs (``POST /v1/jobs/{id}/input``): typed like a secret
        from now on (it replaces a secret of the same name), scrubbed from everything the job writes."""
        self.pushed[name] = value
        self._compile()

    def bound(self, text: str) -> bool:
        """Whether ``text`` names a secret bound to domains (its frame's URL must then be read)."""
        return any(self.domains.get(m.group(1)) for m in PLACEHOLDER.finditer(text))

    def fill(self, text: str, action: str, url: str | None = None) -> str:
        """``text`` with each placeholder replaced by its value, a second factor's by its current code
        (an unknown name is an action error); a bound secret only when ``url`` (the frame typed into,
        now) is on one of its domains."""
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            self._check_domain(name, url)
            if name in self.pushed:
                return self.pushed[name]
            if name in self.totp:
                return self._code(name)
            if name not in self.values:
                known = ", ".join(sorted({*self.values, *self.totp, *self.pushed})) or "none"
                raise ActionError(f"no secret named {name!r} (this job's secrets: {known})", action=action)
            return self.values[name]

        return PLACEHOLDER.sub(value, text)

    def _check_domain(self, name: str, url: str | None) -> None:
        domains = self.domains.get(name)
        if not domains:
            return
        try:
            parts = urlsplit(url or "")
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if host is None or not listed((parse_entry(d) for d in domains), host, port):
            raise SecretDomainRefused(name, url, domains)

    def _code(self, name: str) -> str:
        """The second factor's code of this moment, known to the scrubber before anyone sees it."""
        code = pyotp.TOTP(self.totp[name]).now()
        typed = self.codes.setdefault(name, [])
        if code not in typed:
            typed.append(code)
            self._compile()
        return code

    def scrub(self, text: str) -> str:
        """``text`` with every echo of every value (any encoding, any case) replaced by its placeholder."""
        return self.scrubber.scrub(text)

    def scrub_value(self, value: Any) -> Any:
        """A JSON-like value (a console entry, a record's dump) with every string scrubbed."""
        return self.scrubber.scrub_value(value)

    def scrub_model(self, model: BaseModel) -> BaseModel:
        """A pydantic record (a step, a result) with every string in it scrubbed, field by field
        (scrubbing its JSON text could cut through the quotes around a value)."""
        if not self:
            return model
        return type(model).model_validate(self.scrub_value(model.model_dump(mode="json")))

    def task_note(self) -> str:
        """What the task message says about them: names and how to use them, never a value."""
        if not self:
            return ""
        names = ", ".join(placeholder(n) for n in sorted(self.values))
        codes = ", ".join(placeholder(n) for n in sorted(self.totp))
        note = ("\nThe job gave you these secrets, by name only: " + names + ". " if self.values else "\n")
        if codes:
            note += ("These second factors (one-time codes of an authenticator) are typed the same way; the browser "
                     "receives the current code: " + codes + ". ")
        return note + ("To type one, write its placeholder exactly as shown as (part of) the text of input_text; "
                       "the browser receives the value. You never see the values, and no other password or secret "
                       "may be typed.")
