"""dom.capture.build on recorded snapshots: the analysis half of a capture, with no browser.

The fixtures are raw ``DOMSnapshot.captureSnapshot`` replies of pages in tests/fixtures/site,
recorded with ``python -m tests.support.record_snapshot``; re-record them when the snapshot
parameters change.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dom import PageState, snapshot
from dom.capture import build

SNAPSHOTS = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"


def built(name: str, previous: PageState | None = None, expansion: int = 0) -> PageState:
    reply = json.loads((SNAPSHOTS / f"{name}.json").read_text())
    return build([snapshot.FrameSnapshot(None, reply)], snapshot.layout_viewport(reply), previous, expansion)  # type: ignore[arg-type]


def test_a_small_form_becomes_labelled_numbered_lines() -> None:
    state = built("form1")
    assert state.title == "Sign up - step 1" and state.url.endswith("/form1.html")
    assert state.elements_text().splitlines() == [
        "Sign up: your name", "First name", "[1]<input id=first />", "Last name", "[2]<input id=last />",
        "[3]<button>Next />",
    ]


def test_every_kind_of_control_is_offered_once() -> None:
    lines = built("controls").elements_text().splitlines()
    offered = [line for line in lines if line.startswith("[")]
    assert len(offered) == 37 and len(set(offered)) == 37  # aria-hidden hides from assistive tech only
    for expected in ("[9]<input type=password name=t_password />", "[30]<select name=t_select value=Green>Red|Green|Blue />",
                     "[5]<div role=button>Role button />", "[35]<input placeholder=open shadow input />"):
        assert expected in lines


def test_indexes_are_stable_and_nothing_is_new_on_an_unchanged_page() -> None:
    first = built("controls")
    again = built("controls", previous=first)
    assert again.new_indexes == set()
    assert {i: e.tag for i, e in again.elements.items()} == {i: e.tag for i, e in first.elements.items()}



def test_a_capture_renders_the_same_however_often_it_is_read() -> None:
    """The element lines and the text are rendered once per capture and then reused: every read
    gives the same text, and a fresh nonce still wraps each prompt."""
    first, again = built("form1"), built("form1")
    state = built("form1")
    assert state.to_prompt(wrapped=False) == state.to_prompt(wrapped=False) == first.to_prompt(wrapped=False)
    assert state.elements_text() in state.to_prompt(wrapped=False) and state.text() == state.text() == first.text()
    assert state.fingerprint() == state.fingerprint() == again.fingerprint()
    prompts = [state.to_prompt() for _ in range(2)]
    tags = [set(re.findall(r"untrusted_content_[0-9a-f]+", p)) for p in prompts]
    assert len(tags[0]) == 1 and tags[0] != tags[1]  # each prompt has its own nonce
    assert prompts[0].replace(tags[0].pop(), "T") == prompts[1].replace(tags[1].pop(), "T")
