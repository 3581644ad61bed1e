"""Finding a recorded element again on a new capture: a scored match over ONE snapshot.

Every offered element of the capture gets its identity (``dom.identity``: no CDP call) and a score
in [0, 1] against the wanted locator: the weighted share of the locator's features it matches.
What an element is (stable attributes, role and name, text, the text around it, tag) weighs far
more than where it is (CSS path, XPath, position among similar elements): classes renamed, a
banner inserted above, a list reordered move an element but do not change what it is, so when
the two disagree what it is wins. Position still breaks ties between equal-looking elements (the
second of three "Add to cart" buttons) on an unchanged page.

The best candidate above ``threshold`` wins, unless another is as good within ``margin``: then
``LocatorAmbiguous``; nothing above the threshold is ``LocatorNotFound``. Both name the top
candidates and their scores. The locator may be any object with ``workers.jobs.model.locators.Locator``'s
fields (``LocatorLike``): dom cannot import the job kernel, and needs only to read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from dom.identity import Identity, collapse, identify_all, url_path

if TYPE_CHECKING:
    from dom.model import Element
    from dom.state import PageState

THRESHOLD = 0.6  # a best candidate below this is no match
MARGIN = 0.03  # a runner-up this close to the best makes the match ambiguous
SHOWN = 3  # candidates named in an error
# Weights of what an element is, per stable attribute; position weighs POSITION in all.
ATTRIBUTE_WEIGHTS = {
    "id": 3.0, "data-testid": 3.0, "data-test-id": 3.0, "data-test": 3.0, "data-qa": 3.0, "data-cy": 3.0,
    "name": 2.0, "aria-label": 2.0, "placeholder": 2.0, "href": 1.5, "for": 1.5, "title": 1.0, "alt": 1.0,
    "type": 0.5,
}
TAG, ROLE, NAME, TEXT, CONTEXT = 1.0, 1.0, 2.5, 1.5, 3.0
CSS, XPATH, NTH = 0.4, 0.4, 0.3


class HopLike(Protocol):
    url: str
    attributes: Mapping[str, str]
    xpath: str
    nth: int | None


class LocatorLike(Protocol):
    """What ``refind`` reads of a locator (``workers.jobs.model.locators.Locator`` and ``dom.Identity`` fit)."""

    @property
    def frame_path(self) -> Sequence[HopLike]: ...
    tag: str
    role: str | None
    name: str
    text: str
    attributes: Mapping[str, str]
    context: str
    css: str
    xpath: str
    nth: int | None  # None: not given (a hand-written locator), so position does not count


@dataclass(frozen=True)
class Candidate:
    """One element of the capture and how well it matches."""

    element: Element
    identity: Identity
    score: float

    def __str__(self) -> str:
        label = self.identity.name or self.identity.text or next(iter(self.identity.attributes.values()), "")
        return f"[{self.element.index}] {self.identity.tag} {label[:40]!r} ({self.score:.2f})"


@dataclass(frozen=True)
class Match:
    """The element found, its score, and the candidates ranked (best first)."""

    element: Element
    score: float
    candidates: list[Candidate]


class LocatorError(Exception):
    """The locator did not name exactly one element; ``candidates`` are the best ones, best first."""

    def __init__(self, message: str, wanted: str, candidates: list[Candidate]) -> None:
        super().__init__(message)
        self.wanted = wanted
        self.candidates = candidates


class LocatorNotFound(LocatorError):
    pass


class LocatorAmbiguous(LocatorError):
    pass


def describe(locator: LocatorLike) -> str:
    """``button 'Add to cart'``: a short name of what is wanted, for messages."""
    what = locator.tag or locator.role or "element"
    label = locator.name or locator.text or next(iter(locator.attributes.values()), "") or locator.css
    where = f" in frame {locator.frame_path[-1].url}" if locator.frame_path else ""
    return f"{what} {label[:60]!r}{where}" if label else f"{what}{where}"


def similarity(want: str, have: str) -> float:
    """How alike two texts are, 0 to 1: equal (case and spaces aside), one inside the other, or
    the share of words in common."""
    a, b = collapse(want, 1000).casefold(), collapse(have, 1000).casefold()
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    contained = 0.9 * min(len(a), len(b)) / max(len(a), len(b)) if (a in b or b in a) else 0.0
    wa, wb = set(a.split()), set(b.split())
    return max(contained, len(wa & wb) / len(wa | wb))


def _hop_score(want: HopLike, have: HopLike) -> float:
    if want.url and url_path(want.url) == have.url:
        return 1.0
    for name in ("id", "name"):
        if want.attributes.get(name) and want.attributes.get(name) == have.attributes.get(name):
            return 1.0
    if want.attributes.get("src") and want.attributes.get("src") == have.attributes.get("src"):
        return 0.9
    if want.xpath and want.xpath == have.xpath:
        return 0.8
    return 0.5 if want.nth is not None and want.nth == have.nth else 0.0


def frame_score(want: Sequence[HopLike], have: Sequence[HopLike]) -> float:
    """1 when the frame paths agree, less as hops match only by position, 0 for another frame."""
    if len(want) != len(have):
        return 0.0
    return min((_hop_score(w, h) for w, h in zip(want, have)), default=1.0)


def score(want: LocatorLike, have: Identity) -> float:
    """The weighted share of ``want``'s features that ``have`` matches, times the frame's agreement."""
    frames = frame_score(want.frame_path, have.frame_path)
    if frames == 0.0:
        return 0.0
    got = total = 0.0

    def feature(weight: float, match: float) -> None:
        nonlocal got, total
        total += weight
        got += weight * match

    for name, value in want.attributes.items():
        feature(ATTRIBUTE_WEIGHTS.get(name, 1.0), float(have.attributes.get(name) == value))
    if want.tag:
        feature(TAG, float(want.tag == have.tag))
    if want.role:
        feature(ROLE, float(want.role == have.role))
    if want.name:
        feature(NAME, similarity(want.name, have.name))
    if want.text and collapse(want.text).casefold() != collapse(want.name).casefold():
        feature(TEXT, similarity(want.text, have.text))
    if want.context:
        feature(CONTEXT, similarity(want.context, have.context))
    if want.css:
        feature(CSS, float(want.css == have.css))
    if want.xpath:
        feature(XPATH, float(want.xpath == have.xpath))
    if total == 0.0:
        return 0.0
    if want.nth is not None:
        feature(NTH, float(want.nth == have.nth))
    return frames * got / total


def rank(want: LocatorLike, identities: Sequence[Identity], elements: Mapping[int, Element]) -> list[Candidate]:
    """Every identity scored against ``want``, best first (document order among equals)."""
    scored = [Candidate(elements[i.index], i, score(want, i)) for i in identities]
    return sorted(scored, key=lambda c: -c.score)


def choose(want: LocatorLike, candidates: list[Candidate], *, threshold: float = THRESHOLD,
           margin: float = MARGIN) -> Match:
    """The best candidate, or ``LocatorNotFound`` / ``LocatorAmbiguous`` naming the top ones."""
    wanted = describe(want)
    top = candidates[:SHOWN]
    shown = ", ".join(map(str, top)) or "no elements on the page"
    if not candidates or candidates[0].score < threshold:
        raise LocatorNotFound(f"no element matches {wanted} (score >= {threshold:g}); best: {shown}", wanted, top)
    best = candidates[0]
    rivals = [c for c in candidates[1:] if c.score >= threshold and best.score - c.score < margin]
    if rivals:
        raise LocatorAmbiguous(f"{len(rivals) + 1} elements match {wanted} equally well: {shown}", wanted, top)
    return Match(best.element, best.score, candidates)


def refind(state: PageState, locator: LocatorLike, *, threshold: float = THRESHOLD, margin: float = MARGIN) -> Match:
    """The element of ``state`` that ``locator`` names: a scored match over this one capture."""
    return choose(locator, rank(locator, identify_all(state), state.elements), threshold=threshold, margin=margin)


def _exact(value: str, identity: Identity) -> bool:
    wanted = collapse(value).casefold()
    return wanted in (identity.name.casefold(), identity.text.casefold())


def find_by(state: PageState, *, text: str | None = None, role: str | None = None, name: str | None = None) -> Element:
    """The one element with this visible text (or accessible name), or this role (and name): exact
    matches first (case and spaces aside), then ones containing the words. Several -> ambiguous."""
    if text is None and role is None:
        raise ValueError("find_by: give text, or role (with or without name)")
    identities = identify_all(state)
    wanted = f"role={role!r}" + (f" name={name!r}" if name else "") if role else f"text {text!r}"
    pool = [i for i in identities if role is None or i.role == role]
    label = text if text is not None else name
    if label is None:
        found = pool
    else:
        found = [i for i in pool if _exact(label, i)]
        if not found:
            needle = collapse(label).casefold()
            found = [i for i in pool if needle in i.name.casefold() or needle in i.text.casefold()]
    if len(found) == 1:
        return state.elements[found[0].index]
    if found:
        shown = [Candidate(state.elements[i.index], i, 1.0) for i in found]
        raise LocatorAmbiguous(f"{len(found)} elements match {wanted}: {', '.join(map(str, shown[:SHOWN + 2]))}",
                               wanted, shown[:SHOWN + 2])
    near = sorted((Candidate(state.elements[i.index], i, similarity(label or "", i.name or i.text)) for i in pool),
                  key=lambda c: -c.score)[:SHOWN]
    roles = "" if role is None else f" ({len(pool)} with that role)"
    raise LocatorNotFound(f"no element matches {wanted}{roles}; closest: {', '.join(map(str, near)) or 'none'}",
                          wanted, near)
