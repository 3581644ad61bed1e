"""Nanobrowser's element list: ``[index]<tag attr=value>text />``, tab-indented under offered parents.

Kept small on purpose, since it is sent at every step: a short attribute whitelist, values and
texts cut, attributes that repeat the text or each other dropped, implicit roles dropped, runs of
inline text merged into one line.
"""

from __future__ import annotations

from collections.abc import Iterable

from dom.model import Element, ScrollInfo
from dom.rules import implicit_role
from dom.untrusted import neutralize, wrap

ATTRS = ("type", "role", "name", "placeholder", "aria-label", "title", "alt", "aria-expanded", "aria-checked")
# shown only when an element would otherwise be an empty ``<tag />``: an icon button's class says what it is
HINTS = ("id", "class")
# types that tell the model nothing: the default text input, and a button that submits or does nothing
QUIET_TYPES = {"input": ("text",), "button": ("submit", "button")}
TEXT_IF_DIFFERENT = ("aria-label", "title", "placeholder", "alt")
NO_ROLE = ("presentation", "none")
ATTR_CAP = 24
ELEMENT_TEXT_CAP = 60
LINE_CAP = 80
OPTIONS_SHOWN = 8

# A line is (depth, element index) or (depth, loose text).
Line = tuple[int, "int | str"]


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, at a word boundary when one is near, marked with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _repeats(value: str, text: str) -> bool:
    """A naming attribute adds nothing next to visible text it equals, or that contains it or is
    contained in it word for word ("US" and aria-label "US Edition Link")."""
    if not text:
        return False
    if value == text:
        return True
    short, long = sorted((value, text), key=len)
    return len(short) >= 2 and f" {short} " in f" {long} "


def _attributes(el: Element) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    text = el.text.lower()
    attrs = el.attributes
    # Most offered elements carry none of ATTRS (a bare button, a link with only href and class).
    for key in ATTRS if not attrs.keys().isdisjoint(ATTRS) else ():
        value = attrs.get(key)
        if value is None:
            continue
        value = " ".join(value.split())
        if not value or (key == "type" and value.lower() in QUIET_TYPES.get(el.tag, ())):
            continue
        if key == "role" and value in (el.tag, *NO_ROLE, implicit_role(el.tag, attrs.get("type", "").lower())):
            continue  # the tag already says it, or the role says only "no role"
        low = value.lower()
        if key in TEXT_IF_DIFFERENT and (_repeats(low, text) or low in seen):
            continue
        if key == "title" and len(text) > 1:
            continue  # a tooltip next to visible text restates it; without text it is the name
        if key == "name" and el.name:
            continue  # a form field's key only matters when nothing else names the control
        seen.add(low)
        out.append((key, value))
    if el.value:
        out.append(("value", el.value))
    if el.checked:
        out.append(("checked", "true"))
    if not out and not el.text and not el.options:
        hint = next((k for k in HINTS if attrs.get(k, "").strip()), None)
        if hint:
            out.append((hint, attrs[hint].split()[0] if hint == "class" else attrs[hint]))
    if el.scrollable is not None:
        out.append(("scroll", f"{el.scrollable.above:g}px_above,{el.scrollable.below:g}px_below"))
    return out


def element_line(el: Element, marked: bool) -> str:
    parts = [f"{'*' if marked else ''}[{el.index}]<{el.tag}"]
    for key, value in _attributes(el):
        parts.append(f" {key}={neutralize(cap(value, ATTR_CAP))}")
    text = el.text
    if el.options:
        shown = el.options[:OPTIONS_SHOWN]
        text = "|".join(cap(o, 30) for o in shown) + ("|…" if len(el.options) > OPTIONS_SHOWN else "")
    if text:
        parts.append(">" + neutralize(cap(text, ELEMENT_TEXT_CAP)))
    parts.append(" />")
    return "".join(parts)


def render_lines(lines: Iterable[Line], elements: dict[int, Element], new: set[int]) -> str:
    out = []
    for depth, item in lines:
        if isinstance(item, int):
            out.append("\t" * depth + element_line(elements[item], item in new))
        else:
            out.append("\t" * depth + neutralize(cap(item, LINE_CAP)))
    return "\n".join(out)


def _scroll_lines(scroll: ScrollInfo) -> tuple[str, str]:
    above = (
        f"... {scroll.pixels_above:.0f} pixels above - scroll or extract content to see more ..."
        if scroll.pixels_above > 4
        else "[Start of page]"
    )
    below = (
        f"... {scroll.pixels_below:.0f} pixels below - scroll or extract content to see more ..."
        if scroll.pixels_below > 4
        else "[End of page]"
    )
    return above, below


def render(element_lines: str, scroll: ScrollInfo, *, wrapped: bool = True) -> str:
    """The element lines (``render_lines``) between the scroll lines; ``wrapped=False`` leaves the
    wrapping to a caller that puts more page-derived text (title, URL, tabs) in the same untrusted block."""
    above, below = _scroll_lines(scroll)
    body = element_lines or "(no visible content)"
    return f"{above}\n{wrap(body) if wrapped else body}\n{below}"
