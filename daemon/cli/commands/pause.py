"""``browserd pause ID`` / ``browserd resume ID``: stop a running job between steps, and let it go on.

A paused job keeps its browser and history; it fails ``timeout`` when paused longer than
BROWSERD_PAUSE_MAX_SECONDS; ``browserd cancel`` works while it is paused.
"""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client, summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pause", help="pause a running job before its next step (it keeps its browser)")
    p.add_argument("job_id")
    p.set_defaults(handler=pause)
    p = sub.add_parser("resume", help="resume a paused job")
    p.add_argument("job_id")
    p.set_defaults(handler=resume)


@api_command
def pause(args: argparse.Namespace) -> int:
    job = client().pause(args.job_id).model_dump(mode="json")
    print(summary(job) + "  (paused: it stops before its next step)")
    return 0


@api_command
def resume(args: argparse.Namespace) -> int:
    job = client().resume(args.job_id).model_dump(mode="json")
    print(summary(job) + "  (resumed)")
    return 0
