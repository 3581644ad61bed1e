"""The agent loop (Nanobrowser's executor): capture → planner (every few steps, and to confirm
done) → navigator → actions → step record, until the planner confirms the task is complete.

Failures of a step (an unusable answer, a failed action, a step timeout) are counted; the job
fails after ``max_failures`` in a row, or after ``max_steps``. Errors that retrying cannot fix
(LLM auth, a blocked URL, cancel) end the job at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from config import bind, note
from workers.agent.actions import run_action
from workers.agent.config import AgentConfig
from workers.agent.context import JobContext, Usage
from workers.agent.deadline import step_clock
from workers.agent.errors import (
    AgentError,
    LLMOutputError,
    MaxFailuresReached,
    MaxStepsReached,
    StepTimeout,
    Stuck,
    TaskNotDone,
    Unverified,
)
from workers.agent.events import Actor, ExecutionState
from workers.agent.llm import Answer, LLMReply
from workers.agent.loops import LoopVerdict, LoopWatch, actions_fingerprint
from workers.agent.proxies import BlockReason
from workers.agent.memory import summarize
from workers.agent.messages import MessageManager
from workers.agent.navigator import (
    ActionReport,
    NavigatorOutput,
    ListedTab,
    format_results,
    next_actions,
    reduced_state,
    state_message,
)
from workers.agent.outcome import EXPLANATIONS, Outcome
from workers.agent.planner import PlannerOutput, plan
from workers.agent.prompts import SECURITY_RULES, human_note, loop_nudge, navigator_system
from workers.agent.recorder import StepLog
from workers.agent.second_opinion import second_opinion
from workers.agent.validator import Sightings, Verdict, claim_of, judge
from workers.agent.vision import WITHHELD, Screenshot, look
from workers.jobs.model.actions import ParsedAction
from workers.jobs.model.result import StepRecord
from workers.jobs.model.spec import JobSpec

log = logging.getLogger("browserd.agent")

CUT_BY_THE_JOB = "the job was stopped during this step (its time limit, or its run ended)"
"""The error of a step the job's own end cut short; the job's result says which limit, with its number."""
REPORT_GRACE = 5.0  # seconds such a step's report (its event, its stream entry) may take past the job's end
MAX_REJECTIONS = 2  # claims of done refused (the agent told why) before the next refused one ends the job


@dataclass(frozen=True)
class Options:
    max_steps: int
    planning_interval: int
    max_failures: int
    max_actions_per_step: int
    max_input_tokens: int
    step_timeout: float
    memory_interval: int = 0
    use_vision: bool = False
    use_vision_for_planner: bool = False

    @property
    def screenshots(self) -> bool:
        """Whether a step takes a screenshot: some role reads it."""
        return self.use_vision or self.use_vision_for_planner

    @classmethod
    def for_job(cls, spec: JobSpec, config: AgentConfig) -> Options:
        """The job's own options, each unset one the configured default's."""
        o, defaults = spec.options, config.defaults

        def pick(name: str) -> int:
            value = getattr(o, name)
            return getattr(defaults, name) if value is None else value

        step_timeout = config.llm.step_timeout or max(60.0, 2 * config.llm.timeout + 60)
        return cls(pick("max_steps"), pick("planning_interval"), pick("max_failures"), pick("max_actions_per_step"),
                   pick("max_input_tokens"), step_timeout=step_timeout,
                   memory_interval=o.memory_interval, use_vision=o.use_vision,
                   use_vision_for_planner=o.use_vision_for_planner)


def agent_history(ctx: JobContext) -> MessageManager:
    """A new history for the planner/navigator loop, starting with the job's task."""
    options = Options.for_job(ctx.spec, ctx.config)
    system = navigator_system(SECURITY_RULES, options.max_actions_per_step)
    files = ctx.uploads.task_note() if ctx.uploads is not None else ""
    task = ctx.task + ctx.secrets.task_note() + files + human_note(ctx.pause.human.allowed)
    return MessageManager(system, task, max_input_tokens=options.max_input_tokens)


async def run_agent(ctx: JobContext, log: StepLog, messages: MessageManager | None = None, *,
                    hint: dict[str, Any] | None = None, first_step: int = 1) -> None:
    """Run the loop on ``messages`` (a kept session's history), or on a new history. A recipe replay
    that hands over part-way gives the ``hint`` (a plan: what the recipe did next), read as the
    planner's first plan, and numbers steps on from its own."""
    options = Options.for_job(ctx.spec, ctx.config)
    messages = messages or agent_history(ctx)
    if hint is not None:
        messages.add_plan(hint)
    await AgentLoop(ctx, log, options, messages, first_step=first_step).run()


