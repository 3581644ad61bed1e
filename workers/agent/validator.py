"""A success must be shown, not said: the deterministic checks of a model's ``done``.

The planner's confirmation is the model's own word; a small model confirms at once, before any
action, with a made-up or template answer (issue 24: 9 of 20 MiniWoB++ jobs "succeeded" so). So
before a job may succeed, its claim is checked against what browserd itself recorded during the
run: the pages the agent saw (``Sightings``), the actions that ran, the data extracted. A check
that fails gives the agent its reason and another step (``AgentLoop`` bounds the rejections); what
still cannot be shown ends the job ``unverified``, never ``succeeded``.

Deterministic and cheap by design: substring and word checks on normalised text (case, spacing
and punctuation ignored), no model. An honest answer passes one of the grounding paths: its
``evidence`` quotes appear on a page that was seen, its words and figures are on such a page,
data was extracted, or (a task that only asks to act) the actions touched what the task names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from workers.agent.actions.cdp_input import presses_keys
from workers.jobs.model.result import ActionRecord, Verification

MAX_PAGE_CHARS = 200_000  # of one page's text kept for the checks (a longer page is cut)
MAX_PAGES = 200  # distinct page texts kept per run; the oldest go first
MAX_QUOTES, MAX_QUOTE_CHARS = 20, 1000  # evidence checked per claim (the rest is not read)
MAX_LABELS, MAX_LABEL_CHARS = 5000, 200  # element labels kept per run, characters of each

_NON_WORD = re.compile(r"[^0-9a-z]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[a-z][a-z'-]{2,}")

# A task that asks to do something on the page (not only to read it): an imperative verb where a
# clause starts ("Type ..., press Search, and tell me", "to find and click"), not "which page is open?".
_CLAUSE = r"(?:^|[,;:.!?]\s*|\b(?:and|then|to|please|first|now|by)\s+)"
_ACTS = re.compile(
    _CLAUSE +
    r"(click|tap|press|type|enter|fill|submit|select|choose|pick|check|uncheck|tick|toggle|drag|drop|close|"
    r"add|remove|delete|buy|order|book|log ?in|sign ?(in|up)|subscribe|upload|send|post|reply|switch|mark|"
    r"search for|go to|navigate|open|focus|expand|collapse|highlight|move|set|scroll|use the|input|copy|paste)"
    r"(?:ing|s)?\b", re.I)
# A task that asks to put values into the page ("Search for drama movies directed by Smith", "Enter
# the value of Color into the text field", "fill in the form"): something must have been typed or chosen.
_FILLS = re.compile(_CLAUSE + r"(type|enter|fill|input|search)(?:ing|e?s)?\b", re.I)
# A task that asks for information the answer must carry.
_ASKS = re.compile(
    r"(\?|\b(what|which|who|whom|whose|when|where|how (many|much|long|old)|tell me|find out|report|list|"
    r"extract|give me|return|name the|price|cost|count|number of|summari[sz]e|describe|explain|compare)\b)",
    re.I)

# Answers that are no answer: echoes of the prompt's template, filler, refusals.
_EMPTY_ANSWERS = re.compile(
    r"(the complete answer|\(only when done\)|brief analysis of|high-level next steps|your (final )?answer|"
    r"<answer>|\banswer here\b|please make sure|lorem ipsum|\bplaceholder\b|as an ai\b|"
    r"\bi(?: a|')?m (sorry|unable|not able)|\bi am (sorry|unable|not able)|\bi (cannot|can ?not|can't|could not|"
    r"couldn't) (help|assist|do|complete|access|browse|perform|find)|\bi do ?n[o']t (know|have access)|"
    r"\bunable to (assist|help|comply|access|browse)|\bno answer\b)", re.I)

PASSIVE = frozenset({"wait", "cache_content", "extract_content", "extract_fields", "get_dropdown_options"})
SCROLLS = frozenset({"next_page", "previous_page", "scroll_to_top", "scroll_to_bottom", "scroll_to_percent",
                     "scroll_to_text"})
_QUOTED = re.compile(r'"([^"]{1,200})"|\u201c([^\u201d]{1,200})\u201d')
_STOP = frozenset(
    "the and for are was were that this with from into onto have has had not but you your our its their then "
    "than there here they them what which who whom whose when where how all any each task page done answer "
    "complete completed final shown show been being also just only will would can could should about".split())


def normal(text: str) -> str:
    """``text`` lower-cased, every run of non-alphanumerics one space: markup, case, spacing and
    punctuation ("$12.99" vs "12.99", a quote across two elements) do not decide a match."""
    return " " + _NON_WORD.sub(" ", text.lower()).strip() + " "


def numbers(text: str) -> set[str]:
    """The figures in ``text``, normalised as ``normal`` writes them ("12.99" -> "12 99")."""
    return {normal(n).strip() for n in _NUMBER.findall(text)}


def words(text: str) -> set[str]:
    """Content words of ``text`` (three letters or more, not a stop word)."""
    return {w.strip("'-") for w in _WORD.findall(text.lower())} - _STOP


@dataclass
class Sightings:
    """What the agent saw during the run, kept for the checks: each captured page's URL, title,
    element index and readable text (normalised), the first page apart."""

    pages: list[str] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)  # the names and texts of the elements offered, normalised
    first: str | None = None
    blank: bool = True  # nothing but empty pages so far (a non-web question needs no page)

    def saw(self, url: str, title: str, index: str, text: str, labels: list[str]) -> None:
        """Keep one capture: its URL, title, element index and text, and its elements' labels."""
        seen = normal(f"{url}\n{title}\n{index}\n{text}"[:MAX_PAGE_CHARS])
        if len(self.labels) < MAX_LABELS:
            self.labels.update(n for n in (normal(label[:MAX_LABEL_CHARS]) for label in labels) if n.strip())
        if self.first is None:
            self.first = seen
        if url not in ("about:blank", "") or text.strip():
            self.blank = False
        if seen not in self.pages:
            self.pages.append(seen)
            del self.pages[:-MAX_PAGES]

    def has(self, quote: str) -> bool:
        """Whether ``quote`` is on a page seen; a quote of a few characters only as whole words."""
        needle = normal(quote)
        if len(needle.strip()) > 3:
            needle = needle.strip()
        return needle.strip() != "" and any(needle in page for page in self.pages)

    def has_figure(self, figure: str) -> bool:
        """Whether the figure is on a page seen, as a number of its own (a unit may follow: "1.7l")."""
        pattern = re.compile(r"(?<![0-9a-z])" + re.escape(normal(figure).strip()) + r"(?![0-9])")
        return any(pattern.search(page) for page in self.pages)

    def on_first(self, quote: str) -> bool:
        needle = normal(quote)
        return self.first is not None and needle.strip() != "" and needle in self.first

    def vocabulary(self) -> set[str]:
        return set().union(*(page.split() for page in self.pages)) if self.pages else set()


