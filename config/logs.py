"""Structured logs: every record carries the job, step and URL it happened in.

Code that knows the context binds it once (``with bind(job_id=..., step=3):``); every log line
emitted inside, at any depth and across awaits, carries those fields. Context variables, not
thread-locals, because one worker thread runs many jobs on one event loop.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

_context: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("browserd_log_context", default={})


@contextlib.contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Add ``fields`` to every log record emitted inside this block (in this task)."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def note(**fields: Any) -> None:
    """Add ``fields`` to the current binding until the enclosing ``bind`` block ends (e.g. the URL
    a step reached, once it is known)."""
    _context.set({**_context.get(), **fields})


def current() -> dict[str, Any]:
    return dict(_context.get())


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.ctx = _context.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "ctx", {}),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ctx = getattr(record, "ctx", {})
        fields = " ".join(f"{k}={v}" for k, v in ctx.items())
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        line = f"{stamp} {record.levelname:<7} {record.name}: {record.getMessage()}"
        line = f"{line} [{fields}]" if fields else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(level: str = "INFO", *, json_lines: bool = False) -> None:
    """Configure the root logger once per process (stderr; JSON lines when asked)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ContextFilter())
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("websockets", "httpx", "httpcore", "openai"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
