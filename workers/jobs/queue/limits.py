"""A job's time limits in the queue: its soft limit is its own timeout, the hard one a grace later,
and both must stay below the broker's visibility timeout or a running job would be redelivered.
Pure: spec checks use it without Celery."""

from __future__ import annotations

from config import ConfigError, Settings

HARD_LIMIT_GRACE = 5.0  # seconds between a job's soft and hard limits


def hard_limit(soft: float) -> float:
    return soft + HARD_LIMIT_GRACE


def max_job_timeout(settings: Settings) -> float:
    """The longest timeout a job may ask for: its hard limit must stay below the visibility timeout."""
    return settings.visibility_timeout - HARD_LIMIT_GRACE - 1.0


def check_limits(settings: Settings) -> None:
    if max_job_timeout(settings) < settings.job_timeout:
        raise ConfigError(
            f"BROWSERD_VISIBILITY_TIMEOUT={settings.visibility_timeout:g} must exceed BROWSERD_JOB_TIMEOUT="
            f"{settings.job_timeout:g} plus {HARD_LIMIT_GRACE + 1:g}s, or a running job would be redelivered"
        )