class AgentLoop:
    def __init__(self, ctx: JobContext, log: StepLog, options: Options, messages: MessageManager, *,
                 first_step: int = 1) -> None:
        self.ctx, self.log, self.options, self.messages = ctx, log, options, messages
        self.first_step = first_step  # the number of the loop's first step record (after replayed steps)
        self.results: list[ActionReport] = []  # the last step's results, shown in the next state
        self.failures = 0
        self.last_failure: AgentError | None = None  # the error of the last failed step
        self.navigator_done = False
        self.summarized_through = first_step - 1  # the last step a procedural-memory summary covers
        self.seen = Sightings()  # every page the loop captured: what a claim of done is checked against
        self.rejections = 0  # claims of done the checks refused so far
        self.loops = LoopWatch()  # repeated actions on an unchanged page: a nudge, then ``stuck``
        self.notes: list[str] = []  # browserd's own notices for the next state message (a loop's nudge)
        # what a human did or sent (workers.agent.human): browserd's own words, shown outside the page's
        # untrusted block (a placeholder there would be neutralized like page text)
        self.notices: list[str] = []
        self.page_now = ""  # the last captured page's URL, title and text, for the validator model

    async def run(self) -> None:
        for number in range(self.first_step, self.first_step + self.options.max_steps):
            await self.ctx.pause.hold(self.ctx.cancel, self.ctx.events)
            self.notes += self.ctx.pause.human.take_notes()
            self.notices += self.ctx.pause.human.take_notices()
            self.ctx.cancel.check("before a step")
            step = StepRecord(step=number)
            with bind(step=number):
                finished = await self._step_within_limit(step)
            if finished:
                return
            if self.failures >= self.options.max_failures:
                raise MaxFailuresReached(self.failures, step.error or "", self.last_failure)
        raise self._out_of_steps()

    def _out_of_steps(self) -> AgentError:
        """``max_steps``, or ``incomplete`` when something was found: the result keeps it."""
        if not self.ctx.has_findings():
            return MaxStepsReached(self.options.max_steps)
        return TaskNotDone(Outcome.incomplete,
                           f"the task was not completed within {self.options.max_steps} steps; "
                           "the findings so far are kept", self.ctx.final_answer or "")

    async def _step_within_limit(self, step: StepRecord) -> bool:
        """One step under its time limit, recorded and reported whatever happens."""
        events = self.ctx.events
        events.step = step.step
        await events.emit(Actor.navigator, ExecutionState.STEP_START)
        try:
            with step_clock(step.step, self.options.step_timeout) as clock:
                limit = asyncio.timeout_at(clock.deadline)
                try:
                    async with limit:  # its expiry surfaces as TimeoutError here, at the block's exit
                        finished = await self._step(step)
                except TimeoutError:
                    if not limit.expired():
                        raise
                    finished = False
                    self._failed(step, clock.expired())
                except StepTimeout as exc:  # a model call gave up retrying: the deadline would cut the next try
                    finished = False
                    self._failed(step, exc)
        except AgentError as exc:
            step.error = step.error or str(exc)
            await self._record(step)
            await events.emit(Actor.navigator, ExecutionState.STEP_FAIL, step.error)
            raise
        except asyncio.CancelledError:  # the job's own time limit (or its task's end) stopped the step
            step.error = step.error or CUT_BY_THE_JOB
            with contextlib.suppress(TimeoutError):  # kept at once; its report may not hold up the job's end
                async with asyncio.timeout(REPORT_GRACE):
                    await self._record(step)  # with the calls it made: their tokens were served and are paid for
            raise
        await self._record(step)
        await events.emit(Actor.navigator, *((ExecutionState.STEP_FAIL, step.error) if step.error
                                             else (ExecutionState.STEP_OK, "")))
        return finished

    # --- one step --------------------------------------------------------------------------

    async def _capture(self, step: StepRecord) -> Any:
        """The page state at the start of a step, timed into the step record, and what the page did
        since the last one (the start URL's dialogs, a timer's alert) noted for the model."""
        page_events = await self.ctx.browser.page_events()
        step.dialogs += page_events.dialogs
        self.results += [ActionReport(True, note) for note in page_events.notes]
        started = time.monotonic()
        state = await self.ctx.browser.capture()
        step.dom_seconds = round(time.monotonic() - started, 4)
        step.url, step.elements = state.url, len(state.elements)
        self.seen.saw(state.url, state.title, state.to_prompt(wrapped=False), state.text(),
                      [label for e in state.elements.values() for label in (e.name, e.text) if label])
        for document in self.ctx.browser.documents_read():  # a PDF read is a page the job saw
            self.seen.saw(document.url, "", "", document.text, [])
        self.page_now = f"{state.url}\n{state.title}\n{state.text()}"
        note(url=self.ctx.secrets.scrub(state.url))  # log lines carry it
        return state

    async def _look(self, step: StepRecord, state: Any) -> Screenshot | None:
        """With vision, the step's screenshot (timed into the capture's seconds); None without, or
        when the page shows a secret (the model is told why there is none)."""
        if not self.options.screenshots:
            return None
        started = time.monotonic()
        shot = await look(self.ctx.browser.page, state, self.ctx.secrets)
        step.dom_seconds = round(step.dom_seconds + time.monotonic() - started, 4)
        if shot is None:
            self.results.append(ActionReport(True, WITHHELD))
        return shot

    async def _show(self, step: StepRecord, state: Any, *notes: str, screenshot: bool = True) -> str:
        """Add the step's state message (with the last step's results, and the screenshot unless
        ``screenshot`` is False: no model reads it this step); returns its reduced form."""
        browser = self.ctx.browser
        image = await self._look(step, state) if screenshot else None
        tabs = [ListedTab(t.id, (info := await t.page.info())["url"], info["title"]) for t in await browser.tabs()]
        previous = [*format_results(self.results), *notes]
        self.results = []
        self.messages.set_memory(self.ctx.findings.notes)
        scrub = self.ctx.secrets.scrub  # what the page echoes of a typed secret goes back to its placeholder
        notices, self.notices = "".join(f"\n[browserd] {notice}" for notice in self.notices), []
        self.messages.add_state(scrub(state_message(state, tabs, browser.tab_id(browser.page), step.step,
                                                    self.options.max_steps, previous) + notices), image)
        return scrub(reduced_state(step.step, state.url, state.title, previous))

    async def _step(self, step: StepRecord) -> bool:
        """One step; True when the planner has confirmed the task is complete."""
        ctx = self.ctx
        state = await self._capture(step)
        planning = (self.nth(step) - 1) % self.options.planning_interval == 0 or self.navigator_done
        notes, self.notes = self.notes, []
        summary = await self._show(step, state, *notes, screenshot=self.options.use_vision or planning)
        if planning:
            self.navigator_done = False
            if await self._plan(step):
                return True
        try:
            answer = await next_actions(ctx, self.messages, self.options.max_actions_per_step)
        except LLMOutputError as exc:
            self._charge_unusable(step, exc, images=self.options.use_vision)
            self.messages.reduce_last_state(summary)
            self.results = [ActionReport(False, f"Invalid model output: {exc}")]
            self._failed(step, exc)
            return False
        output = answer.output
        self._charge(step, answer.reply, images=self.options.use_vision)
        step.brain = output.brain()  # scrubbed of secrets with the rest of the step (StepLog.add)
        self.messages.reduce_last_state(summary)
        self.messages.add_model_output(output.raw)
        failed = await self._act(step, output, state.url)
        if failed is None:
            self.failures = 0
        else:
            self._failed(step, failed)
        self._watch(state, output)
        if self.navigator_done and self.nth(step) == self.options.max_steps:
            return await self._plan(step)  # the last step: confirm now, there is no next one
        await self._remember(step)
        return False

    async def _remember(self, step: StepRecord) -> None:
        """Every ``memory_interval`` steps, a summary replaces the steps since the last one."""
        interval = self.options.memory_interval
        if not interval or self.nth(step) % interval or self.nth(step) == self.options.max_steps:
            return
        reply = await summarize(self.ctx, self.messages, self.summarized_through + 1, step.step)
        if reply is not None:
            self._charge(step, reply)
            self.summarized_through = step.step

    async def _plan(self, step: StepRecord) -> bool:
        """Run the planner; True when it confirms completion. A bad plan counts as a failure."""
        events = self.ctx.events
        await events.emit(Actor.planner, ExecutionState.STEP_START)
        try:
            answer = await self._ask_planner()
        except LLMOutputError as exc:
            self._charge_unusable(step, exc, images=self.planner_sees_images)
            self._failed(step, exc)
            await events.emit(Actor.planner, ExecutionState.STEP_FAIL, str(exc))
            return False
        output = answer.output
        self._charge(step, answer.reply, images=self.planner_sees_images)
        step.plan = output.model_dump(mode="json")
        refused = await self._refused(step, output)
        self.messages.add_plan(step.plan if refused is None else refused_plan(step.plan, refused))
        await events.emit(Actor.planner, ExecutionState.STEP_OK, output.observation)
        if refused is not None:
            await events.emit(Actor.planner, ExecutionState.NEXT_STEPS, f"done refused: {refused}")
            return False
        if output.done:
            await events.emit(Actor.planner, ExecutionState.FINAL_ANSWER, output.final_answer)
        elif output.next_steps:
            await events.emit(Actor.planner, ExecutionState.NEXT_STEPS, output.next_steps)
        return self._confirmed(output)

    async def _refused(self, step: StepRecord, output: PlannerOutput) -> str | None:
        """Why a claim that the task is complete is refused (None: no such claim, or it is shown).

        The claim is checked against what the run recorded (``workers.agent.validator``), never on
        the model's word, then, if one is configured, by the validator model
        (``workers.agent.second_opinion``); a refusal is told to the agent, which goes on, until
        ``MAX_REJECTIONS`` refusals (or the last step): then the job ends ``unverified``."""
        ctx = self.ctx
        if not output.done or self._outcome(output) is not Outcome.complete:
            return None
        answer = output.final_answer or ctx.final_answer or ""
        claim = claim_of(ctx.task, answer, [*output.evidence, *ctx.evidence], output.next_steps,
                         [*self.log.steps, step])
        verdict = judge(claim, self.seen)
        if verdict.accepted and ctx.llms is not None and ctx.llms.validator is not None:
            opinion = await second_opinion(ctx, claim, self.page_now)
            if opinion.reply is not None:
                self._charge(step, opinion.reply)
            verdict = Verdict(opinion.valid, [*verdict.checks, *(["validator_model"] if opinion.valid else [])],
                              "" if opinion.valid else opinion.reason)
        step.verification = ctx.verification = verdict.record(self.rejections)
        log.info("done %s: %s", "accepted" if verdict.accepted else "refused",  # the reason may quote the page
                 ", ".join(verdict.checks) if verdict.accepted else ctx.secrets.scrub(verdict.reason))
        if verdict.accepted:
            return None
        self.rejections += 1
        ctx.outcome, ctx.evidence = None, []
        if self.rejections > MAX_REJECTIONS or self.nth(step) == self.options.max_steps:
            ctx.final_answer = answer or None
            raise Unverified(verdict.reason, self.rejections)
        return verdict.reason

    @property
    def planner_sees_images(self) -> bool:
        return self.options.use_vision_for_planner

    async def _ask_planner(self) -> Answer[PlannerOutput]:
        return await plan(self.ctx, self.messages)

    def _confirmed(self, output: PlannerOutput) -> bool:
        """Whether the planner ends the task; raises ``TaskNotDone`` when it ends without completing it.

        A failure reason from either model wins: the planner confirming a navigator that gave up
        (done with success false) ends the job with the navigator's reason.
        """
        ctx = self.ctx
        if not output.done:
            ctx.outcome = None  # the navigator's claim is overruled: it goes on
            return False
        ctx.final_answer = output.final_answer or ctx.final_answer
        outcome = self._outcome(output)
        if outcome is Outcome.blocked_by_site and ctx.proxies is not None and ctx.proxies.blocked(BlockReason.blocked_by_site):
            ctx.outcome = None  # the pool moved the job to another proxy: it tries again (the gate's notice says so)
            return False
        if outcome is not Outcome.complete:
            raise TaskNotDone(outcome, EXPLANATIONS[outcome], ctx.final_answer or "")
        return True

    def _outcome(self, output: PlannerOutput) -> Outcome:
        """How a done ends the task: the planner's reason, else the navigator's, else complete."""
        return output.outcome if output.outcome is not Outcome.complete else (self.ctx.outcome or Outcome.complete)

    async def _act(self, step: StepRecord, output: NavigatorOutput, url_seen: str) -> AgentError | None:
        """Run the answer's actions in order; returns the failure that stopped them, if any."""
        ctx = self.ctx
        page_seen = ctx.browser.page.target_id
        for i, bound in enumerate(output.actions):
            if i > 0:
                reason = await self._changed(step, bound.action.targets_element(bound.params), url_seen, page_seen)
                if reason:
                    self.results.append(ActionReport(True, f"{reason} after action {i}/{len(output.actions)}; "
                                                     f"the remaining {len(output.actions) - i} actions were not run"))
                    break
            ran = await run_action(ctx, bound.action, bound.params)
            step.actions.append(ran.record)
            step.dialogs += ran.dialogs
            step.action_seconds = round(step.action_seconds + ran.record.seconds, 4)
            self.log.charge(step, ctx.usage.take())
            if ran.error is not None:
                if ran.error.fatal:
                    raise ran.error
                self.results.append(ActionReport(False, str(ran.error)))
                return ran.error
            assert ran.result is not None
            self.results.append(ActionReport(True, ran.result.text))
            if ran.result.done:
                self.navigator_done = True
                break
            if ran.result.stop:
                break
        return None

    async def _changed(self, step: StepRecord, needs_state: bool, url_seen: str, page_seen: str) -> str | None:
        """Why the rest of the sequence must not run: the page is not the one the model saw."""
        browser = self.ctx.browser
        self.ctx.cancel.check("between actions")
        if browser.page.target_id != page_seen:
            return "the current tab changed"
        if await browser.page.url() != url_seen:
            return "the page changed"
        if needs_state:
            started = time.monotonic()
            state = await browser.capture()
            step.dom_seconds = round(step.dom_seconds + time.monotonic() - started, 4)
            if state.new_indexes:
                return "new elements appeared"
        return None

    def _watch(self, state: Any, output: NavigatorOutput) -> None:
        """A step that repeats what was done on the same unchanged page: the model is told once, in
        its next prompt; repeating on after that ends the job as ``stuck`` (``workers.agent.loops``)."""
        if self.navigator_done or not output.actions:
            return
        acted = actions_fingerprint([ParsedAction(bound.action.name, bound.params) for bound in output.actions])
        if acted is None:  # only waiting, noting or reading: not watched
            return
        verdict = self.loops.saw(state.fingerprint(), acted)
        if verdict is LoopVerdict.nudge:
            log.info("loop noticed: the model is told")
            self.notes.append(loop_nudge(self.loops.repeats_before_nudge))
        elif verdict is LoopVerdict.stuck:
            raise Stuck(self.loops.total)

    # --- bookkeeping -----------------------------------------------------------------------

    def nth(self, step: StepRecord) -> int:
        """Which of this loop's steps ``step`` is (1 for its first), whatever its record's number."""
        return step.step - self.first_step + 1

    async def _record(self, step: StepRecord) -> None:
        """Keep the step, charged with what its actions' model calls cost that no action charged yet
        (an extraction the step's limit cut between two chunks, whose first call was served)."""
        self.log.charge(step, self.ctx.usage.take())
        await self.log.add(step)

    def _charge(self, step: StepRecord, reply: LLMReply, *, images: bool = False) -> None:
        """Add a call's cost to the step; ``images``: the call was sent the history's screenshot,
        whose estimated tokens are shown apart (they are inside the provider's input count)."""
        self.log.charge(step, Usage(reply.input_tokens, reply.output_tokens, reply.seconds, calls=1))
        image = self.messages.image if images else None
        step.image_tokens += image.tokens if image is not None else 0

    def _charge_unusable(self, step: StepRecord, error: LLMOutputError, *, images: bool = False) -> None:
        """Charge the call of an answer that could not be used: it was served all the same."""
        if isinstance(error.reply, LLMReply):
            self._charge(step, error.reply, images=images)

    def _failed(self, step: StepRecord, error: AgentError) -> None:
        self.failures += 1
        self.last_failure = error
        step.error = str(error)


def refused_plan(plan: dict[str, Any], reason: str) -> dict[str, Any]:
    """The plan as the navigator reads it after its claim of done was refused: not done, and why."""
    return {**plan, "done": False, "final_answer": "",
            "next_steps": f"browserd refused the claim that the task is done: {reason}. Continue the task; "
                          "when it is really done, put exact quotes from the page in evidence."}
