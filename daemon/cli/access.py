"""What a job may reach, on the command line: ``--allow``, ``--deny`` and ``--allow-network``.

One set of flags for ``submit``, ``run``, ``inspect`` and ``batch`` (there: defaults of every job),
mapped onto the job spec's own fields (``allowed_domains``, ``denied_domains``,
``allowed_networks``), so the API's checks and the egress policy judge them as any spec's; a
refused URL names these flags as what opens it (``workers.agent.firewall``, ``cdp.egress``).
"""

from __future__ import annotations

import argparse
from typing import Any

FLAGS = (("allow", "allowed_domains"), ("deny", "denied_domains"), ("allow_network", "allowed_networks"))
"""Each flag's ``argparse`` name and the job spec field it fills."""


def add_access_flags(parser: argparse.ArgumentParser, *, every_job: bool = False) -> None:
    """Add the three flags (repeatable); ``every_job``: they apply to every job of a batch."""
    whose = " of every job" if every_job else ""
    parser.add_argument("--allow", action="append", default=[], metavar="DOMAIN",
                        help=f"only these domains (and subdomains){whose}; repeatable (job field allowed_domains)")
    parser.add_argument("--deny", action="append", default=[], metavar="DOMAIN",
                        help=f"never these domains (and subdomains){whose}; repeatable (job field denied_domains)")
    parser.add_argument("--allow-network", action="append", default=[], metavar="CIDR",
                        help=f"open this private network{whose}, e.g. 127.0.0.1/32 or 10.1.0.0/16; repeatable "
                        "(job field allowed_networks)")


def access_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The job spec fields the flags give (only those given)."""
    return {field: getattr(args, flag) for flag, field in FLAGS if getattr(args, flag, None)}
