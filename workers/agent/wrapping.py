"""The user's request in its own tag; page content is wrapped by dom (nonce-tagged untrusted tags).

Tags inside the task that could pose as ours are defused, so only the wrapper marks the request.
"""

from __future__ import annotations

import re

_FAKE_TAGS = re.compile(r"</?\s*(user_request|untrusted[\w-]*|plan|system_instructions)\b", re.IGNORECASE)


def defuse(text: str) -> str:
    """Replace the angle bracket of any tag that could pose as ours."""
    return _FAKE_TAGS.sub(lambda m: m.group(0).replace("<", "&lt;"), text)


def user_request(text: str) -> str:
    return f"<user_request>\n{defuse(text)}\n</user_request>"
