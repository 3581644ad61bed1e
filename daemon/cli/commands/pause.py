"""``browserd pause ID`` / ``browserd resume ID``: stop a running job between steps, and let it go on;
``browserd hand-back ID``: a human is done with a job waiting for one; ``browserd input ID NAME``:
push a value (a code sent by SMS or e-mail) to a running job.

A paused job keeps its browser and history; it fails ``timeout`` when paused longer than
BROWSERD_PAUSE_MAX_SECONDS; ``browserd cancel`` works while it is paused. An input's value is read
from standard input (or a prompt that does not echo), never from the command line, where other
users of the machine could read it.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from daemon.cli.output import api_command, client, summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pause", help="pause a running job before its next step (it keeps its browser)")
    p.add_argument("job_id")
    p.set_defaults(handler=pause)
    p = sub.add_parser("resume", help="resume a paused job")
    p.add_argument("job_id")
    p.set_defaults(handler=resume)
    p = sub.add_parser("hand-back", help="hand a job waiting for a human (request_human) back to its agent")
    p.add_argument("job_id")
    p.set_defaults(handler=hand_back)
    p = sub.add_parser("input", help="push a value (an SMS or e-mail code) to a running job; read from stdin")
    p.add_argument("job_id")
    p.add_argument("name", help="the placeholder's name: the agent types it as <secret>NAME</secret>")
    p.set_defaults(handler=send_input)


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


@api_command
def hand_back(args: argparse.Namespace) -> int:
    job = client().hand_back(args.job_id).model_dump(mode="json")
    print(summary(job) + "  (handed back: its agent goes on)")
    return 0


@api_command
def send_input(args: argparse.Namespace) -> int:
    if sys.stdin.isatty():
        value = getpass.getpass(f"value of {args.name}: ")
    else:
        value = sys.stdin.read().rstrip("\r\n")
    job = client().send_input(args.job_id, args.name, value).model_dump(mode="json")
    print(summary(job) + f"  (input {args.name} sent)")
    return 0
