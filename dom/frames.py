"""Documents of all frames, placed in top-level page coordinates.

A same-process iframe arrives as an extra document in its parent's snapshot; an out-of-process one
as its own snapshot, tied to its ``<iframe>`` element by ``DOM.getFrameOwner``. Either way a
frame's boxes are relative to its own document, so each frame gets the offset of its iframe's
content box (border and padding are split evenly, read from the difference between the iframe's
box and the child viewport) minus its own scroll, plus the offsets of the frames above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cdp import CDPSession
from dom.snapshot import FrameSnapshot
from dom.tree import DocTree, Strings

Rect = tuple[float, float, float, float]  # x, y, width, height


@dataclass(frozen=True)
class FrameOwner:
    """An out-of-process iframe's ``<iframe>`` element: the session of the document holding it, and
    its backend node id there."""

    session: CDPSession
    backend_node_id: int


@dataclass
class Frame:
    doc: DocTree
    session: CDPSession
    frame_id: str
    url: str
    dx: float = 0.0  # add to a document x to get a top-level page x
    dy: float = 0.0
    clip: Rect | None = None  # visible part of the frame, in top-level page coordinates
    parent: Frame | None = None
    owner: int = -1  # iframe node index in ``parent.doc``
    order: tuple[int, ...] = ()  # sort key placing this frame's nodes in the parent's document order
    owner_path: list[FrameOwner] = field(default_factory=list)
    # per node, what its ancestors impose on its children (set by the analysis; see dom.analyze)
    context: list | None = None


def intersect(a: Rect | None, b: Rect | None) -> Rect | None:
    if a is None:
        return b
    if b is None:
        return a
    # Comparisons rather than max() and min() (a call each, four fifths of the time here: dozens of
    # boxes a capture); ties pick the same operand the builtins do.
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    x1 = ax if ax >= bx else bx
    y1 = ay if ay >= by else by
    ax2, bx2, ay2, by2 = ax + aw, bx + bw, ay + ah, by + bh
    w = (ax2 if ax2 <= bx2 else bx2) - x1
    h = (ay2 if ay2 <= by2 else by2) - y1
    return (x1, y1, w if w > 0.0 else 0.0, h if h > 0.0 else 0.0)


def _child(parent: Frame, owner: int, doc: DocTree, session: CDPSession, oopif: bool) -> Frame | None:
    box = parent.doc.rect(owner)
    if box is None:
        return None  # the iframe itself is not rendered
    size = doc.viewport_size()
    cw, ch = size.width, size.height
    ox = box[0] + max(0.0, box[2] - cw) / 2
    oy = box[1] + max(0.0, box[3] - ch) / 2
    dx = parent.dx + ox - doc.scroll_x
    dy = parent.dy + oy - doc.scroll_y
    clip = intersect(parent.clip, (parent.dx + ox, parent.dy + oy, cw, ch))
    path = list(parent.owner_path)
    if oopif:
        path.insert(0, FrameOwner(parent.session, parent.doc.backend[owner]))
    return Frame(
        doc, session, doc.frame_id, doc.url, dx, dy, clip, parent, owner, parent.order + (owner,), path
    )


def _attach_local(frames: list[Frame], root: Frame, docs: list[DocTree]) -> None:
    """Walk same-process content documents below ``root`` (iframe node -> document index)."""
    stack = [root]
    while stack:
        frame = stack.pop()
        for node, doc_index in frame.doc.content_doc.items():
            if 0 <= doc_index < len(docs):
                child = _child(frame, node, docs[doc_index], frame.session, oopif=False)
                if child is not None:
                    frames.append(child)
                    stack.append(child)


def build(snaps: list[FrameSnapshot]) -> list[Frame]:
    """Every rendered frame, the page's main document first."""
    frames: list[Frame] = []
    by_session: dict[int, list[Frame]] = {}
    pending = []
    for snap in snaps:
        strings = Strings(snap.reply["strings"])
        docs = [DocTree(d, strings) for d in snap.reply["documents"]]
        if not docs:
            continue
        if snap.parent_session is None:
            root = Frame(docs[0], snap.session, docs[0].frame_id, docs[0].url)
            start = len(frames)
            frames.append(root)
            _attach_local(frames, root, docs)
            by_session.setdefault(id(snap.session), []).extend(frames[start:])
        else:
            pending.append((snap, docs))
    # Out-of-process frames: attach each below its owner; nested ones need their parent placed first.
    progress = True
    while pending and progress:
        progress = False
        for item in list(pending):
            snap, docs = item
            placed = _place_oopif(snap, docs, by_session, frames)
            if placed is not None:
                pending.remove(item)
                progress = True
    return frames


def _place_oopif(
    snap: FrameSnapshot, docs: list[DocTree], by_session: dict[int, list[Frame]], frames: list[Frame]
) -> Frame | None:
    candidates = by_session.get(id(snap.parent_session))
    if not candidates or snap.owner_backend_id is None:
        return None
    for parent in candidates:
        try:
            owner = parent.doc.backend.index(snap.owner_backend_id)
        except ValueError:
            continue
        child = _child(parent, owner, docs[0], snap.session, oopif=True)
        if child is None:
            return None
        child.frame_id = snap.target_id or child.frame_id
        start = len(frames)
        frames.append(child)
        _attach_local(frames, child, docs)
        by_session.setdefault(id(snap.session), []).extend(frames[start:])
        return child
    return None
