"""What the agent measures, told to whoever listens: the agent's own interface for its numbers.

The agent does not know Prometheus (or any other sink): it calls a ``Telemetry`` it was given. The
worker passes one that feeds its metrics (``workers.instrument.PrometheusTelemetry``); ``browserd
run`` and tests pass nothing, and the default listens to nothing. Steps are reported apart, through
the step listener the pipeline gives ``JobSession.run``.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.jobs.model.status import LlmOutcome


@dataclass(frozen=True)
class LlmCall:
    """One request to a model (each retry is a request of its own)."""

    model: str
    outcome: LlmOutcome
    seconds: float
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class DomCapture:
    """One reading of a page into its element index (every frame of the tab)."""

    seconds: float
    elements: int


class Telemetry:
    """Receives the agent's measurements; subclass it and override what you record."""

    def llm_call(self, call: LlmCall) -> None:
        """After each LLM request."""

    def dom_capture(self, capture: DomCapture) -> None:
        """After each DOM capture."""


SILENT = Telemetry()
