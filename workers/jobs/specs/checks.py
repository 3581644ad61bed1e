"""Checking what users submit: one job spec (``check_spec``), or every job of a batch (``validate_jobs``).

``check_spec`` is what pydantic cannot check alone (a script's actions, an output schema, a timeout
the queue can honour, a webhook receiver, politeness); ``max_steps_of`` is the step budget a job is
recorded with. Every job of a batch (read by ``batch_body``) is merged with its defaults and
validated before anything is written: one bad item refuses the whole batch, with its index and
field named. Every refusal is a ``SpecError``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from config import Settings
from config.messages import error_message
from workers.jobs.errors import FieldProblem, SpecError
from workers.jobs.ids import new_id
from workers.jobs.model.actions import validate_script
from workers.jobs.model.spec import JobSpec
from workers.jobs.politeness.options import limits_for
from workers.jobs.queue.limits import max_job_timeout, queue_limit
from workers.jobs.recipes.checks import automatic
from workers.jobs.secrets.sealing import seal_spec
from workers.jobs.specs.batch_body import BatchRequest, merged
from workers.jobs.specs.output import check_schema
from workers.jobs.specs.schema_limits import check_limits
from workers.jobs.tenants.ceilings import (
    Ceiling,
    JobLimits,
    check_limits as check_ceiling,
    check_proxy_pool,
    operator_ceiling,
)
from workers.jobs.webhooks.destinations import networks, url_refusal


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "options", "max_steps")`` -> ``options.max_steps``; the body itself -> ``body``."""
    parts = [str(p) for p in loc]
    where = parts.pop(0) if parts and parts[0] in ("body", "query", "path", "header") else "body"
    if not parts or (where == "body" and len(parts) == 1 and parts[0].isdigit()):
        return where  # the body as a whole (or a position in unparseable JSON)
    return ".".join(parts)


def problems_of(exc: ValidationError, where: str | None = None) -> SpecError:
    """pydantic's errors as field problems, each field prefixed with ``where`` when given."""
    problems = []
    for err in exc.errors():
        name = field_name(("body", *err.get("loc", ())))
        path = name if where is None else (where if name == "body" else f"{where}.{name}")
        problems.append(FieldProblem(path, error_message(err)))
    return SpecError(problems)


def max_steps_of(spec: JobSpec, settings: Settings) -> int:
    """The step budget a job is recorded with: a script's length, or the agent's ``max_steps``."""
    if spec.script is not None:
        return len(spec.script)
    return spec.options.max_steps or settings.max_steps


def check_llm_budget(spec: JobSpec, settings: Settings) -> None:
    """A job may lower the operator's LLM budget, never raise it: asking for more is refused, not cut."""
    options = spec.options
    if (options.max_tokens_total is not None and settings.max_tokens_total is not None
            and options.max_tokens_total > settings.max_tokens_total):
        raise SpecError.at("options.max_tokens_total", f"at most {settings.max_tokens_total} here "
                           "(BROWSERD_MAX_TOKENS_TOTAL)")
    if (options.max_llm_seconds is not None and settings.max_llm_seconds is not None
            and options.max_llm_seconds > settings.max_llm_seconds):
        raise SpecError.at("options.max_llm_seconds", f"at most {settings.max_llm_seconds:g} seconds here "
                           "(BROWSERD_MAX_LLM_SECONDS)")


def check_human(spec: JobSpec, settings: Settings) -> None:
    """``options.human_timeout``: with ``allow_human`` only, within BROWSERD_HUMAN_TIMEOUT_MAX, and the
    job's timeout and its wait for humans together within what the queue can hold."""
    human = spec.options.human_timeout
    if human is not None and not spec.options.allow_human:
        raise SpecError.at("options.human_timeout", "applies to a job that may ask a human: give it with "
                           "options.allow_human true")
    if human is not None and human > settings.human_timeout_max:
        raise SpecError.at("options.human_timeout", f"at most {settings.human_timeout_max:g} seconds here "
                           "(BROWSERD_HUMAN_TIMEOUT_MAX)")
    if spec.options.allow_human and queue_limit(spec, settings) > max_job_timeout(settings):
        raise SpecError.at("options.human_timeout", f"the timeout and the wait for humans together are at most "
                           f"{max_job_timeout(settings):g} seconds here (BROWSERD_VISIBILITY_TIMEOUT bounds how "
                           "long one job may hold its message)")


