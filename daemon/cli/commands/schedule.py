"""``browserd schedule``: create, list, pause, resume, delete and run scheduled crawls."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from daemon.cli.commands import batches
from daemon.cli.output import api_command, client, json_argument, print_json

ACTIONS = ("pause", "resume", "delete", "run", "runs")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schedule", help="scheduled jobs, batches and crawls: create, list, pause, resume, delete, run, runs")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="run a job, batch or crawl template on a cron expression or interval")
    when = create.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help="five fields, UTC: minute hour day-of-month month day-of-week")
    when.add_argument("--every", type=float, help="interval in seconds")
    what = create.add_mutually_exclusive_group(required=True)
    what.add_argument("--job", type=Path, help="JSON file with one job spec")
    what.add_argument("--batch", type=Path, help="JSON file: {\"jobs\": [...], \"defaults\": {...}} or a JSON array")
    what.add_argument("--crawl", type=Path, help="JSON file with one crawl spec (as POST /v1/crawls); each run is a "
                      "crawl, compared with the one before (browserd changes SCHEDULE_ID)")
    create.add_argument("--name")
    create.add_argument("--policy", choices=["skip", "queue"], default="skip",
                        help="when the previous run is unfinished: skip this one (default) or queue it anyway")
    create.add_argument("--paused", action="store_true", help="create it disabled")
    listing = actions.add_parser("list", help="every schedule with its next run")
    parsers = [create, listing]
    for action in ACTIONS:
        one = actions.add_parser(action, help=f"{action} a schedule")
        one.add_argument("schedule_id")
        parsers.append(one)
    # --json before or after the action: `schedule --json list` and `schedule list --json` alike
    p.add_argument("--json", action="store_true", help="print JSON")
    for one in parsers:
        one.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    p.set_defaults(handler=run)


def spec_of(args: argparse.Namespace) -> dict[str, Any]:
    spec: dict[str, Any] = {"policy": args.policy, "enabled": not args.paused}
    if args.name:
        spec["name"] = args.name
    spec["cron" if args.cron else "every"] = args.cron or args.every
    if args.job:
        spec["job"] = json_argument("--job", str(args.job))
    elif args.crawl:
        spec["crawl"] = json_argument("--crawl", str(args.crawl))
    else:
        batch = json_argument("--batch", str(args.batch))
        spec["batch"] = {"jobs": batch} if isinstance(batch, list) else batch
    return spec


def line(s: dict[str, Any]) -> str:
    when = f"cron '{s['cron']}'" if s.get("cron") else f"every {s['every']:g}s"
    state = "enabled" if s["enabled"] else "paused"
    return (f"{s['id']}  {s.get('name') or '-'}  {when}  {state}  policy={s['policy']}  runs={s['runs']}  "
            f"skipped={s['skipped']}  next={s.get('next_run_at') or '-'}")


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    if args.action == "create":
        answer: Any = api.create_schedule(spec_of(args))
    elif args.action == "list":
        answer = api.schedules()
    else:
        answer = api.schedule(args.schedule_id, args.action)
    result = _plain(answer)
    if args.json:
        print_json(result)
    elif args.action == "runs":
        for batch in answer:
            print(batches.line(batch))
        if not answer:
            print(f"no runs of {args.schedule_id} yet")
    elif args.action == "run":
        print(batches.line(answer))
    elif args.action == "list":
        for s in result:
            print(line(s))
    elif args.action == "delete":
        print(f"deleted {args.schedule_id}")
    else:
        print(line(result))
    return 0


def _plain(answer: Any) -> Any:
    """Models (or lists of them) as the JSON the API sent."""
    if isinstance(answer, list):
        return [_plain(item) for item in answer]
    return answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
