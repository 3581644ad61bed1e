"""The interactive-element index the agent sees: one DOM snapshot per frame target, no page JavaScript."""

from dom.capture import capture
from dom.locate import locate
from dom.model import Element, Link, Scrollable, ScrollInfo
from dom.state import PageState
from dom.untrusted import neutralize, wrap_text

__all__ = ["Element", "Link", "PageState", "ScrollInfo", "Scrollable", "capture", "locate", "neutralize", "wrap_text"]
