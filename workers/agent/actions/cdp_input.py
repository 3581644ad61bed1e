"""Real input through CDP: mouse events at a point, typed text, key presses, and calling a
function on an element inside its own frame's session."""

from __future__ import annotations

from typing import Any

import cdp
from workers.agent.errors import ActionError, ElementGone

MODIFIERS = {"alt": 1, "control": 2, "ctrl": 2, "meta": 4, "cmd": 4, "shift": 8}
# name -> (key, code, windowsVirtualKeyCode, text)
KEYS: dict[str, tuple[str, str, int, str]] = {
    "enter": ("Enter", "Enter", 13, "\r"),
    "tab": ("Tab", "Tab", 9, ""),
    "escape": ("Escape", "Escape", 27, ""),
    "esc": ("Escape", "Escape", 27, ""),
    "backspace": ("Backspace", "Backspace", 8, ""),
    "delete": ("Delete", "Delete", 46, ""),
    "space": (" ", "Space", 32, " "),
    "arrowup": ("ArrowUp", "ArrowUp", 38, ""),
    "arrowdown": ("ArrowDown", "ArrowDown", 40, ""),
    "arrowleft": ("ArrowLeft", "ArrowLeft", 37, ""),
    "arrowright": ("ArrowRight", "ArrowRight", 39, ""),
    "home": ("Home", "Home", 36, ""),
    "end": ("End", "End", 35, ""),
    "pageup": ("PageUp", "PageUp", 33, ""),
    "pagedown": ("PageDown", "PageDown", 34, ""),
}
# Chrome does not run editing shortcuts from synthetic key events unless told the command.
COMMANDS = {"a": "selectAll", "c": "copy", "v": "paste", "x": "cut", "z": "undo"}


async def click_at(session: cdp.CDPSession, x: float, y: float, *, clicks: int = 1) -> None:
    """Move, press and release the left button at (x, y) in the viewport's CSS pixels."""
    await session.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    for kind in ("mousePressed", "mouseReleased"):
        await session.send(
            "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": clicks}
        )


async def insert_text(session: cdp.CDPSession, text: str) -> None:
    await session.send("Input.insertText", {"text": text})


def _parse_combo(combo: str) -> tuple[int, tuple[str, str, int, str]] | None:
    """``Control+a`` -> (modifier bits, key description); None if it is not a key name."""
    *mods, key = combo.split("+") if combo != "+" else ["+"]
    bits = 0
    for mod in mods:
        if mod.lower() not in MODIFIERS:
            return None
        bits |= MODIFIERS[mod.lower()]
    named = KEYS.get(key.lower())
    if named:
        return bits, named
    if len(key) == 1 and (mods or key.isalnum()):
        code = f"Key{key.upper()}" if key.isalpha() else (f"Digit{key}" if key.isdigit() else "")
        text = "" if bits & (MODIFIERS["control"] | MODIFIERS["alt"] | MODIFIERS["meta"]) else key
        return bits, (key, code, ord(key.upper()), text)
    return None


async def press(session: cdp.CDPSession, combo: str) -> None:
    parsed = _parse_combo(combo)
    if parsed is None:
        raise ActionError(f"unknown key {combo!r}", action="send_keys")
    bits, (key, code, vk, text) = parsed
    down: dict[str, Any] = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code,
                            "windowsVirtualKeyCode": vk, "modifiers": bits}
    if text:
        down["text"] = down["unmodifiedText"] = text
    if bits & MODIFIERS["control"] and key.lower() in COMMANDS:
        down["commands"] = [COMMANDS[key.lower()]]
    await session.send("Input.dispatchKeyEvent", down)
    await session.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code,
                                                  "windowsVirtualKeyCode": vk, "modifiers": bits})


def presses_keys(keys: str) -> bool:
    """Whether ``send_keys`` presses ``keys`` as key names/combos ("Enter", "Control+a Tab") rather
    than typing them as text; the done checks tell a key press from typed values by it."""
    tokens = keys.split()
    return bool(tokens) and all(_parse_combo(t) is not None and (len(t) > 1 or len(tokens) == 1) for t in tokens)


