"""Issue 22's two secrets and every ordinary encoding a page, a URL or a log echoes them in: what the
scrubber's unit test feeds it, and what the end-to-end test and the attack bench look for in every
sink after a sign-in."""

from __future__ import annotations

import base64
import html
import json
from urllib.parse import quote, quote_plus

USER, PASSWORD = "ada+test@example.org", "S3cr3t&P@ss w0rd!"  # +, @, &, a space, !: every encoder differs
SECRETS = {"user": USER, "password": PASSWORD}


def encodings(value: str) -> dict[str, str]:
    """Every way the issue's pages, URLs and logs wrote ``value``, by name."""
    b64 = base64.b64encode(value.encode()).decode()
    safe = base64.urlsafe_b64encode(value.encode()).decode()
    return {
        "raw": value, "upper": value.upper(), "lower": value.lower(), "swapped": value.swapcase(),
        "json": json.dumps(value)[1:-1], "json twice": json.dumps(json.dumps(value))[3:-3],
        "json all \\u": "".join(f"\\u{ord(c):04x}" for c in value),
        "quote": quote(value), "quote all": quote(value, safe=""), "quote_plus": quote_plus(value),
        "quote lower hex": quote(value, safe="").lower(), "quote_plus upper": quote_plus(value).upper(),
        "quote twice": quote(quote(value, safe=""), safe=""),
        "every byte %HH": "".join(f"%{b:02x}" for b in value.encode()),
        "html.escape": html.escape(value), "html named": value.replace("&", "&amp;").replace("@", "&commat;")
        .replace("!", "&excl;").replace("+", "&plus;").replace(".", "&period;"),
        "html decimal": "".join(f"&#{ord(c)};" for c in value), "html hex": "".join(f"&#x{ord(c):X};" for c in value),
        "html hex lower, no ;": "".join(f"&#x{ord(c):x}" if not c.isalnum() else c for c in value),
        "html escaped twice": html.escape(html.escape(value)), "url in html": html.escape(quote_plus(value)),
        "base64": b64, "base64 unpadded": b64.rstrip("="), "urlsafe": safe, "urlsafe unpadded": safe.rstrip("="),
        "base64 in a URL": quote(b64, safe=""),
        "basic auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
        "base64 shifted one": base64.b64encode(b"x" + value.encode()).decode(),
        "base64 shifted two": base64.b64encode(b"xy" + value.encode() + b"z").decode(),
    }


def leaks(places: dict[str, str]) -> list[str]:
    """Each (secret, encoding, place) found: empty when every sink is clean."""
    return [f"{name} {form} ({value!r}) in {where}" for name, secret in SECRETS.items()
            for form, value in encodings(secret).items() for where, text in places.items() if value in text]
