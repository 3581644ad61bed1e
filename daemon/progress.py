"""A batch's progress on stderr: a bar redrawn in place on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

BAR_WIDTH = 28
PLAIN_EVERY = 5.0  # seconds between lines when stderr is not a terminal


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def describe(batch: dict[str, Any], elapsed: float, done_at_start: int = 0) -> tuple[str, str]:
    """(bar, figures) for one reading of the batch record."""
    total, done = batch["total"], batch["done"]
    counts = batch["counts"]
    filled = int(BAR_WIDTH * done / total) if total else BAR_WIDTH
    bar = "[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]"
    rate = (done - done_at_start) / elapsed if elapsed > 0 else 0.0
    left = total - done
    eta = _duration(left / rate) if rate > 0 and left else ("-" if left else "0s")
    figures = (f"{done}/{total}  {rate:.1f} jobs/s  ETA {eta}  running {counts['running']}  "
               f"fails {counts['failed']}" + (f"  cancelled {counts['cancelled']}" if counts["cancelled"] else ""))
    return bar, figures


class ProgressBar:
    """Call ``update(batch)`` with each reading; ``close()`` ends the line."""

    def __init__(self, out: TextIO = sys.stderr, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.tty = out.isatty()
        self.clock = clock
        self.started = clock()
        self.first_done: int | None = None
        self.last_line = float("-inf")
        self.drawn = False

    def update(self, batch: dict[str, Any], final: bool = False) -> None:
        if self.first_done is None:
            self.first_done = batch["done"]
        now = self.clock()
        bar, figures = describe(batch, now - self.started, self.first_done)
        if self.tty:
            self.out.write(f"\r{bar} {figures}\x1b[K")
            self.drawn = True
        elif final or now - self.last_line >= PLAIN_EVERY:
            self.out.write(f"progress: {figures}\n")
            self.last_line = now
        self.out.flush()

    def close(self) -> None:
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def follow_batch(read: Callable[[], dict[str, Any]], *, interval: float = 0.5, out: TextIO = sys.stderr) -> dict[str, Any]:
    """Poll the batch until it completes, drawing progress; returns the final record."""
    bar = ProgressBar(out)
    try:
        while True:
            batch = read()
            finished = batch["state"] == "completed"
            bar.update(batch, final=finished)
            if finished:
                return batch
            time.sleep(interval)
    finally:
        bar.close()
