"""Vision: a JPEG of the viewport with each indexed element's box and index drawn on it.

Nanobrowser highlights the elements inside the page before its screenshot; browserd draws them on
the image instead (Pillow), so the page is never changed: no script runs in it, no node is added,
nothing a page could notice or fight. The boxes come from the capture (``dom``), in document CSS
pixels; the screenshot is in device pixels of the viewport, so each box is moved by the scroll
offset and scaled by the image's width over the viewport's CSS width (the device pixel ratio and
any page zoom alike). The image is bounded by ``IMAGE_BOUND`` (width, then JPEG quality, until it
fits the byte limit), and its input tokens are estimated as OpenAI counts a high-detail image.

Secrets stay out of the image as they stay out of the text: an element whose value holds one is
painted over, and a page whose text shows one is not sent at all that step (``look``).
"""

from __future__ import annotations

import asyncio
import base64
import io
import math
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

import cdp
from workers.agent.secrets import Secrets

# Nanobrowser's highlight colours, chosen by index.
COLORS = ("#FF0000", "#00FF00", "#0000FF", "#FFA500", "#800080", "#008080", "#FF69B4", "#4B0082", "#FF4500",
          "#2E8B57", "#DC143C", "#4682B4")
BOX_WIDTH = 2  # outline width in CSS pixels (so it survives the shrinking and the JPEG)
LABEL_SIZE = 12  # index label font size in CSS pixels
CAPTURE_QUALITY = 90  # the screenshot Chrome sends, before drawing


@dataclass(frozen=True)
class ImageBound:
    """How large a screenshot sent to a model may be."""

    max_width: int
    max_bytes: int
    qualities: tuple[int, ...] = (80, 65, 50, 35)


IMAGE_BOUND = ImageBound(max_width=1280, max_bytes=300_000)


@dataclass(frozen=True)
class Screenshot:
    """A bounded JPEG of the viewport, boxes drawn, as sent to a model."""

    jpeg: bytes
    width: int
    height: int
    boxes: int  # elements drawn

    @property
    def tokens(self) -> int:
        return image_tokens(self.width, self.height)

    def content_block(self) -> dict[str, Any]:
        """The OpenAI ``image_url`` content part (a data URL), as langchain passes it on."""
        data = base64.b64encode(self.jpeg).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}", "detail": "high"}}


@dataclass(frozen=True)
class Box:
    """One element's box in the viewport's CSS pixels, and its index; ``masked`` boxes are painted over."""

    index: int
    x: float
    y: float
    width: float
    height: float
    masked: bool = False


WITHHELD = "no screenshot this step: the page shows one of the job's secrets"


async def look(page: cdp.Page, state: Any, secrets: Secrets) -> Screenshot | None:
    """The step's screenshot, or None when the page's text shows a secret (it would be in the image)."""
    if secrets and secrets.scrub(state.text()) != state.text():
        return None
    return await screenshot(page, state, secrets)


def image_tokens(width: int, height: int) -> int:
    """OpenAI's count for a high-detail image: fit in 2048x2048, shortest side to 768, then 170 per
    512-pixel tile plus 85. An estimate for other providers (they count images their own way)."""
    scale = min(1.0, 2048 / max(width, height, 1))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / max(min(w, h), 1))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def viewport_boxes(state: Any, scroll_x: float, scroll_y: float, secrets: Secrets = Secrets()) -> list[Box]:
    """The capture's elements as boxes in viewport CSS pixels (document coordinates less the scroll);
    those whose value holds a secret are masked."""
    return [Box(el.index, el.box[0] - scroll_x, el.box[1] - scroll_y, el.box[2], el.box[3],
                masked=bool(el.value) and secrets.scrub(el.value) != el.value)
            for el in state.elements.values()]


async def screenshot(page: cdp.Page, state: Any, secrets: Secrets = Secrets(),
                     bound: ImageBound = IMAGE_BOUND) -> Screenshot:
    """The viewport as a bounded JPEG, with the boxes of ``state``'s elements drawn on it."""
    metrics = await page.session.send("Page.getLayoutMetrics")  # a CDP failure is the browser's: not caught
    reply = await page.session.send("Page.captureScreenshot", {"format": "jpeg", "quality": CAPTURE_QUALITY})
    vv = metrics.get("cssVisualViewport") or metrics["visualViewport"]
    boxes = viewport_boxes(state, float(vv.get("pageX", 0)), float(vv.get("pageY", 0)), secrets)
    raw = base64.b64decode(reply["data"])
    return await asyncio.to_thread(render, raw, boxes, float(vv["clientWidth"]), bound)


def render(raw: bytes, boxes: list[Box], css_width: float, bound: ImageBound = IMAGE_BOUND) -> Screenshot:
    """Draw ``boxes`` on the screenshot ``raw``, then shrink it into ``bound``."""
    with Image.open(io.BytesIO(raw)) as opened:
        image = opened.convert("RGB")
    draw(image, boxes, image.width / css_width if css_width > 0 else 1.0)
    if image.width > bound.max_width:
        image = image.resize((bound.max_width, round(image.height * bound.max_width / image.width)),
                             Image.Resampling.LANCZOS)
    for quality in bound.qualities:
        out = io.BytesIO()
        image.save(out, "JPEG", quality=quality, optimize=True)
        if out.tell() <= bound.max_bytes:
            break
        if quality == bound.qualities[-1]:  # still too large: halve the size until it fits
            while out.tell() > bound.max_bytes and image.width > 64:
                image = image.resize((image.width // 2, max(1, image.height // 2)), Image.Resampling.LANCZOS)
                out = io.BytesIO()
                image.save(out, "JPEG", quality=quality, optimize=True)
    return Screenshot(out.getvalue(), image.width, image.height, len(boxes))


def draw(image: Image.Image, boxes: list[Box], scale: float) -> None:
    """Nanobrowser's highlights: a coloured outline per element and its index on a label at the
    box's top-right corner (inside the box when it is tall enough, else just above it)."""
    pen = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(8, round(LABEL_SIZE * scale)))
    width = max(1, round(BOX_WIDTH * scale))
    for box in boxes:
        x1, y1 = box.x * scale, box.y * scale
        x2, y2 = x1 + box.width * scale, y1 + box.height * scale
        if x2 < 0 or y2 < 0 or x1 > image.width or y1 > image.height:
            continue  # outside the viewport (a viewport_expansion capture offers such elements)
        color = COLORS[box.index % len(COLORS)]
        pen.rectangle((x1, y1, x2, y2), outline=color, width=width, fill="black" if box.masked else None)
        text = str(box.index)
        left, top, right, bottom = pen.textbbox((0, 0), text, font=font)
        w, h = right - left + 2 * width, bottom - top + width
        lx = max(0.0, min(x2 - w - width, image.width - w))
        ly = y1 + width if y2 - y1 >= 2 * h else max(0.0, y1 - h)
        pen.rectangle((lx, ly, lx + w, ly + h), fill=color)
        pen.text((lx + width - left, ly + width / 2 - top), text, fill="white", font=font)
