"""Vision: the screenshot with the element boxes drawn on it, what each role is sent, and its cost.

Real Chromium and the real ChatOpenAI client against the scripted endpoint; the image is checked
by decoding it (Pillow) and reading pixels where the boxes must be.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image, ImageColor
from pydantic import ValidationError

import dom
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan, run
from tests.support.llm_server import Reply
from workers.agent.secrets import Secrets
from workers.agent.vision import COLORS, IMAGE_BOUND, ImageBound, image_tokens, render, screenshot
from workers.jobs.model.spec import AgentOptions
from workers.jobs.model.status import JobStatus

DOM_JS = "document.documentElement.outerHTML"


def images(request: dict[str, Any]) -> list[bytes]:
    """Every image part of a chat request, decoded from its data URL."""
    found = []
    for message in request["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                assert url.startswith("data:image/jpeg;base64,")
                found.append(base64.b64decode(url.split(",", 1)[1]))
    return found


def close(pixel: tuple[int, ...], color: str, tolerance: int = 70) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, ImageColor.getrgb(color)))


def edge_pixel(image: Image.Image, element: Any, scale: float, scroll_y: float) -> tuple[int, ...]:
    """The pixel on the middle of the left edge of ``element``'s box."""
    x = element.box[0] * scale + 1
    y = (element.box[1] - scroll_y + element.box[3] / 2) * scale
    return image.getpixel((round(x), round(y)))


