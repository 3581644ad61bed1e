"""The isolation layers of a host's browsers, by name: measured by the pool (``cdp.isolation``), sent
in the worker's heartbeat, shown by ``/readyz``, ``browserd doctor`` and ``browserd_isolation_layer``.

Kept here, below both ``cdp`` and ``workers.jobs``, so every one of them names a layer the same way.
"""

from __future__ import annotations

from enum import Enum

CHROME_USER = "browserd-chrome"
"""The unprivileged user a root worker runs Chrome as (``BROWSERD_CHROME_USER``'s default)."""


class IsolationLayer(str, Enum):
    """One wall between a hostile page and the worker's host; each is 1 (active) or 0 on a host."""

    namespace = "namespace"  # the browser's own network namespace: loopback only, its gates its one way out
    sandbox = "sandbox"  # Chrome's renderer sandbox (no --no-sandbox)
    separate_user = "separate_user"  # Chrome runs as its own unprivileged user, not the worker's
    webrtc_policy = "webrtc_policy"  # managed policy: WebRTC sends no UDP that is not proxied
    network_service_watch = "network_service_watch"  # a restarted network service recycles its browser
    minimal_environment = "minimal_environment"  # Chrome inherits no key or token of the worker


HEARTBEAT_FIELD = "isolation"
"""The field of a worker's heartbeat record holding its browsers' layers (``encode_layers``)."""


def encode_layers(active: dict[IsolationLayer, bool]) -> str:
    """``namespace=1,sandbox=0,…``: every layer, in one heartbeat field."""
    return ",".join(f"{layer.value}={int(bool(active.get(layer)))}" for layer in IsolationLayer)


def decode_layers(text: str) -> dict[IsolationLayer, bool]:
    """The layers of an ``encode_layers`` field (names unknown to this version are skipped)."""
    known = {layer.value: layer for layer in IsolationLayer}
    pairs = (part.partition("=") for part in text.split(",") if part)
    return {known[name]: value == "1" for name, _, value in pairs if name in known}
