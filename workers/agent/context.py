"""What the actions of one job share: the browser, the models, the data gathered so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from config import Settings
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.llm import Llms
from workers.models import JobSpec


@dataclass
class Usage:
    """LLM cost accumulated by actions (extract_content), moved into the step record."""

    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    calls: int = 0

    def add(self, input_tokens: int, output_tokens: int, seconds: float) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.seconds += seconds
        self.calls += 1

    def take(self) -> Usage:
        taken = Usage(self.input_tokens, self.output_tokens, self.seconds, self.calls)
        self.input_tokens = self.output_tokens = self.calls = 0
        self.seconds = 0.0
        return taken


@dataclass
class JobContext:
    spec: JobSpec
    settings: Settings
    browser: AgentBrowser
    cancel: CancelToken
    llms: Llms | None = None
    data: Any = None
    final_answer: str | None = None
    success: bool | None = None
    memory: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def task(self) -> str:
        return self.spec.task or ""


@dataclass
class ActionResult:
    """What an action tells the model; ``done`` ends the navigator's sequence."""

    text: str
    done: bool = False
    include_in_memory: bool = False