async def test_boxes_are_drawn_on_the_image_and_the_page_is_unchanged(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(site.url("vision/boxes.html"), wait_until="load")
        await page.session.send("Emulation.setDeviceMetricsOverride",  # device pixels != CSS pixels
                                {"width": 900, "height": 800, "deviceScaleFactor": 2, "mobile": False})
        await page.evaluate("window.scrollTo(0, 500)")
        before = await page.evaluate(DOM_JS)
        state = await dom.capture(page)
        shot = await screenshot(page, state)
        assert await page.evaluate(DOM_JS) == before  # nothing was drawn into the page
        await page.session.send("Emulation.clearDeviceMetricsOverride")
    image = Image.open(io.BytesIO(shot.jpeg))
    assert image.format == "JPEG" and (image.width, image.height) == (shot.width, shot.height)
    assert shot.width <= IMAGE_BOUND.max_width and len(shot.jpeg) <= IMAGE_BOUND.max_bytes
    scale = shot.width / 900  # 1800 device pixels shrunk to the bound
    assert shot.width == IMAGE_BOUND.max_width and 1.0 < scale < 2.0
    second = next(el for el in state.elements.values() if el.name == "Second")
    assert second.box[1] == pytest.approx(700, abs=1)  # document coordinates; the page is scrolled by 500
    color = COLORS[second.index % len(COLORS)]
    assert close(edge_pixel(image, second, scale, 500), color), edge_pixel(image, second, scale, 500)
    inside = image.getpixel((round((second.box[0] + 150) * scale), round((700 - 500 + 90) * scale)))
    assert close(inside, "#FFFFFF", 30)  # only the outline and the label are drawn, not the whole box
    right, top = round((second.box[0] + 300) * scale), round((700 - 500) * scale)
    corner = [image.getpixel((x, y)) for x in range(right - 12, right - 2) for y in range(top + 3, top + 13)]
    assert sum(close(p, color) for p in corner) > 40  # the index label sits in the top-right corner


async def test_a_box_holding_a_secret_is_painted_over(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(site.url("vision/boxes.html"), wait_until="load")
        state = await dom.capture(page)
        field = next(el for el in state.elements.values() if el.tag == "input")
        await page.evaluate("document.querySelector('input').value = 'hunter2-secret'")
        state = await dom.capture(page, state)
        field = state.elements[field.index]
        shot = await screenshot(page, state, Secrets({"pw": "hunter2-secret"}))
    image = Image.open(io.BytesIO(shot.jpeg))
    scale = shot.width / 1280
    centre = image.getpixel((round(field.center[0] * scale), round(field.center[1] * scale)))
    assert close(centre, "#000000", 40), centre


def test_the_image_is_bounded():
    noisy = Image.effect_noise((3000, 2000), 120).convert("RGB")  # JPEG cannot compress noise
    raw = io.BytesIO()
    noisy.save(raw, "JPEG", quality=95)
    bound = ImageBound(max_width=1280, max_bytes=60_000)
    shot = render(raw.getvalue(), [], 3000, bound)
    assert shot.width <= 1280 and len(shot.jpeg) <= bound.max_bytes
    assert Image.open(io.BytesIO(shot.jpeg)).format == "JPEG"


def test_image_tokens_follow_openais_count():
    assert image_tokens(1024, 1024) == 765  # OpenAI's worked example: 768x768, four tiles
    assert image_tokens(2048, 4096) == 1105  # 768x1536, six tiles
    assert image_tokens(1280, 1100) == 765


async def test_the_navigator_gets_the_latest_screenshot_and_the_planner_none(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="clicked"))
    llm.add(NAVIGATOR, act({"click_element": {"index": 1}}), act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="Click First", start_url=site.url("vision/boxes.html"),
                             options={"use_vision": True})
    assert result.status == JobStatus.succeeded, result.error
    navigator = llm.requests_for(NAVIGATOR)
    assert [len(images(r)) for r in navigator] == [1, 1]  # the first step's screenshot left the history
    assert [len(images(r)) for r in llm.requests_for(PLANNER)] == [0, 0]
    jpeg = images(navigator[1])[0]
    image = Image.open(io.BytesIO(jpeg))
    assert image.format == "JPEG" and image.width <= IMAGE_BOUND.max_width and len(jpeg) <= IMAGE_BOUND.max_bytes
    assert images(navigator[0])[0] != jpeg
    expected = image_tokens(image.width, image.height)
    assert [s.image_tokens for s in result.steps[:2]] == [expected, expected]
    assert result.totals.image_tokens == 2 * expected


async def test_the_planner_gets_the_screenshot_when_asked(pool, site, llm, settings):
    llm.add(PLANNER, plan(done=True, final_answer="seen"))
    result, _, _ = await run(pool, settings, task="Look", start_url=site.url("vision/boxes.html"),
                             options={"use_vision_for_planner": True})
    assert result.status == JobStatus.succeeded, result.error
    assert [len(images(r)) for r in llm.requests_for(PLANNER)] == [1]
    assert result.steps[0].image_tokens > 0


async def test_without_vision_no_image_is_sent(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="clicked"))
    llm.add(NAVIGATOR, act({"click_element": {"index": 1}}), act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="Click First", start_url=site.url("vision/boxes.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert llm.requests and all(images(r) == [] for r in llm.requests)
    assert all(isinstance(m["content"], str) for r in llm.requests for m in r["messages"] if m["role"] == "user")
    assert result.totals.image_tokens == 0


async def test_a_page_showing_a_secret_sends_no_screenshot(pool, site, llm, settings):
    llm.add(PLANNER, plan(done=True, final_answer="done"))
    result, _, _ = await run(pool, settings, task="Look", start_url=site.url("vision/boxes.html"),
                             options={"use_vision_for_planner": True}, secrets={"name": "Lovelace"})
    assert result.status == JobStatus.succeeded, result.error
    request = llm.requests_for(PLANNER)[0]
    assert images(request) == []
    assert "no screenshot this step" in str(request["messages"])


def test_vision_options_are_booleans():
    with pytest.raises(ValidationError, match="use_vision_for_planner"):
        AgentOptions(use_vision_for_planner="sometimes")


async def test_rolling_horizon_sends_the_screenshot_to_its_planner(pool, site, llm, settings):
    llm.add("HorizonPlan", Reply.tool({"observation": "seen", "done": True, "final_answer": "seen",
                                       "outcome": "complete", "steps": []}))
    result, _, _ = await run(pool, settings, task="Look", start_url=site.url("vision/boxes.html"),
                             options={"strategy": "rolling_horizon", "use_vision": True})
    assert result.status == JobStatus.succeeded, result.error
    assert [len(images(r)) for r in llm.requests_for("HorizonPlan")] == [1]
    assert result.steps[0].image_tokens > 0
