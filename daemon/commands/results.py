"""``browserd results BATCH_ID > out.jsonl``: every job's outcome, one JSON object per line."""

from __future__ import annotations

import argparse
import sys

from config import load_settings
from daemon.batch_client import OpsClient
from daemon.cliutil import api_command


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="stream a batch's results as JSONL (id, status, final_answer, data, error)")
    p.add_argument("batch_id")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    api = OpsClient.from_settings(load_settings())
    out = sys.stdout.buffer
    for line in api.results(args.batch_id):
        out.write(line)
    out.flush()
    return 0
