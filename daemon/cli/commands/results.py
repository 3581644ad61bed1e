"""``browserd results BATCH_ID > out.jsonl``: every job's outcome, one JSON object per line."""

from __future__ import annotations

import argparse
import sys

from daemon.cli.output import api_command, client


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="stream a batch's results as JSONL (id, status, final_answer, data, error, "
                                       "category, labels)")
    p.add_argument("batch_id")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    for line in client().result_lines(args.batch_id):
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0
