"""``browserd artifacts ID [--out DIR]``: list a job's artifacts, or download them all into DIR."""

from __future__ import annotations

import argparse

from daemon.cli.output import api_command, client


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("artifacts", help="list a job's artifacts (screenshots, page, logs, downloads) or save them")
    p.add_argument("job_id")
    p.add_argument("--out", metavar="DIR", help="download every artifact into DIR (created if needed)")
    p.set_defaults(handler=run)


@api_command
def run(args: argparse.Namespace) -> int:
    with client() as api:
        if args.out:
            for path in api.save_artifacts(args.job_id, args.out):
                print(path)
            return 0
        links = api.artifacts(args.job_id)
    if not links:
        print(f"job {args.job_id} kept no artifacts")
    for link in links:
        print(f"{link.name}\t{link.size}\t{link.content_type}\t{link.url}")
    return 0
