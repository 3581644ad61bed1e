"""A batch's progress on stderr: tqdm's bar on a terminal, plain lines every few seconds otherwise.

tqdm fits the bar to the terminal's width as it changes (a narrow terminal gets a short bar, not a
new line per redraw). The rate counts from the first job that finished, not from the submission,
so minutes spent waiting for a worker do not drag it down; with no worker alive the bar says so.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from pydantic import BaseModel
from tqdm import tqdm

from workers.jobs.batches.models import BatchState

BAR_WIDTH = 28
PLAIN_EVERY = 5.0  # seconds between lines when stderr is not a terminal
WORKERS_EVERY = 5.0  # seconds between checks that a worker is alive
NO_WORKER = "no worker is alive: start one with 'browserd worker'"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


@dataclass(frozen=True)
class Reading:
    """One reading of a batch as shown: its bar, and its figures (done/total, rate, ETA, counts)."""

    bar: str
    figures: str


def describe(batch: dict[str, Any], elapsed: float, done_at_start: int = 0) -> Reading:
    """One reading of the batch record, shown; ``elapsed`` since ``done_at_start`` was seen."""
    total, done = batch["total"], batch["done"]
    counts = batch["counts"]
    filled = int(BAR_WIDTH * done / total) if total else BAR_WIDTH
    bar = "[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]"
    rate = (done - done_at_start) / elapsed if elapsed > 0 else 0.0
    left = total - done
    eta = _duration(left / rate) if rate > 0 and left else ("-" if left else "0s")
    figures = (f"{done}/{total}  {rate:.1f} jobs/s  ETA {eta}  running {counts['running']}  "
               f"fails {counts['failed']}" + (f"  cancelled {counts['cancelled']}" if counts["cancelled"] else ""))
    return Reading(bar, figures)


class ProgressBar:
    """Call ``update(batch)`` with each reading; ``close()`` ends the display."""

    def __init__(self, out: TextIO = sys.stderr, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.tty = out.isatty()
        self.clock = clock
        self.first_done: int | None = None
        self.since: float | None = None  # when the rate starts counting: the first reading
        self.last_line = float("-inf")
        self.bar: tqdm | None = None
        self.note = ""

    def update(self, batch: dict[str, Any], final: bool = False) -> None:
        now = self.clock()
        if self.first_done is None:
            self.first_done, self.since = batch["done"], now
        elif self.since is not None and batch["done"] == self.first_done:
            self.since = now  # nothing finished yet: the rate's clock has not started
        figures = describe(batch, now - (self.since or now), self.first_done).figures
        if self.tty:
            self._draw(batch, figures)
        elif final or now - self.last_line >= PLAIN_EVERY:
            self.out.write(f"progress: {figures}{self.note}\n")
            self.last_line = now
            self.out.flush()

    def warn(self, note: str) -> None:
        """A condition to show beside the figures (e.g. no worker alive); '' clears it."""
        self.note = f"  ({note})" if note else ""

    def _draw(self, batch: dict[str, Any], figures: str) -> None:
        if self.bar is None:
            self.bar = tqdm(total=batch["total"], file=self.out, dynamic_ncols=True, unit="job",
                            bar_format="{l_bar}{bar}| {postfix}", leave=True)
        self.bar.n = batch["done"]
        self.bar.set_postfix_str(figures.split("  ", 1)[1] + self.note, refresh=False)  # all but "done/total"
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def follow_batch(read: Callable[[], Any], *, interval: float = 0.5, out: TextIO = sys.stderr,
                 workers: Callable[[], int] | None = None) -> Any:
    """Poll the batch until it completes, drawing progress; returns the final record.

    ``read`` returns a ``BatchRecord`` (or its dict); ``workers`` counts live workers.
    """
    bar = ProgressBar(out)
    checked = float("-inf")
    try:
        while True:
            batch = read()
            record = batch.model_dump(mode="json") if isinstance(batch, BaseModel) else batch
            finished = BatchState(record["state"]) is BatchState.completed
            if workers is not None and not finished and time.monotonic() - checked >= WORKERS_EVERY:
                checked = time.monotonic()
                bar.warn("" if workers() else NO_WORKER)
            bar.update(record, final=finished)
            if finished:
                return batch
            time.sleep(interval)
    finally:
        bar.close()


class WorkerWatch:
    """While a followed job waits in the queue, look every ``WORKERS_EVERY`` seconds whether a worker
    is alive (``workers``: the live count; an error counts as unknown) and say so on ``out`` when that
    changes: a job that sits at ``queued`` is never silent about why (``browserd submit --wait``).
    ``alive`` is what the caller saw at submission (and told the user). Stop it with ``started()``
    once the job left the queue, or ``close()``."""

    def __init__(self, workers: Callable[[], int], alive: bool, out: TextIO = sys.stderr) -> None:
        self.workers, self.alive, self.out = workers, alive, out
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="browserd-worker-watch", daemon=True)
        self._thread.start()

    def started(self) -> None:
        self._done.set()

    def close(self) -> None:
        self._done.set()
        self._thread.join(WORKERS_EVERY + 1)

    def _watch(self) -> None:
        while not self._done.wait(WORKERS_EVERY):
            try:
                alive = self.workers() > 0
            except Exception:  # the API away for a moment: the event stream says so and reconnects
                continue
            if alive != self.alive and not self._done.is_set():
                print(f"still queued: {NO_WORKER}" if not alive else "a worker is alive again: the job will start",
                      file=self.out, flush=True)
            self.alive = alive
