"""A crawl's ``follow`` task: one model call scores the links one page holds, best first.

The crawl's scope, depth and robots rules run before this (``workers.pipeline.features.crawls``),
so whatever the page says to the model, no link outside the crawl's scope can be followed: the
model only narrows. The links (URL and anchor text, both the page's) go to the model numbered,
bounded in count (``MAX_LINKS``) and characters (``URL_CHARS``, ``TEXT_CHARS``), neutralized and
inside the nonce-tagged untrusted wrapper the agent's prompts use for page content, and scrubbed of
the job's secrets (a page may echo one in a link) like every prompt the agent sends.

The answer is trusted only as far as it checks out: a score for every link, each index once, whole
numbers from 0 to 10. Anything else (bad JSON, an index out of range or twice, a score outside the
range, no answer in time) is ``FollowFailed``, carrying what the call cost: the caller falls back to
the scope rules for that page and counts the failure, never failing the page.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

import dom
from workers.agent.config import LlmConfig
from workers.agent.errors import AgentError, LLMOutputError
from workers.agent.llm import LLMReply, Llms, RetryPolicy, ToolSpec, call_structured
from workers.agent.prompts import SECURITY_RULES, follow_system
from workers.agent.secrets import Secrets
from workers.agent.telemetry import Telemetry
from workers.agent.wrapping import user_request
from workers.jobs.model.spec import JobSpec

MAX_LINKS = 200  # links one call scores at most (a page's links past them are not followed)
URL_CHARS = 300  # of each link's URL shown to the model
TEXT_CHARS = 120  # of each link's anchor text shown to the model
MAX_SCORE = 10
RETRY = RetryPolicy(attempts=2, max_delay=5.0)  # one retry: a page's settle is not the place for long waits

SCORES = ToolSpec(
    name="FollowScores",
    description="How well each numbered link serves the crawl's goal, 0 to 10",
    parameters={"type": "object", "properties": {"scores": {"type": "array", "items": {
        "type": "object", "properties": {"index": {"type": "integer"},
                                         "score": {"type": "integer", "minimum": 0, "maximum": MAX_SCORE}},
        "required": ["index", "score"]}}}, "required": ["scores"]},
)


@dataclass(frozen=True)
class FollowLink:
    """A link the crawl may follow: its normalised URL and the anchor text the page gave it."""

    url: str
    text: str


@dataclass(frozen=True)
class FollowUsage:
    """What the follow call cost (its tokens join the page job's totals)."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    @classmethod
    def of(cls, reply: LLMReply | None) -> FollowUsage:
        """A served reply's tokens and requests; none: one request, its tokens unknown."""
        if reply is None:
            return cls(calls=1)
        return cls(reply.input_tokens, reply.output_tokens, reply.attempts)


@dataclass(frozen=True)
class Scores:
    """Each candidate's score, in the candidates' order (those past ``MAX_LINKS``: none)."""

    scores: list[int | None]
    usage: FollowUsage


class FollowFailed(AgentError):
    """The follow call gave no usable scores (failed, timed out, or answered out of shape)."""

    fatal = False

    def __init__(self, message: str, usage: FollowUsage) -> None:
        super().__init__(message)
        self.usage = usage


def follow_messages(task: str, links: list[FollowLink], secrets: Secrets) -> list[Any]:
    """The prompt: the goal as the user's request, the links numbered inside the untrusted wrapper."""
    lines = "\n".join(f"[{i}] {_cut(c.url, URL_CHARS)} | {_cut(' '.join(c.text.split()), TEXT_CHARS) or '(no text)'}"
                      for i, c in enumerate(links[:MAX_LINKS]))
    page = dom.wrap(dom.neutralize(f"Links found on the page (index, URL | anchor text):\n{lines}"))
    return [SystemMessage(follow_system(SECURITY_RULES)),
            HumanMessage(secrets.scrub(f"{user_request(f'Follow links that serve this goal: {task}')}\n{page}"))]


async def score_links(llm: LlmConfig, job: JobSpec, task: str, links: list[FollowLink], *, secrets: Secrets,
                      telemetry: Telemetry) -> Scores:
    """Ask the job's extractor model (its configured model, as ``extract_content`` does) to score
    ``links`` against ``task``; within ``llm.timeout`` for the whole call, retries included.
    ``FollowFailed`` for anything that is not a usable answer."""
    llms = Llms.from_config(llm, job.models, job.options.model_params)
    messages = follow_messages(task, links, secrets)
    shown = min(len(links), MAX_LINKS)
    try:
        async with asyncio.timeout(llm.timeout):
            reply = await call_structured(llms.for_role("extractor"), messages, SCORES, role="extractor",
                                          retry=RETRY, telemetry=telemetry, method=llms.output("extractor"))
    except LLMOutputError as exc:
        reply = exc.reply if isinstance(exc.reply, LLMReply) else None
        raise FollowFailed(f"the model's answer was not JSON scores: {exc}", FollowUsage.of(reply)) from exc
    except TimeoutError as exc:
        raise FollowFailed(f"the model did not answer within {llm.timeout:g}s", FollowUsage(calls=1)) from exc
    except AgentError as exc:
        raise FollowFailed(f"the model call failed: {exc}", FollowUsage(calls=1)) from exc
    usage = FollowUsage.of(reply)
    try:
        scores: list[int | None] = [*checked(reply.data, shown)]
    except ValueError as exc:
        raise FollowFailed(str(exc), usage) from None
    return Scores([*scores, *[None] * (len(links) - shown)], usage)


def checked(data: dict[str, Any], count: int) -> list[int]:
    """The scores of ``count`` links from the answer; ``ValueError`` says why the answer cannot be
    used (a score for every index, each once, whole numbers 0..10)."""
    entries = data.get("scores")
    if not isinstance(entries, list):
        raise ValueError("the answer has no 'scores' list")
    scores: list[int | None] = [None] * count
    for entry in entries:
        index = entry.get("index") if isinstance(entry, dict) else None
        score = entry.get("score") if isinstance(entry, dict) else None
        if not _whole(index) or not 0 <= index < count:
            raise ValueError(f"index {index!r} is not one of the {count} links")
        if scores[int(index)] is not None:
            raise ValueError(f"index {index} was scored twice")
        if not _whole(score) or not 0 <= score <= MAX_SCORE:
            raise ValueError(f"score {score!r} of index {index} is not a whole number from 0 to {MAX_SCORE}")
        scores[int(index)] = int(score)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise ValueError(f"{len(missing)} of the {count} links were not scored (index {missing[0]} first)")
    return [s for s in scores if s is not None]


def _whole(value: Any) -> bool:
    """A whole number (7 or 7.0, as models write them; never true/false)."""
    return not isinstance(value, bool) and (isinstance(value, int) or isinstance(value, float) and value.is_integer())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
