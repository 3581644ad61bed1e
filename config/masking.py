"""URLs with their secrets masked: the one way browserd shows a URL that may carry a credential.

Operators put passwords inside URLs (``redis://:pw@host``, ``rediss://host?password=pw``, an LLM
endpoint's ``?api-key=``, a browser service's ``?token=``, a webhook receiver's ``?sig=``), so every
place that prints or logs one (``browserd config``, the console's settings page, the demo, webhook
logs, the API's access log) passes it through ``mask_url``: the user-info password and every query parameter whose name
looks secret are replaced by ``MASK``; the rest stays as written, so the URL still says where it goes.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "********"
SECRET_PARAM = re.compile(r"pass|pwd|secret|token|key|auth|sig|cred|session|cookie|private", re.IGNORECASE)
"""A query parameter whose name holds one of these (password, passwd, api-key, api_key, apikey,
access_token, auth, sig, signature, X-Amz-Credential, ...) is a secret; too many masked beats one shown."""


def secret_param(name: str) -> bool:
    return bool(SECRET_PARAM.search(unquote(name)))


def _masked_query(query: str) -> str:
    parts = []
    for item in query.split("&"):
        name, sep, value = item.partition("=")
        parts.append(f"{name}={MASK}" if value and secret_param(name) else item)
    return "&".join(parts)


def mask_url(value: str) -> str:
    """``redis://u:pw@host/0?password=pw&db=1`` -> ``redis://u:********@host/0?password=********&db=1``;
    a request target (``/ui/?token=t``) has its query masked alike; other text is returned as it is.
    A list of URLs separated by ``;`` (kombu's Sentinel form, ``sentinel://:pw@h1;sentinel://:pw@h2``)
    has each masked."""
    if ";" in value and value.count("://") > 1:
        return ";".join(_mask_one(part) for part in value.split(";"))
    return _mask_one(value)


def _mask_one(value: str) -> str:
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    target = value.startswith("/") and not value.startswith("//")
    if not (parts.scheme or target) or not (parts.netloc or parts.query):
        return value
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if sep else f"{MASK}@{host}"
    return urlunsplit(parts._replace(netloc=netloc, query=_masked_query(parts.query) if parts.query else ""))
