"""Which isolation layers a pool's browsers have on this host, and why a missing one is missing.

The pool builds an ``IsolationReport`` from what it really got (a namespace that was created, the
confinement its launches used, the network-service watches that found their process); the worker's
heartbeat carries it to ``/readyz``, its ``/metrics`` export it as ``browserd_isolation_layer{layer}``,
and ``browserd doctor`` prints it. docs/security.md says what each layer stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from config.isolation import IsolationLayer, encode_layers


@dataclass(frozen=True)
class IsolationReport:
    """``active[layer]`` for every layer; ``off[layer]``: why an inactive one is off."""

    active: dict[IsolationLayer, bool]
    off: dict[IsolationLayer, str] = field(default_factory=dict)

    @property
    def missing(self) -> list[IsolationLayer]:
        return [layer for layer in IsolationLayer if not self.active.get(layer)]

    def encode(self) -> str:
        """The heartbeat field (``config.isolation.encode_layers``)."""
        return encode_layers(self.active)

    def describe(self) -> str:
        """One log line: what is on, what is off and why."""
        on = [layer.value for layer in IsolationLayer if self.active.get(layer)]
        off = [f"{layer.value} ({self.off.get(layer, 'off')})" for layer in self.missing]
        return f"isolation layers active: {', '.join(on) or 'none'}" + (f"; off: {'; '.join(off)}" if off else "")


def attached_report() -> IsolationReport:
    """Browsers attached by ``BROWSERD_CDP_URLS``: none of the layers is browserd's to give."""
    why = "an attached browser (BROWSERD_CDP_URLS) is the operator's to isolate (docs/security.md)"
    return IsolationReport(dict.fromkeys(IsolationLayer, False), dict.fromkeys(IsolationLayer, why))
