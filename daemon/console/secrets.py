"""Settings as the console shows them: ``Settings.masked()`` (secret fields, and the passwords and
secret query parameters inside URLs: ``config.masking``), lists joined for the page."""

from __future__ import annotations

from typing import Any

from config import Settings
from config.masking import mask_url

__all__ = ["mask_url", "masked_settings"]


def _shown(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "" if value is None else value


def masked_settings(settings: Settings) -> dict[str, Any]:
    return {name: _shown(value) for name, value in settings.masked().items()}
