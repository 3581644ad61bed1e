"""Politeness toward the sites jobs visit: what a job asks for, and the limits it runs under.

Three limits, each global (``BROWSERD_POLITENESS_*``, ``BROWSERD_RESPECT_ROBOTS_TXT``) and per job
(``politeness`` in the spec): at most ``max_concurrent`` jobs on one domain at once (0: no
limit), at least ``min_delay`` seconds between two navigations to it, and ``respect_robots_txt``.
Domains are registrable domains (``domains``). A job may always be stricter. A job may be looser
than the settings only where the operator allows it (``BROWSERD_POLITENESS_ALLOW_LOOSER``): by
default a looser value is refused at submission (422 naming the field), because the global
limits protect sites from every user of the deployment, not from one job. Pure: ``JobSpec``
holds ``PolitenessOptions``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from config import Settings
from workers.jobs.errors import SpecError

MAX_DELAY = 3600.0  # seconds; the longest min_delay a job or the settings may ask for


class PolitenessOptions(BaseModel):
    """A job's own politeness; None takes the setting's value."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent: int | None = Field(
        None, ge=1, le=1000, description="Jobs at most on this job's domain at once, counting this one.")
    min_delay: float | None = Field(
        None, ge=0, le=MAX_DELAY, description="Seconds at least between two navigations to one domain (any job's).")
    respect_robots_txt: bool | None = Field(
        None, description="Refuse navigations the site's robots.txt disallows (url_blocked).")


@dataclass(frozen=True)
class PolitenessLimits:
    """The limits a job runs under: its own where stricter (or allowed looser), else the settings'."""

    max_concurrent: int  # 0: no limit
    min_delay: float
    respect_robots_txt: bool

    @property
    def paces(self) -> bool:
        return self.min_delay > 0


def limits_for(options: PolitenessOptions, settings: Settings, *, refuse: bool = True) -> PolitenessLimits:
    """The job's effective limits. A looser value than the operator allows is a ``SpecError``
    (``politeness.<field>``) with ``refuse`` (at submission); without it (at run time, where the
    settings may have tightened since) the settings' value is used instead."""
    glob = PolitenessLimits(settings.politeness_max_concurrent, settings.politeness_min_delay,
                            settings.respect_robots_txt)
    own = PolitenessLimits(
        glob.max_concurrent if options.max_concurrent is None else options.max_concurrent,
        glob.min_delay if options.min_delay is None else options.min_delay,
        glob.respect_robots_txt if options.respect_robots_txt is None else options.respect_robots_txt,
    )
    if settings.politeness_allow_looser:
        return own
    looser = _looser_fields(own, glob)
    if looser and refuse:
        name, bound, variable = looser[0]
        raise SpecError.at(f"politeness.{name}", f"{bound}: a job may be stricter than {variable} but not looser "
                           "(unless BROWSERD_POLITENESS_ALLOW_LOOSER is set)")
    return PolitenessLimits(
        max_concurrent=min(x for x in (own.max_concurrent, glob.max_concurrent) if x) if glob.max_concurrent
        else own.max_concurrent,
        min_delay=max(own.min_delay, glob.min_delay),
        respect_robots_txt=own.respect_robots_txt or glob.respect_robots_txt,
    )


def robots_remedy(options: PolitenessOptions, settings: Settings) -> str:
    """What makes a job follow robots.txt, and what (if anything) lifts it: the tail of a robots
    refusal, so it names its rule and the flag or setting that opens the URL, as other refusals do."""
    if settings.respect_robots_txt and not settings.politeness_allow_looser:
        return "; the operator's BROWSERD_RESPECT_ROBOTS_TXT makes every job follow robots.txt: no job can open it"
    if settings.respect_robots_txt:
        return ("; the operator's BROWSERD_RESPECT_ROBOTS_TXT makes jobs follow robots.txt: open it with the job "
                "field politeness.respect_robots_txt=false (BROWSERD_POLITENESS_ALLOW_LOOSER allows it here)")
    return ("; the job follows robots.txt because it asked to (--respect-robots-txt, job field "
            "politeness.respect_robots_txt): leave that out to open it")


def _looser_fields(own: PolitenessLimits, glob: PolitenessLimits) -> list[tuple[str, str, str]]:
    """(field, what is allowed, setting) for each limit of ``own`` looser than ``glob``."""
    out = []
    if glob.max_concurrent and own.max_concurrent > glob.max_concurrent:
        out.append(("max_concurrent", f"at most {glob.max_concurrent} here", "BROWSERD_POLITENESS_MAX_CONCURRENT"))
    if own.min_delay < glob.min_delay:
        out.append(("min_delay", f"at least {glob.min_delay:g} here", "BROWSERD_POLITENESS_MIN_DELAY"))
    if glob.respect_robots_txt and not own.respect_robots_txt:
        out.append(("respect_robots_txt", "must stay true here", "BROWSERD_RESPECT_ROBOTS_TXT"))
    return out
