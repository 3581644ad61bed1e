"""The interactive-element index the agent sees: one DOM snapshot per frame target, no page JavaScript."""

from dom.capture import capture
from dom.identity import STABLE_ATTRIBUTES, FrameStep, Identity, identify, identify_all
from dom.locate import Point, locate
from dom.model import Element, Link, NodeKey, Scrollable, ScrollInfo
from dom.refind import (
    THRESHOLD,
    Candidate,
    LocatorAmbiguous,
    LocatorError,
    LocatorLike,
    LocatorNotFound,
    Match,
    find_by,
    refind,
)
from dom.select import LocatorInvalid, select
from dom.state import PageState
from dom.untrusted import neutralize, wrap, wrap_text

__all__ = [
    "STABLE_ATTRIBUTES", "THRESHOLD", "Candidate", "Element", "FrameStep", "Identity", "Link", "LocatorAmbiguous",
    "LocatorError", "LocatorInvalid", "LocatorLike", "LocatorNotFound", "Match", "NodeKey", "PageState", "Point", "ScrollInfo",
    "Scrollable", "capture", "find_by", "identify", "identify_all", "locate", "neutralize", "refind", "select", "wrap",
    "wrap_text",
]