@dataclass(frozen=True)
class DoneClaim:
    """A ``done`` as the checks read it: the answer and its evidence, and the run it ends."""

    task: str
    answer: str
    evidence: list[str]
    next_steps: str
    actions: list[ActionRecord]  # every action of the run that ran and succeeded, done excluded
    extracted: bool  # the run extracted data from a page (extract_content, extract_fields)


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    checks: list[str]  # the checks that passed, in order
    reason: str = ""  # why the claim was refused, told to the model; empty when accepted

    def record(self, rejections: int) -> Verification:
        return Verification(accepted=self.accepted, checks=list(self.checks), reason=self.reason or None,
                            rejections=rejections)


def acts(task: str) -> bool:
    return bool(_ACTS.search(task))


def fills(task: str) -> bool:
    return bool(_FILLS.search(task))


def asks(task: str) -> bool:
    return bool(_ASKS.search(task))


def judge(claim: DoneClaim, seen: Sightings) -> Verdict:
    """Accept ``claim`` only if what was seen shows it; the first failed check is the reason."""
    passed: list[str] = []

    def refuse(reason: str) -> Verdict:
        return Verdict(False, passed, reason)

    answer = claim.answer.strip()
    if not answer and not claim.extracted:
        return refuse("the final answer is empty: say what was done or found, and quote the page in evidence")
    passed.append("answer_given")
    if _EMPTY_ANSWERS.search(answer):
        return refuse(f"the final answer {answer[:120]!r} is a template, filler or refusal, not an answer")
    passed.append("not_boilerplate")
    if claim.next_steps.strip():
        return refuse("done was claimed while next_steps still lists work to do")
    passed.append("no_open_steps")
    quotes = [q[:MAX_QUOTE_CHARS] for q in claim.evidence if q.strip()][:MAX_QUOTES]
    for quote in quotes:
        if not seen.has(quote):
            return refuse(f"the evidence {quote[:120]!r} is on no page the agent saw: quote the page exactly")
    if quotes:
        passed.append("evidence_seen")
    if seen.blank and not acts(claim.task) and not claim.actions:
        passed.append("direct_answer")  # a question with no page to read: nothing on a page to show
        return Verdict(True, passed)
    task_text = normal(claim.task)
    made_up = sorted(n for n in _NUMBER.findall(answer) if normal(n) not in task_text and not seen.has_figure(n))
    if made_up and not claim.extracted:  # counted or summed from extracted data, a figure need not be on a page
        return refuse(f"the answer's figures {', '.join(made_up[:5])} are on no page the agent saw")
    passed.append("figures_seen")
    if acts(claim.task):
        if not doing(claim.task, claim.actions):
            if not (quotes and all(seen.on_first(q) for q in quotes)):
                return refuse("the task asks to act on the page, and no action ran; act first, or quote the "
                              "first page in evidence if the answer is already there")
            passed.append("answer_on_first_page")
        elif not touched(targets(claim.task, seen), doing(claim.task, claim.actions)):
            return refuse("the task names what to act on, and no action that ran touched it")
        elif fills(claim.task) and not entered(claim.task, claim.actions) and not (quotes and asks(claim.task)):
            return refuse("the task asks to type, fill in or search, and no action typed, chose or uploaded "
                          "anything: a click on a button with the form still empty does not do it")
        else:
            passed.append("actions_ran")
            if fills(claim.task) and entered(claim.task, claim.actions):
                passed.append("values_entered")
    if asks(claim.task) and (quotes or not claim.actions):  # said with no action: only a page can show it
        grounding = _grounding(claim, answer, quotes, seen, task_text)
        if grounding is None:
            return refuse("the answer is not shown on any page the agent saw: quote the page text it comes "
                          "from in evidence")
        passed.append(grounding)
    return Verdict(True, passed)


