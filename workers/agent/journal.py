"""What a job's tabs said: their console log and their failed requests, read once, when the job ends.

Chrome keeps each page's recent console messages and uncaught exceptions (V8's message storage:
at most 1000, about 10 MB) and its browser-side log entries (failed loads among them), and
replays them to a client that enables ``Runtime`` / ``Log``. So the journal enables both only at
the end, on each open tab, collects the replay and disables them again: a page flooding its
console while the job runs sends nothing over the browser's connection (that would stall every
job sharing the browser), and the agent's tabs never run with ``Runtime`` enabled.

What is kept is the tabs' current documents (a navigation starts a new store). Everything here is
untrusted page text: bounded (entries and characters) and never shown to the model; the recorder
scrubs it of the job's secrets before storing it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cdp

MAX_ENTRIES = 1000  # per kind; later ones are counted, not kept
MAX_TEXT = 2000  # characters of one message
REPLAY_TIMEOUT = 5.0


@dataclass
class Journal:
    console: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0

    async def collect(self, page: cdp.Page) -> None:
        """Read what ``page`` logged (its stored messages, replayed by enabling the domains)."""
        s = page.session
        offs = [s.on("Runtime.consoleAPICalled", self._on_console), s.on("Runtime.exceptionThrown", self._on_exception),
                s.on("Log.entryAdded", self._on_log)]
        try:
            with contextlib.suppress(cdp.CDPException):
                await s.send("Log.enable", timeout=REPLAY_TIMEOUT)  # replies after replaying its entries
                await s.send("Runtime.enable", timeout=REPLAY_TIMEOUT)
        finally:
            for off in offs:
                off()
            with contextlib.suppress(cdp.CDPException):
                await s.send("Runtime.disable", timeout=REPLAY_TIMEOUT)
                await s.send("Log.disable", timeout=REPLAY_TIMEOUT)

    def _keep(self, into: list[dict[str, Any]], entry: dict[str, Any]) -> None:
        if len(into) >= MAX_ENTRIES:
            self.dropped += 1
            return
        into.append(entry)

    def _on_console(self, params: dict[str, Any]) -> None:
        text = " ".join(_arg_text(a) for a in params.get("args", [])[:20])
        self._keep(self.console, {"time": _seconds(params.get("timestamp")), "level": params.get("type", "log"),
                                  "text": text[:MAX_TEXT], "url": _frame_url(params.get("stackTrace"))})

    def _on_exception(self, params: dict[str, Any]) -> None:
        details = params.get("exceptionDetails") or {}
        exc = details.get("exception") or {}
        text = exc.get("description") or details.get("text") or "exception"
        self._keep(self.console, {"time": _seconds(params.get("timestamp")), "level": "exception",
                                  "text": str(text)[:MAX_TEXT], "url": str(details.get("url", ""))[:MAX_TEXT]})

    def _on_log(self, params: dict[str, Any]) -> None:
        entry = params.get("entry") or {}
        record = {"time": _seconds(entry.get("timestamp")), "level": entry.get("level", ""),
                  "text": str(entry.get("text", ""))[:MAX_TEXT], "url": str(entry.get("url", ""))[:MAX_TEXT]}
        if entry.get("source") == "network":
            self._keep(self.network, record)
        else:
            self._keep(self.console, {**record, "level": f"{entry.get('source', 'browser')}:{record['level']}"})

    def lines(self, kind: str, clean: Callable[[Any], Any] = lambda entry: entry) -> str:
        """One JSON object per line (``console`` or ``network``), oldest first, each ``clean``-ed
        (the job's secrets scrubbed from its strings) before it is written."""
        entries = sorted(self.console if kind == "console" else self.network, key=lambda e: e["time"])
        return "".join(json.dumps(clean(e), ensure_ascii=False) + "\n" for e in entries)


def _seconds(timestamp: Any) -> float:
    """CDP's timestamps: milliseconds since the epoch (Runtime, Log)."""
    return round(float(timestamp or 0) / 1000, 3)


def _arg_text(arg: dict[str, Any]) -> str:
    if "value" in arg:
        value = arg["value"]
        return (value if isinstance(value, str) else json.dumps(value))[:MAX_TEXT]
    return str(arg.get("description") or arg.get("unserializableValue") or arg.get("type", ""))[:MAX_TEXT]


def _frame_url(stack: dict[str, Any] | None) -> str:
    frames = (stack or {}).get("callFrames") or []
    return str(frames[0].get("url", ""))[:MAX_TEXT] if frames else ""
