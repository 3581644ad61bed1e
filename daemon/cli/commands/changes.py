"""``browserd changes SCHEDULE_ID``: what each run of a schedule changed against the run before it."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from daemon.cli.output import UsageError, api_command, client, print_json
from workers.jobs.schedules.changes import RunChanges


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("changes", help="items added, changed and removed, and pages gone, run after run of a schedule")
    p.add_argument("schedule_id")
    p.add_argument("--since", help="only runs compared after this time (ISO 8601, e.g. 2026-11-27T10:00:00Z, or "
                   "epoch seconds)")
    p.add_argument("--limit", type=int, help="the newest runs at most (1 to 100)")
    p.add_argument("--json", action="store_true", help="print JSON (the API's answer)")
    p.set_defaults(handler=run)


def since_of(value: str | None) -> datetime | float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: {value!r} is neither ISO 8601 nor epoch seconds") from None


def lines(changes: RunChanges) -> list[str]:
    c = changes.counts
    head = (f"run {changes.run} at {changes.at.isoformat(timespec='seconds')}: "
            + ("baseline (first run)" if changes.previous_run is None else
               f"{c.added} added, {c.changed} changed, {c.removed} removed, {c.pages_removed} pages gone, "
               f"{c.pages_added} pages new")
            + (f", {c.pages_failed} pages failed" if c.pages_failed else ""))
    out = [head]
    out += [f"  + {item.key}" for item in changes.added]
    for item in changes.changed:
        diff = "; ".join(f"{name}: {_short(f.before)} -> {_short(f.after)}" for name, f in item.fields.items())
        out.append(f"  ~ {item.key}: {diff}")
    out += [f"  - {item.key}" for item in changes.removed]
    out += [f"  page gone: {page}" for page in changes.pages_removed]
    if changes.truncated:
        out.append("  (lists cut; --json for the counts)")
    return out


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 1] + "…"


@api_command
def run(args: argparse.Namespace) -> int:
    if args.limit is not None and not 1 <= args.limit <= 100:
        raise UsageError("--limit: between 1 and 100")
    found = client().schedule_changes(args.schedule_id, since_of(args.since), args.limit)
    if args.json:
        print_json([c.model_dump(mode="json") for c in found])
        return 0
    for changes in found:
        print("\n".join(lines(changes)))
    if not found:
        print(f"no runs of {args.schedule_id} compared yet")
    return 0