def _grounding(claim: DoneClaim, answer: str, quotes: list[str], seen: Sightings, task_text: str) -> str | None:
    """Which record shows the answer: its quotes, the data extracted, or its own words on a page."""
    if quotes:
        return "evidence_seen"
    if claim.extracted:
        return "data_extracted"
    own = {w for w in words(answer) if f" {w} " not in task_text}  # what the answer adds to the task
    figures = {n for n in numbers(answer) if f" {n} " not in task_text}
    if not own and not figures:
        return None
    vocabulary = seen.vocabulary()
    found = sum(1 for w in own if w in vocabulary) + sum(1 for n in figures if seen.has_figure(n))
    return "answer_on_page" if found * 2 >= len(own) + len(figures) else None


def doing(task: str, actions: list[ActionRecord]) -> list[ActionRecord]:
    """The actions that act on the page: not waiting, reading or (unless the task asks to) scrolling."""
    scrolling = bool(re.search(r"\bscroll", task, re.I))
    return [a for a in actions if a.name not in PASSIVE and (scrolling or a.name not in SCROLLS)]


def targets(task: str, seen: Sightings) -> list[str]:
    """What the task names for its actions (normalised): what it quotes ('Click on the "ok" button'),
    else the elements seen whose whole label the task spells out ("Select nDJ and click Submit")."""
    quoted = [normal(q) if normal(q).strip() else f" {q.strip().lower()} "  # a symbol ("★") as it is
              for q in (a or b for a, b in _QUOTED.findall(task))
              if q.strip() and not (len(q.strip()) == 1 and q.strip().isascii() and q.strip().isalpha())]
    # (one quoted letter draws an icon, not a label: 'clicking the "x"' is the button named Close)
    if quoted:
        return quoted
    said = normal(task)
    return [label for label in seen.labels if label in said and any(c.isalnum() for c in label)]


def touched(wanted: list[str], actions: list[ActionRecord]) -> bool:
    """Whether an action addressed one of ``wanted`` (typed it, chose it, acted on an element with
    that text, name, tag, role or attribute: 'Click on a "textarea" widget'); a task that names
    nothing has no target to miss."""
    if not wanted:
        return True
    for record in actions:
        said = [str(v) for k, v in record.params.items() if k in ("text", "value", "option", "url", "query", "keys")]
        if record.locator is not None:
            said += [record.locator.text, record.locator.name, record.locator.tag, record.locator.role or "",
                     *record.locator.attributes.values()]
        for text in said:
            for norm in (normal(text), f" {text.strip().lower()} "):
                if norm.strip() and any(t in norm or norm in t for t in wanted):
                    return True
    return False


def entered(task: str, actions: list[ActionRecord]) -> bool:
    """Whether an action put a value into the page: typed text (``input_text``, ``send_keys`` that
    types rather than presses a key), chose an option, uploaded a file, searched, or opened a URL
    whose query carries a word or figure of the task (a search done by its address). Which value
    is not asked: an honest run types what it read or computed (a table's cell, a sum) or a secret."""
    said = words(task) | numbers(task)
    for record in actions:
        params = record.params
        if record.name in ("select_dropdown_option", "upload_file", "search"):
            return True
        if record.name == "input_text" and str(params.get("text", "")).strip():
            return True
        if record.name == "send_keys" and not presses_keys(str(params.get("keys", ""))):
            return True
        query = str(params.get("url", "")).partition("?")[2]
        if record.name in ("go_to_url", "open_tab") and (words(query.replace("+", " ")) | numbers(query)) & said:
            return True
    return False


def claim_of(task: str, answer: str, evidence: list[str], next_steps: str, steps: list[Any]) -> DoneClaim:
    """The claim a ``done`` makes, with the run's actions read from its step records."""
    ran = [a for s in steps for a in s.actions if a.ok and a.error is None and a.name != "done"]
    extracted = any(a.name in ("extract_content", "extract_fields") for a in ran)
    return DoneClaim(task, answer, evidence, next_steps, ran, extracted)


__all__ = ["DoneClaim", "Sightings", "Verdict", "acts", "asks", "claim_of", "entered", "fills", "judge", "normal"]
