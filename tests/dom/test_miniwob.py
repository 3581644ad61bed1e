"""MiniWoB++ tasks (PyPI ``miniwob``, its HTML served over http): the element a task needs is offered.

Episodes are started through the page's own JavaScript with a fixed seed, as MiniWoB's Python
environment does (``Math.seedrandom`` then ``core.startEpisodeReal``). For click tasks the oracle is
the task itself: restarting the same seeded episode and clicking offered elements one by one, some
click must earn a positive reward. For typing and select tasks every field of the task area must be
offered, and the select must list the option the utterance asks for.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

import dom
from tests.dom.conftest import click
from tests.support.servers import StaticServer, serve

CLICK_TASKS = [
    "click-button", "click-link", "click-dialog", "click-dialog-2", "click-widget", "click-test",
    "click-test-2", "click-tab", "click-color", "focus-text", "focus-text-2",
]  # single-click tasks only: multi-step ones (menus, pies, sequences) need a plan, not one click
TYPE_TASKS = ["enter-text", "enter-text-2", "enter-password", "login-user", "enter-date", "enter-time", "form-sequence"]
SELECT_TASKS = ["choose-list"]


def _miniwob_html() -> Path | None:
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return None
    html = Path(next(iter(spec.submodule_search_locations))) / "html"
    return html if (html / "miniwob").is_dir() else None


HTML = _miniwob_html()
pytestmark = pytest.mark.skipif(HTML is None, reason="miniwob is not installed (pip install --no-deps miniwob)")


@pytest.fixture(scope="module")
def miniwob() -> Iterator[StaticServer]:
    assert HTML is not None
    with serve(HTML) as server:
        yield server


async def start(page, seed: str) -> dom.PageState:
    await page.evaluate(f"Math.seedrandom({seed!r}); core.startEpisodeReal(); true")
    await asyncio.sleep(0.05)
    return await dom.capture(page)


@pytest.mark.parametrize("task", CLICK_TASKS)
async def test_click_task_target_is_offered(page, miniwob, task):
    await page.goto(miniwob.url(f"/miniwob/{task}.html"))
    state = await start(page, task)
    count = len(state.elements)
    assert count > 0
    for position in range(min(count, 40)):
        state = await start(page, task)
        el = list(state.elements.values())[position]
        await click(page, el)
        await asyncio.sleep(0.05)
        if await page.evaluate("WOB_RAW_REWARD_GLOBAL") > 0:
            return
    pytest.fail(f"no offered element of {task} earns a reward:\n{state.elements_text()}")


@pytest.mark.parametrize("task", TYPE_TASKS)
async def test_type_task_fields_are_offered(page, miniwob, task):
    await page.goto(miniwob.url(f"/miniwob/{task}.html"))
    state = await start(page, task)
    fields = await page.evaluate(
        "[...document.querySelectorAll('#area input, #area textarea, #area button')]"
        ".filter(e => e.getBoundingClientRect().width > 0 && e.type !== 'hidden').length"
    )
    offered = [el for el in state.elements.values() if el.tag in ("input", "textarea", "button")]
    assert fields > 0 and len(offered) >= fields, state.elements_text()


@pytest.mark.parametrize("task", SELECT_TASKS)
async def test_select_task_lists_the_wanted_option(page, miniwob, task):
    await page.goto(miniwob.url(f"/miniwob/{task}.html"))
    state = await start(page, task)
    wanted = await page.evaluate("core.getUtterance()")
    selects = [el for el in state.elements.values() if el.tag == "select"]
    assert len(selects) == 1
    assert any(option and option in wanted for option in selects[0].options), (wanted, selects[0].options)
