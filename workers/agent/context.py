"""What the actions of one job share: the browser, the models, the data gathered so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.agent.allowance import LlmAllowance
from workers.agent.artifacts import ArtifactRecorder
from workers.agent.browser import AgentBrowser
from workers.agent.cancel import CancelToken
from workers.agent.config import AgentConfig
from workers.agent.events import Events
from workers.agent.findings import Findings
from workers.agent.llm import Llms
from workers.agent.outcome import Outcome
from workers.agent.pause import PauseGate
from workers.agent.proxies import ProxyRotation
from workers.agent.secrets import Secrets
from workers.agent.telemetry import Telemetry
from workers.agent.uploads import Uploads
from workers.jobs.model.result import Verification
from workers.jobs.model.spec import JobSpec


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
    config: AgentConfig
    browser: AgentBrowser
    cancel: CancelToken
    llms: Llms | None = None
    data: Any = None
    final_answer: str | None = None
    success: bool | None = None
    outcome: Outcome | None = None  # what the navigator's last done said, until the planner rules on it
    evidence: list[str] = field(default_factory=list)  # the quotes the navigator's last done gave
    verification: Verification | None = None  # how the run's accepted (or last refused) claim was checked
    findings: Findings = field(default_factory=Findings)
    usage: Usage = field(default_factory=Usage)
    allowance: LlmAllowance = field(default_factory=LlmAllowance)  # the job's LLM budget, follow-ups included
    events: Events = field(default_factory=Events)
    secrets: Secrets = field(default_factory=Secrets)
    artifacts: ArtifactRecorder | None = None  # its screenshots under way finish before each action
    pause: PauseGate = field(default_factory=PauseGate)
    task_text: str | None = None  # the task of the current run: a follow-up's, or None for the spec's
    uploads: Uploads | None = None  # the job's input files on disk: the only files upload_file can set
    proxies: ProxyRotation | None = None  # the job's proxy pool: a blocked_by_site moves it to another proxy

    @property
    def task(self) -> str:
        return self.task_text if self.task_text is not None else (self.spec.task or "")

    @property
    def telemetry(self) -> Telemetry:
        return self.browser.telemetry

    def next_run(self, task: str, events: Events) -> None:
        """Start a follow-up: same browser, models and memory notes; its own answer, data and events."""
        self.task_text = task
        self.data = self.final_answer = self.success = self.outcome = self.verification = None
        self.evidence = []
        self.findings = Findings(notes=list(self.findings.notes))
        self.usage = Usage()
        self.events = events

    def has_findings(self) -> bool:
        """Whether anything was found that a partial result should keep."""
        return self.data is not None or bool(self.findings) or bool(self.final_answer)


@dataclass
class ActionResult:
    """What an action tells the model; ``done`` ends the navigator's sequence (and the task), ``stop``
    only the sequence (``request_human``: the job waits before anything else runs)."""

    text: str
    done: bool = False
    stop: bool = False
