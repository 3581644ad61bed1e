"""Structured logs: every record carries the job, step and URL it happened in.

Code that knows the context binds it once (``with bind(job_id=..., step=3):``); every log line
emitted inside, at any depth and across awaits, carries those fields. Context variables, not
thread-locals, because one worker thread runs many jobs on one event loop.

A job with secrets also binds its scrubber (``scrub_with``): every line emitted in its context,
message, fields and traceback, is scrubbed of the secrets' echoes before it is written, whatever
code logged it (a URL in an exception's text, a library's request line).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

_context: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("browserd_log_context", default={})
_SCRUB = "_scrub"  # the context's key for its scrubber: not a field, never written


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


def scrub_with(scrub: Callable[[str], str]) -> None:
    """Scrub every log line emitted from here until the enclosing ``bind`` block ends with ``scrub``."""
    note(**{_SCRUB: scrub})


def current() -> dict[str, Any]:
    return {k: v for k, v in _context.get().items() if k != _SCRUB}


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _context.get()
        scrub = ctx.get(_SCRUB)
        if scrub is None:
            record.ctx = ctx
            return True
        record.ctx = {k: scrub(v) if isinstance(v, str) else v for k, v in ctx.items() if k != _SCRUB}
        record.msg, record.args = scrub(record.getMessage()), None
        if record.exc_info:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def _exception(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The record's traceback: as the filter scrubbed it, or formatted now."""
    if record.exc_text:
        return record.exc_text
    return formatter.formatException(record.exc_info) if record.exc_info else ""


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "ctx", {}),
        }
        exc = _exception(self, record)
        if exc:
            entry["exc"] = exc
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ctx = getattr(record, "ctx", {})
        fields = " ".join(f"{k}={v}" for k, v in ctx.items())
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        line = f"{stamp} {record.levelname:<7} {record.name}: {record.getMessage()}"
        line = f"{line} [{fields}]" if fields else line
        exc = _exception(self, record)
        if exc:
            line += "\n" + exc
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
