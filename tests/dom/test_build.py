"""dom.capture.build on recorded snapshots: the analysis half of a capture, with no browser.

The fixtures are raw ``DOMSnapshot.captureSnapshot`` replies of pages in tests/fixtures/site,
recorded with ``python -m tests.support.record_snapshot``; re-record them when the snapshot
parameters change.
"""

from __future__ import annotations

import json
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
