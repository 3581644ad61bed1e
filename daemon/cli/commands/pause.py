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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from daemon.cli.output import api_command, client, summary
from daemon.client import Client
from workers.jobs.model.record import JobRecord


@dataclass(frozen=True)
class Steer:
    """One steering command: its name, its help, the client call it makes and what it prints after."""

    command: str
    help: str
    call: Callable[[Client, str], JobRecord]
    note: str


STEERS = (
    Steer("pause", "pause a running job before its next step (it keeps its browser)", Client.pause,
          "paused: it stops before its next step"),
    Steer("resume", "resume a paused job", Client.resume, "resumed"),
    Steer("hand-back", "hand a job waiting for a human (request_human) back to its agent", Client.hand_back,
          "handed back: its agent goes on"),
)


def register(sub: argparse._SubParsersAction) -> None:
    for steer in STEERS:
        p = sub.add_parser(steer.command, help=steer.help)
        p.add_argument("job_id")
        p.set_defaults(handler=api_command(partial(_steer, steer)))
    p = sub.add_parser("input", help="push a value (an SMS or e-mail code) to a running job; read from stdin")
    p.add_argument("job_id")
    p.add_argument("name", help="the placeholder's name: the agent types it as <secret>NAME</secret>")
    p.set_defaults(handler=send_input)


def _steer(steer: Steer, args: argparse.Namespace) -> int:
    job = steer.call(client(), args.job_id).model_dump(mode="json")
    print(f"{summary(job)}  ({steer.note})")
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
