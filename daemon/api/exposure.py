"""Who can reach the API: refuse to listen beyond this machine without a token.

``browserd serve`` on a loopback address with no token is a developer's machine; on any other
address every process that can reach the port (a job's browser included) would drive the API, so
it refuses to start unless ``BROWSERD_API_TOKEN`` is set, or ``BROWSERD_API_INSECURE=1`` says the
operator means it (then it says so, loudly, at every start).
"""

from __future__ import annotations

import logging

from config import ConfigError, Settings
from config.api_hosts import is_loopback

log = logging.getLogger("browserd.api")


class ExposedWithoutToken(ConfigError):
    """``serve`` would listen beyond loopback with no token."""


def check_exposure(host: str, settings: Settings) -> None:
    """Raise ``ExposedWithoutToken`` for a non-loopback bind without a token, unless overridden."""
    if settings.api_token is not None or is_loopback(host):
        return
    if settings.api_insecure:
        log.warning("SECURITY: the API listens on %s with NO TOKEN (BROWSERD_API_INSECURE=1): anyone who can "
                    "reach this port can submit jobs, read results and cancel work; it answers only the Host names "
                    "BROWSERD_ALLOWED_HOSTS lists (and loopback ones)", host)
        return
    raise ExposedWithoutToken(
        f"refusing to serve the API on {host} without a token: set BROWSERD_API_TOKEN (a long random string), "
        "bind a loopback address (BROWSERD_API_HOST=127.0.0.1), or set BROWSERD_API_INSECURE=1 if the network "
        "in front of it does the authentication")
