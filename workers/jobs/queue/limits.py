"""A job's time limits in the queue: its soft limit is its own timeout, the hard one a grace later,
and both must stay below the broker's visibility timeout or a running job would be redelivered.
Pure: spec checks use it without Celery."""

from __future__ import annotations

from config import ConfigError, Settings
from workers.jobs.model.spec import JobSpec

HARD_LIMIT_GRACE = 5.0  # seconds between a job's soft and hard limits


def hard_limit(soft: float) -> float:
    return soft + HARD_LIMIT_GRACE


def human_allowance(spec: JobSpec, settings: Settings) -> float:
    """Seconds the job may wait for humans (``request_human``) in all: 0 unless ``options.allow_human``."""
    return _human(spec.options.allow_human, spec.options.human_timeout, settings)


def _human(allow: bool, seconds: float | None, settings: Settings) -> float:
    return (seconds or settings.human_timeout) if allow else 0.0


def queue_limit(spec: JobSpec, settings: Settings) -> float:
    """The soft limit a job's message carries: its own timeout, plus the time it may wait for humans
    (counted outside its own timeout, so the queue's limits must hold both)."""
    return queue_seconds(spec.timeout, spec.options.allow_human, spec.options.human_timeout, settings)


def queue_seconds(timeout: float | None, allow_human: bool, human_timeout: float | None, settings: Settings) -> float:
    """``queue_limit`` from a record's fields (the reconciler reads them without the whole spec)."""
    return (timeout or settings.job_timeout) + _human(allow_human, human_timeout, settings)


def max_job_timeout(settings: Settings) -> float:
    """The longest timeout a job may ask for: its hard limit must stay below the visibility timeout."""
    return settings.visibility_timeout - HARD_LIMIT_GRACE - 1.0


def check_limits(settings: Settings) -> None:
    if max_job_timeout(settings) < settings.job_timeout:
        raise ConfigError(
            f"BROWSERD_VISIBILITY_TIMEOUT={settings.visibility_timeout:g} must exceed BROWSERD_JOB_TIMEOUT="
            f"{settings.job_timeout:g} plus {HARD_LIMIT_GRACE + 1:g}s, or a running job would be redelivered"
        )
