"""What a job brings along, on the command line: ``--secret``, ``--input-file`` and ``--proxy-pool``.

One set of flags for ``submit`` and ``run``, mapped onto the job spec's own fields, so the API
checks and seals them as any spec's:

- ``--secret NAME=VALUE`` is one of the job's ``secrets`` (typed where the model writes
  ``<secret>NAME</secret>``, never shown to it); ``--secret NAME=totp:BASE32`` is a second factor
  (``totp``: the browser gets the current code). A value on the command line is visible to the
  machine's other users (``ps``) while the command runs: ``NAME=@FILE`` reads it from a file instead.
- ``--input-file PATH`` sends the file with the submission (``input_files``, named by its file
  name, or ``NAME=PATH``); it is read and size-checked here, before anything is sent
  (``daemon.client.input_file``).
- ``--proxy-pool NAME`` names one of the operator's proxy pools (``proxy_pool``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from daemon.cli.output import UsageError
from daemon.client import input_file

TOTP_PREFIX = "totp:"


def add_input_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--secret", action="append", default=[], metavar="NAME=VALUE",
                        help="a value the job may type as <secret>NAME</secret>, unseen by the model; NAME=totp:BASE32 "
                        "is a second factor (the current code is typed); NAME=@FILE reads the value from FILE; "
                        "repeatable (job fields secrets, totp)")
    parser.add_argument("--input-file", action="append", default=[], metavar="[NAME=]PATH",
                        help="send this file with the job for its upload_file action (job field input_files); "
                        "repeatable")
    parser.add_argument("--proxy-pool", metavar="NAME",
                        help="go through one of the operator's proxy pools (BROWSERD_PROXY_POOLS; job field proxy_pool)")


def input_fields(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The job spec fields the flags give (only those given); ``UsageError`` names a bad one."""
    fields: dict[str, Any] = {}
    secrets, totp = {}, {}
    for item in args.secret:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            shown = f" {name}" if sep and name else ""  # never the text without '=': it may be the value
            raise UsageError(f"{command}: --secret{shown}: give NAME=VALUE, NAME=totp:BASE32 or NAME=@FILE")
        if value.startswith("@"):
            value = _read_value(command, name, Path(value[1:]))
        if value.startswith(TOTP_PREFIX):
            totp[name] = value[len(TOTP_PREFIX):]
        else:
            secrets[name] = value
    if secrets:
        fields["secrets"] = secrets
    if totp:
        fields["totp"] = totp
    files = []
    for item in args.input_file:
        name, sep, path = item.partition("=")
        if not sep or Path(item).exists():
            name, path = "", item
        try:
            files.append(input_file(path, name or None).model_dump(exclude_none=True))
        except ValueError as exc:
            raise UsageError(f"{command}: --input-file {exc}") from None
    if files:
        fields["input_files"] = files
    if args.proxy_pool:
        fields["proxy_pool"] = args.proxy_pool
    return fields


def _read_value(command: str, name: str, path: Path) -> str:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{command}: --secret {name}: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
