"""The job state machine as Redis Lua scripts (``lua/*.lua``): each transition is one atomic step.

queued -> running -> succeeded | failed | cancelled, and running -> retrying -> running when a
delivery finds the job's previous run dead. Because a script runs alone on the server, two workers
can never both move a job to running, and a run can only finish a job while it still owns it: the
``attempts`` value it was given at start is its fencing token.

One way leads out of a final state: a job that keeps its session (``options.keep_session``) goes
back to running when a follow-up is accepted (``job_follow_up.lua``), while the worker holding its
session is alive; the follow-up runs under the same attempt, and ends through ``job_finish.lua``
like any run. Pausing is a flag on a running job (``paused``), not a state: the job keeps its
worker and lease.

Every ``job_*`` script takes ``ARGV[1]`` = key prefix, ``ARGV[2]`` = job id, ``ARGV[3]`` = now
(epoch seconds, from the caller's clock) and builds key names the way ``keys`` documents.

The scripts are files, read from the package (``importlib.resources``, so an installed wheel
has them too) when a store first registers them. Each may begin with ``--! prelude: NAME``: the
text of ``NAME.lua`` goes before its own (the job scripts share ``job_prelude.lua``, the
politeness ones ``clock_prelude.lua``). Then ``${NAME}`` placeholders are filled from
``CONSTANTS``, so a number or a set the Python code also uses (``EVENTS_MAX``, the final states)
is defined once, here or in the models.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from string import Template

from workers.jobs.model.status import FINAL_STATES

EVENTS_MAX = 10000  # entries kept per job event stream (approximate trim)
CONSTANTS = {
    "EVENTS_MAX": str(EVENTS_MAX),
    "FINAL_STATES": ", ".join(f"{state.value} = true" for state in sorted(FINAL_STATES)),
}
PRELUDE = re.compile(r"--! prelude: ([a-z_]+)\n")


def _text(name: str) -> str:
    return files("workers.jobs.store.lua").joinpath(f"{name}.lua").read_text(encoding="utf-8")


def _composed(name: str) -> str:
    """The script's text after its prelude's (recursively), placeholders still in."""
    text = _text(name)
    found = PRELUDE.match(text)
    return _composed(found[1]) + text[found.end():] if found else text


@functools.cache
def source(name: str, **parts: str) -> str:
    """Script ``name`` (``lua/{name}.lua``) as Redis runs it: prelude, constants and ``parts`` filled in.

    A placeholder with no value is an error here (``KeyError``), not a Lua syntax error on the server.
    """
    return Template(_composed(name)).substitute(CONSTANTS, **parts)
