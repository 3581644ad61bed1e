"""Loops caught: the agent repeating the same actions on a page that does not change.

After each step the loop reports what the page looked like when the model chose its actions
(``PageState.fingerprint``: URL, scroll position, elements) and the actions it chose (names and
parameters, the ``intent`` left out). A step *repeats* when that same pair was seen within the
last ``WINDOW`` steps: the same element clicked again on an unchanged page, the same scroll that
moves nothing any more, or a cycle of pages (A → B → A → B) gone round again. A step that is new
breaks the run of repeats.

A step whose actions are all ``PASSIVE`` (waiting, noting, reading) is not watched: waiting on a
page that is still loading, or noting findings on one page, is how some tasks go; it neither
counts as a repeat nor breaks a run of them.

``NUDGE_AFTER`` repeats in a row: the model is told, once, in its next prompt
(``prompts.loops``). ``STOP_AFTER`` more repeats in a row after that: the job ends with
category ``stuck`` (``errors.Stuck``). So a loop costs at most ``WINDOW + NUDGE_AFTER +
STOP_AFTER`` steps, whatever ``max_steps`` is.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from workers.jobs.model.actions import ParsedAction

PASSIVE = frozenset({"wait", "cache_content", "extract_content", "extract_fields", "done"})
WINDOW = 4  # the steps a repeat is looked for in: catches cycles of up to 4 pages
NUDGE_AFTER = 3  # repeats in a row before the model is told
STOP_AFTER = 2  # repeats in a row after being told before the job ends as stuck


class LoopVerdict(StrEnum):
    go_on = "go_on"
    nudge = "nudge"
    stuck = "stuck"


def actions_fingerprint(actions: Sequence[ParsedAction]) -> str | None:
    """The actions of one answer as a short digest: names and parameters, never the intent (None:
    only passive actions, which are not watched)."""
    if all(a.name in PASSIVE for a in actions):
        return None
    body = json.dumps([[a.name, a.params.model_dump(mode="json", exclude={"intent"}, exclude_none=True)]
                       for a in actions], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


@dataclass
class LoopWatch:
    """One run's watch on its own steps (a follow-up run starts a new one)."""

    seen: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    repeats: int = 0  # repeats in a row, counted again from 0 after the nudge
    nudged: bool = False
    repeats_before_nudge: int = 0  # the repeats the nudge was about
    total: int = 0  # every repeat of the run


    def saw(self, page: str, actions: str) -> LoopVerdict:
        """A step acted with ``actions`` on ``page``: go on, nudge the model (once), or stop."""
        pair = (page, actions)
        repeated = pair in self.seen
        self.seen.append(pair)
        if not repeated:
            self.repeats = 0
            return LoopVerdict.go_on
        self.repeats += 1
        self.total += 1
        if not self.nudged and self.repeats >= NUDGE_AFTER:
            self.nudged, self.repeats_before_nudge, self.repeats = True, self.repeats, 0
            return LoopVerdict.nudge
        if self.nudged and self.repeats >= STOP_AFTER:
            return LoopVerdict.stuck
        return LoopVerdict.go_on
