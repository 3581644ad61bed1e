"""Ids of jobs, batches, schedules and sessions: ``uuid4().hex``, and the check that a string is one.

A string that does not look like an id (``is_id``) names no record, so it can never be spliced
into a Redis key or a path (``store.keys``, ``artifacts``). Pure: the API checks ids with it
before it touches Redis.
"""

from __future__ import annotations

import re
import uuid

ID_SHAPE = "[0-9a-f]{32}"  # a job, batch or session id: 32 lowercase hex digits
ID_PATTERN = re.compile(f"^{ID_SHAPE}$")


def new_id() -> str:
    """A fresh job, batch or schedule id."""
    return uuid.uuid4().hex


def is_id(value: str) -> bool:
    """Whether ``value`` can name a job, batch or schedule (anything else names no key)."""
    return bool(ID_PATTERN.match(value))
