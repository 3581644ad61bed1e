"""Settings as the console shows them: secrets masked, and passwords inside URLs too.

``Settings.masked()`` hides the secret fields; a Redis or LLM URL may still carry a password
(``redis://:pw@host``), so the user-info part of every URL value is masked as well.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from config import Settings

MASK = "********"


def mask_url(value: str) -> str:
    """``redis://user:pw@host/0`` -> ``redis://user:********@host/0``; other text as is."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if not parts.scheme or "@" not in parts.netloc:
        return value
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, _ = userinfo.partition(":")
    shown = f"{user}:{MASK}" if sep else MASK
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, list):
        return ",".join(mask_url(str(v)) for v in value)
    return "" if value is None else value


def masked_settings(settings: Settings) -> dict[str, Any]:
    return {name: _shown(value) for name, value in settings.masked().items()}