async def send_keys(session: cdp.CDPSession, keys: str) -> str:
    """Press key names/combos separated by spaces; anything else is typed as text."""
    tokens = keys.split()
    if presses_keys(keys):
        for token in tokens:
            await press(session, token)
        return "pressed " + " ".join(tokens)
    await insert_text(session, keys)
    return f"typed {keys!r}"


async def call_on_element(element: Any, function: str, *args: Any) -> Any:
    """Run ``function`` (JS source, ``this`` is the node) in the element's frame; returns its JSON value."""
    session: cdp.CDPSession = element.session
    try:
        node = await session.send("DOM.resolveNode", {"backendNodeId": element.backend_node_id})
    except cdp.CDPError as exc:
        raise ElementGone(element.index) from exc
    object_id = node["object"]["objectId"]
    try:
        reply = await session.send("Runtime.callFunctionOn", {
            "objectId": object_id, "functionDeclaration": function, "returnByValue": True, "awaitPromise": True,
            "arguments": [{"value": a} for a in args],
        })
    finally:
        try:
            await session.send("Runtime.releaseObject", {"objectId": object_id})
        except cdp.CDPException:
            pass
    if "exceptionDetails" in reply:
        details = reply["exceptionDetails"]
        raise ActionError(details.get("exception", {}).get("description") or details.get("text", "script error"))
    return reply.get("result", {}).get("value")


async def node_ids(element: Any, function: str) -> list[int]:
    """Run ``function`` (``this`` is the node; it returns an array of nodes) in the element's frame;
    the backend node ids of the nodes, so the index can tell which of its elements they are."""
    session: cdp.CDPSession = element.session
    try:
        node = await session.send("DOM.resolveNode", {"backendNodeId": element.backend_node_id})
    except cdp.CDPError as exc:
        raise ElementGone(element.index) from exc
    handles = [node["object"]["objectId"]]
    try:
        reply = await session.send("Runtime.callFunctionOn", {
            "objectId": handles[0], "functionDeclaration": function, "returnByValue": False, "awaitPromise": True})
        if "exceptionDetails" in reply or "objectId" not in reply.get("result", {}):
            return []
        handles.append(reply["result"]["objectId"])
        props = await session.send("Runtime.getProperties", {"objectId": handles[-1], "ownProperties": True})
        ids = []
        for prop in props.get("result", []):
            value = prop.get("value") or {}
            if prop.get("name", "").isdigit() and value.get("subtype") == "node" and "objectId" in value:
                handles.append(value["objectId"])
                described = await session.send("DOM.describeNode", {"objectId": value["objectId"]})
                ids.append(int(described["node"]["backendNodeId"]))
        return ids
    finally:
        for handle in handles:
            try:
                await session.send("Runtime.releaseObject", {"objectId": handle})
            except cdp.CDPException:
                pass


async def frame_url(element: Any) -> str | None:
    """The URL the element's frame holds now, as the browser knows it (its frame tree, which no
    script of the page can rewrite); None when the frame is gone (navigated away to another
    process, detached). What a secret bound to domains is checked against at the moment of typing."""
    session: cdp.CDPSession = element.session
    try:
        tree = await session.send("Page.getFrameTree")
    except cdp.CDPException:
        return None
    pending = [tree.get("frameTree", {})]
    while pending:
        node = pending.pop()
        frame = node.get("frame", {})
        if frame.get("id") == element.frame_id:
            url = frame.get("url")
            return str(url) if url else None
        pending.extend(node.get("childFrames", []))
    return None


HOLDS_FOCUS_JS = """function() {
  const doc = this.ownerDocument;
  return doc.hasFocus() && (doc.activeElement === this || this.contains(doc.activeElement));
}"""


async def holds_focus(element: Any) -> bool:
    """Whether the element (in its own frame, which has the page's focus) is where typed text goes:
    a page moving the focus to another frame between the click and the typing is caught here."""
    return bool(await call_on_element(element, HOLDS_FOCUS_JS))
