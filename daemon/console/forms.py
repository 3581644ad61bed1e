"""The submit form: its fields as the browser sends them, turned into a checked ``JobSpec``.

A refused form comes back with each problem next to the field that caused it, so the form's field
names follow the spec's (``task``, ``script``, ``start_url``, ``output_schema``, ``options.max_steps``
...). Problems the spec reports under a name with no input of its own (``body``: neither a task
nor a script) are shown at the top of the form.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from config import Settings
from workers.jobs.errors import SpecError
from workers.jobs.tenants.ceilings import Ceiling
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, MAX_INPUT_FILES, JobSpec
from workers.jobs.specs.checks import check_spec, problems_of

TEXT_FIELDS = ("kind", "task", "script", "start_url", "output_schema", "allowed_domains", "denied_domains",
               "options.max_steps", "options.planning_interval", "options.max_failures", "timeout", "priority",
               "labels", "idempotency_key", "secrets", "proxy_pool")
TOTP_PREFIX = "totp:"  # a secret written NAME=totp:BASE32 is a second factor (the CLI's --secret says it alike)
UPLOAD_LIMITS = {"max_files": MAX_INPUT_FILES, "max_file_mib": MAX_INPUT_FILE_BYTES >> 20}  # what the form says
INT_OPTIONS = ("options.max_steps", "options.planning_interval", "options.max_failures")


@dataclass(frozen=True)
class Upload:
    """A file sent with the submit form: its name as the browser gave it, its bytes."""

    name: str
    content: bytes


@dataclass
class SubmitForm:
    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    uploads: list[dict[str, str]] = field(default_factory=list)  # input files as the spec takes them (base64)

    @classmethod
    def empty(cls) -> SubmitForm:
        return cls({"kind": "task", "priority": "normal"})

    @classmethod
    def from_fields(cls, fields: dict[str, list[str]], files: Sequence[Upload] = ()) -> SubmitForm:
        """The form's text fields, and its files (``input_files``: the job's ``upload_file`` names them)."""
        uploads = [{"name": f.name, "content_base64": base64.b64encode(f.content).decode()} for f in files]
        return cls({name: (fields.get(name) or [""])[0].strip() for name in TEXT_FIELDS}, uploads=uploads)

    def error(self, name: str, message: str) -> None:
        self.errors.setdefault(name, message)

    @property
    def general_errors(self) -> dict[str, str]:
        """Problems about a field the form has no input for."""
        return {k: v for k, v in self.errors.items() if k not in TEXT_FIELDS}


def _json(form: SubmitForm, name: str) -> Any:
    text = form.values.get(name, "")
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        form.error(name, f"not valid JSON: {exc}")
        return None


def _int(form: SubmitForm, name: str) -> int | None:
    text = form.values.get(name, "")
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        form.error(name, f"{text!r} is not a whole number")
        return None


def _labels(form: SubmitForm) -> dict[str, str]:
    labels = {}
    for line in form.values.get("labels", "").replace(",", "\n").splitlines():
        if not line.strip():
            continue
        key, sep, value = line.strip().partition("=")
        if not sep or not key.strip():
            form.error("labels", f"{line.strip()!r} is not key=value")
            continue
        labels[key.strip()] = value.strip()
    return labels


def _secrets(form: SubmitForm, body: dict[str, Any]) -> None:
    """``NAME=VALUE`` lines: the job's secrets; ``NAME=totp:BASE32``: its second factors."""
    for number, line in enumerate(form.values.get("secrets", "").splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.strip().partition("=")
        if not sep or not name.strip() or not value:
            form.error("secrets", f"line {number} is not NAME=VALUE")  # never its text: it may be the value
            continue
        kind = "totp" if value.startswith(TOTP_PREFIX) else "secrets"
        body.setdefault(kind, {})[name.strip()] = value[len(TOTP_PREFIX):] if kind == "totp" else value


def _domains(text: str) -> list[str]:
    return [d.strip() for d in text.replace("\n", ",").split(",") if d.strip()]


def spec_body(form: SubmitForm) -> dict[str, Any]:
    """The JSON body the form stands for (before the spec's own checks)."""
    v = form.values
    body: dict[str, Any] = {"priority": v.get("priority") or "normal"}
    if v.get("kind") == "script":
        body["script"] = _json(form, "script")
        if body["script"] is None and "script" not in form.errors:
            form.error("script", "give the script: a JSON list of actions")
    else:
        body["task"] = v.get("task") or None
        if not body["task"]:
            form.error("task", "say what the agent should do")
    for name, value in (("start_url", v.get("start_url")), ("idempotency_key", v.get("idempotency_key"))):
        if value:
            body[name] = value
    schema = _json(form, "output_schema")
    if schema is not None:
        body["output_schema"] = schema
    for name in ("allowed_domains", "denied_domains"):
        if v.get(name):
            body[name] = _domains(v[name])
    options = {name.split(".")[1]: _int(form, name) for name in INT_OPTIONS}
    body["options"] = {k: n for k, n in options.items() if n is not None}
    if v.get("timeout"):
        try:
            body["timeout"] = float(v["timeout"])
        except ValueError:
            form.error("timeout", f"{v['timeout']!r} is not a number of seconds")
    body["labels"] = _labels(form)
    _secrets(form, body)
    if v.get("proxy_pool"):
        body["proxy_pool"] = v["proxy_pool"]
    if form.uploads:
        body["input_files"] = form.uploads
    return body


def to_spec(form: SubmitForm, settings: Settings, ceiling: Ceiling | None = None) -> JobSpec | None:
    """The checked spec (within a tenant's ``ceiling``), or None with ``form.errors`` filled in."""
    body = spec_body(form)
    early = bool(form.errors)  # the spec's checks still run, to show every other bad field at once
    try:
        spec = check_spec(JobSpec.model_validate(body), settings, ceiling)
        return None if early else spec
    except ValidationError as exc:
        problems = problems_of(exc).problems
    except SpecError as exc:
        problems = exc.problems
    for problem in problems:
        name = input_for(problem.field)
        if name is None:
            if not early:  # e.g. "neither task nor script": caused by the field already marked
                form.error(problem.field, problem.message)
        else:
            form.error(name, problem.message if name == problem.field else f"{problem.field}: {problem.message}")
    return None


def input_for(field_path: str) -> str | None:
    """The form input a spec field belongs to: ``script[2].go_to_url.url`` -> ``script``."""
    name = field_path.split("[", 1)[0]
    while name not in TEXT_FIELDS and "." in name:
        name = name.rpartition(".")[0]
    return name if name in TEXT_FIELDS else None
