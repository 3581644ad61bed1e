"""Tags that separate the user's request from page content in what the models read.

Page text goes inside a tag with a random id, so a page cannot close it early; fake request
tags inside page content are defused so they cannot pose as the user's words.
"""

from __future__ import annotations

import re
import secrets

_FAKE_TAGS = re.compile(r"</?\s*(user_request|untrusted[\w-]*|plan|system_instructions)\b", re.IGNORECASE)


def defuse(text: str) -> str:
    """Replace the angle bracket of any tag that could pose as ours."""
    return _FAKE_TAGS.sub(lambda m: m.group(0).replace("<", "&lt;"), text)


def untrusted(text: str) -> str:
    nonce = secrets.token_hex(4)
    return f"<untrusted_content_{nonce}>\n{defuse(text)}\n</untrusted_content_{nonce}>"


def user_request(text: str) -> str:
    return f"<user_request>\n{defuse(text)}\n</user_request>"