def check_spec(spec: JobSpec, settings: Settings, ceiling: Ceiling | None = None) -> JobSpec:
    """What pydantic cannot check alone: the script's actions, the output schema (its bounds:
    ``SchemaTooComplex``; then jsonschema's own check), a timeout the
    queue can honour, a webhook receiver that is not plainly private, politeness no looser than the
    operator allows, what the job opens within its ``ceiling`` (default: the operator's settings);
    and the secrets, sealed."""
    spec = apply_ceiling(spec, operator_ceiling(settings))
    if ceiling is not None:
        spec = apply_ceiling(spec, ceiling)
    check_proxy_pool(spec.proxy_pool, ceiling, settings)
    if spec.output_schema is not None:
        check_output_schema(spec.output_schema)
    if spec.timeout is not None and spec.timeout > max_job_timeout(settings):
        raise SpecError.at("timeout", f"at most {max_job_timeout(settings):g} seconds here "
                           "(BROWSERD_VISIBILITY_TIMEOUT bounds how long one job may run)")
    keep = spec.options.keep_session
    if keep is not None and spec.script is not None:
        raise SpecError.at("options.keep_session", "only agent jobs (a task) keep a session for follow-up tasks")
    if keep is not None and keep > settings.keep_session_max:
        raise SpecError.at("options.keep_session", f"at most {settings.keep_session_max:g} seconds here "
                           "(BROWSERD_KEEP_SESSION_MAX)")
    check_human(spec, settings)
    check_llm_budget(spec, settings)
    if spec.script is not None:
        if len(spec.script) > settings.max_script_actions:
            raise SpecError.at("script", f"{len(spec.script)} actions; at most {settings.max_script_actions} "
                               "(BROWSERD_MAX_SCRIPT_ACTIONS)")
        try:
            spec.script = validate_script(spec.script)
        except ValueError as exc:
            raise SpecError.at("script", str(exc)) from None
    if spec.webhook_url is not None:
        check_webhook_url(str(spec.webhook_url), settings)
    secret = spec.proxy.password_secret if spec.proxy is not None else None
    if secret is not None and spec.credentials is None and secret not in spec.secrets:
        raise SpecError.at("proxy.password_secret", f"{secret!r} is not one of the job's 'secrets', and the job "
                           "names no 'credentials' set that could hold it")
    limits_for(spec.politeness, settings)  # a looser limit than the operator allows is refused here
    return seal_spec(spec, settings)


def apply_ceiling(spec: JobSpec, ceiling: Ceiling) -> JobSpec:
    """Refuse what asks past the ceiling; fill in the steps and timeout a job leaves open with the
    ceiling's, so an unbounded request runs bounded. (The credential sets, profiles and recipes a
    tenant's job names are looked up among its own: ``daemon.api`` checks them, the workers open them.)"""
    check_ceiling(JobLimits(spec.allowed_networks, spec.allowed_domains, spec.options.max_steps, spec.timeout), ceiling)
    if ceiling.domains is not None and spec.start_url is not None:
        host = spec.start_url.host or ""
        check_ceiling(JobLimits((), (host,)), ceiling)
    if ceiling.max_steps is not None and spec.options.max_steps is None and spec.script is None:
        spec.options.max_steps = ceiling.max_steps
    if ceiling.timeout is not None and spec.timeout is None:
        spec.timeout = ceiling.timeout
    return spec


def check_output_schema(schema: dict[str, Any]) -> None:
    """Refuse an output schema past its bounds (``SchemaTooComplex``, naming the limit), then one
    jsonschema or the linear-time regex engine cannot use. Every way a schema enters comes here:
    a job, a batch (its defaults merged in), a schedule's template, ``browserd run``."""
    check_limits(schema)  # first: what follows walks the schema too
    problems = check_schema(schema)
    if problems:
        raise SpecError.at("output_schema", "; ".join(problems))


def check_webhook_url(url: str, settings: Settings, where: str = "webhook_url") -> None:
    """Refuse a receiver that is plainly not public (an IP literal, localhost); names are judged when
    delivering, on the addresses they resolve to then."""
    reason = url_refusal(url, networks(settings.webhook_allowed_networks))
    if reason:
        raise SpecError.at(where, reason)


def validate_jobs(request: BatchRequest, settings: Settings, ceiling: Ceiling | None = None) -> list[JobSpec]:
    """Every job as a checked ``JobSpec`` (within ``ceiling``, default the operator's); the first bad
    one refuses the batch (422, ``jobs[i].field``)."""
    if request.webhook_url is not None:
        check_webhook_url(request.webhook_url, settings)
    specs = [check_item(index, item, request.defaults, settings, ceiling) for index, item in enumerate(request.jobs)]
    return batch_mode(specs, request.mode)


def check_item(index: int, item: Any, defaults: dict[str, Any], settings: Settings,
               ceiling: Ceiling | None = None) -> JobSpec:
    """Job ``index`` of a batch over its ``defaults``, checked; a refusal names ``jobs[index]``."""
    where = f"jobs[{index}]"
    if not isinstance(item, dict):
        raise SpecError.at(where, "must be an object (a job spec)")
    try:
        spec = JobSpec.model_validate(merged(defaults, item) if defaults else item)
        return check_spec(spec, settings, ceiling)
    except ValidationError as exc:
        raise problems_of(exc, where) from None
    except SpecError as exc:
        raise exc.within(where) from None


def batch_mode(specs: list[JobSpec], mode: str) -> list[JobSpec]:
    """The checked specs as the batch's ``mode`` runs them (``auto``: its agent jobs share a recipe)."""
    return automatic(specs, f"batch-{new_id()}") if mode == "auto" else specs
