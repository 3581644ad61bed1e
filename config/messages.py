"""What a refused value reads as, to the person who typed it: pydantic's and RE2's errors in words.

pydantic's URL errors repeat the Rust ``url`` crate's parser (``Input should be a valid URL,
relative URL without a base``) and RE2's errors are bytes (``(b'missing ): a(',)`` when printed);
a user reads what to type instead. Pure: the settings, the API's 422 handler and the submission
checks word refusals with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VALUE_ERROR = "Value error, "
URL_EXAMPLE = "https://example.com/page"


def error_message(error: Mapping[str, Any]) -> str:
    """One of pydantic's ``ValidationError.errors()`` in words (without its field: the caller names it)."""
    message = str(error.get("msg", "invalid value")).removeprefix(VALUE_ERROR)
    kind = error.get("type")
    given = error.get("input")
    if kind == "url_parsing":
        shown = f"{given!r:.80}" if isinstance(given, str) else "this"
        reason = str(error.get("ctx", {}).get("error", ""))
        if "relative URL without a base" in reason or (isinstance(given, str) and "://" not in given):
            return f"{shown} is not a valid URL: give it in full, with its scheme, e.g. {URL_EXAMPLE}"
        return f"{shown} is not a valid URL ({reason or message}): give one like {URL_EXAMPLE}"
    if kind == "url_scheme":
        expected = str(error.get("ctx", {}).get("expected_schemes", "'http' or 'https'"))
        shown = f"{given!r:.80}" if isinstance(given, str) else "this URL"
        return f"{shown} is not a web address: its scheme must be {expected}, e.g. {URL_EXAMPLE}"
    return message


def re2_reason(error: BaseException) -> str:
    """Why RE2 refused a pattern, as text (its ``re2.error`` carries bytes)."""
    why: Any = error.args[0] if error.args else error
    return why.decode(errors="replace") if isinstance(why, bytes) else str(why)
