"""``browserd demo``: start everything on this machine, scrape the bundled shop as a batch, stop."""

from __future__ import annotations

import argparse

from config import load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole system locally on a bundled demo shop (redis, worker, API, batch)")
    p.add_argument("--keep", action="store_true",
                   help="after the batch, keep redis, the worker, the API and the shop up until Ctrl-C, and print "
                        "the console's URL and token and commands to try")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from daemon.demo.runner import run_demo

    return run_demo(load_settings(), keep=args.keep)
