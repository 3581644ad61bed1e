"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, so tests drive the real ChatOpenAI client.

Usage::

    with LLMServer() as llm:                      # llm.base_url == "http://127.0.0.1:PORT/v1"
        llm.add("AgentOutput", Reply.tool({...}))  # queued for requests offering the tool "AgentOutput"
        llm.add("PlannerOutput", Reply.tool({"done": True, ...}))
        llm.add(None, Reply.error(429, retry_after=0), Reply.text("```json {...} ```"))  # any request
        llm.responder = lambda request: Reply.tool({...})   # used when no queued reply fits
        ...
        llm.requests          # every request body (parsed JSON), in arrival order
        llm.requests_for("AgentOutput")

A request takes the first reply queued under the tool it offers (``tools[0].function.name``, or the
forced ``tool_choice``), else the first reply queued under ``None``, else ``responder(request)``;
with none of them it gets HTTP 400 ``no scripted reply`` (not retried: the job fails at once). A ``Reply.tool``
without a name answers with the offered tool's name. Each reply may carry ``delay`` seconds.
Streaming is not supported (ChatOpenAI does not stream unless asked to).
"""

from __future__ import annotations

import collections
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a tool call, a text message, or an HTTP error."""

    kind: str  # "tool" | "text" | "error"
    args: dict[str, Any] | str | None = None
    content: str = ""
    name: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: tuple[int, int] = (100, 20)

    @classmethod
    def tool(cls, args: dict[str, Any] | str, *, name: str | None = None, delay: float = 0.0) -> Reply:
        """A tool call; ``args`` may be a raw string (e.g. broken JSON) to test tolerant parsing."""
        return cls("tool", args=args, name=name, delay=delay)

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        return cls("text", content=content, delay=delay)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", *, retry_after: float | None = None,
              delay: float = 0.0) -> Reply:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        return cls("error", content=message, status=status, headers=headers, delay=delay)


def offered_tool(request: dict[str, Any]) -> str | None:
    """The tool a request asks for (forced tool_choice, else the first tool offered)."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name")
    tools = request.get("tools") or []
    return tools[0]["function"]["name"] if tools else None


def completion(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    """The chat.completion body for a tool or text reply."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content if reply.kind == "text" else None}
    finish = "stop"
    if reply.kind == "tool":
        args = reply.args if isinstance(reply.args, str) else json.dumps(reply.args)
        name = reply.name or offered_tool(request) or "tool"
        message["tool_calls"] = [
            {"id": "call_" + uuid.uuid4().hex[:12], "type": "function", "function": {"name": name, "arguments": args}}
        ]
        finish = "tool_calls"
    prompt, answer = reply.usage
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer},
    }


class LLMServer:
    """The scripted endpoint; ``with LLMServer() as llm`` starts and stops it."""

    def __init__(self) -> None:
        self.queues: dict[str | None, collections.deque[Reply]] = collections.defaultdict(collections.deque)
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=f"llm-{self.port}", daemon=True)

    def __enter__(self) -> LLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, tool: str | None, *replies: Reply) -> LLMServer:
        with self._lock:
            self.queues[tool].extend(replies)
        return self

    def requests_for(self, tool: str | None) -> list[dict[str, Any]]:
        return [r for r in self.requests if offered_tool(r) == tool]

    def pending(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def next_reply(self, request: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            for key in (offered_tool(request), None):
                if self.queues.get(key):
                    return self.queues[key].popleft()
        return self.responder(request) if self.responder else None


def _handler(server: LLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            try:
                reply = server.next_reply(body)
            except Exception as exc:  # a responder bug must show up in the test, not hang it
                return self._send(500, {"error": {"message": f"responder failed: {exc!r}"}})
            if reply is None:
                return self._send(400, {"error": {"message": "no scripted reply", "type": "invalid_request_error"}})
            if reply.delay:
                time.sleep(reply.delay)
            if reply.kind == "error":
                return self._send(reply.status, {"error": {"message": reply.content, "type": "scripted",
                                                           "code": str(reply.status)}}, reply.headers)
            self._send(200, completion(reply, body))

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a cancelled call)

    return Handler
