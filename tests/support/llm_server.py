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
forced ``tool_choice``; without tools the ``response_format``'s schema name, or the answer name
browserd writes into the system prompt for the json_object and text output methods), else the first
reply queued under ``None``, else ``responder(request)``; with none of them it gets HTTP 400
``no scripted reply`` (not retried: the job fails at once). A ``Reply.tool`` without a name answers
with the offered tool's name; to a request that offers no tool it answers the same JSON as text
(bare with a ``response_format``, else in a code fence with prose around it, as chat models write).
Each reply may carry ``delay`` seconds; ``Reply.hang`` never answers. While it waits the server
watches the connection: a client that gives up is counted in ``disconnects`` and gets nothing.
``served`` counts the answers sent and the usage they reported. Streaming is not supported
(ChatOpenAI does not stream unless asked to).

**Strict mode** (the default) refuses, with HTTP 400 naming the problem, what strict real servers
refuse: a top-level field that is not in OpenAI's chat-completions API (``STANDARD_FIELDS``), a
message whose content is null (langchain-openai sends an assistant turn with tool calls so, and
llama-cpp-python's server answers HTTP 500 ``content: Input should be a valid string``), and an
assistant turn whose content is not a string. ``LLMServer(strict=False)`` takes anything.
"""

from __future__ import annotations

import collections
import json
import re
import select
import socket
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
    finish: str | None = None  # the finish_reason, when not the usual one ("length": cut at max_tokens)

    @classmethod
    def tool(cls, args: dict[str, Any] | str, *, name: str | None = None, delay: float = 0.0,
             usage: tuple[int, int] = (100, 20), finish: str | None = None) -> Reply:
        """A tool call; ``args`` may be a raw string (e.g. broken JSON) to test tolerant parsing."""
        return cls("tool", args=args, name=name, delay=delay, usage=usage, finish=finish)

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0, usage: tuple[int, int] = (100, 20),
             finish: str | None = None) -> Reply:
        return cls("text", content=content, delay=delay, usage=usage, finish=finish)

    @classmethod
    def hang(cls, seconds: float = 60.0) -> Reply:
        """No answer for ``seconds`` (a model that never finishes): the client is expected to give up."""
        return cls("hang", delay=seconds)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", *, retry_after: float | None = None,
              delay: float = 0.0) -> Reply:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        return cls("error", content=message, status=status, headers=headers, delay=delay)


STANDARD_FIELDS = frozenset({
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call",
    "response_format", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream",
    "stream_options", "stop", "seed", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
    "top_logprobs", "user", "reasoning_effort", "metadata", "store", "service_tier", "modalities",
    "prediction", "audio", "web_search_options", "verbosity", "prompt_cache_key", "safety_identifier",
})
"""The top-level fields of OpenAI's chat-completions request; strict mode refuses any other."""

ANSWER_NAME = re.compile(r'Answer with one JSON object, the "(\w+)" answer')


def offered_tool(request: dict[str, Any]) -> str | None:
    """The answer a request asks for: the forced tool_choice, else the first tool offered, else the
    response_format's schema name, else the answer named in the system prompt."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name")
    tools = request.get("tools") or []
    if tools:
        return tools[0]["function"]["name"]
    schema = (request.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name"):
        return schema["name"]
    system = next((m.get("content") for m in request.get("messages") or [] if m.get("role") == "system"), None)
    found = ANSWER_NAME.search(system) if isinstance(system, str) else None
    return found.group(1) if found else None


def refusal(request: dict[str, Any]) -> str | None:
    """Why a strict server refuses ``request``, or None."""
    unknown = sorted(set(request) - STANDARD_FIELDS)
    if unknown:
        return f"unknown field(s): {', '.join(unknown)}"
    for i, message in enumerate(request.get("messages") or []):
        content = message.get("content")
        if content is None:
            beside = " beside tool_calls" if message.get("tool_calls") else ""
            return f"messages.{i}.content: Input should be a valid string (it is null{beside})"
        if message.get("role") == "assistant" and not isinstance(content, str):
            return f"messages.{i}.content: an assistant turn's content should be a valid string"
    return None


def completion(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    """The chat.completion body for a tool or text reply."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content if reply.kind == "text" else None}
    finish = "stop"
    if reply.kind == "tool" and not request.get("tools"):  # no tool offered: the same answer as text
        args = reply.args if isinstance(reply.args, str) else json.dumps(reply.args)
        message["content"] = args if request.get("response_format") else f"Here it is:\n```json\n{args}\n```\n"
    elif reply.kind == "tool":
        args = reply.args if isinstance(reply.args, str) else json.dumps(reply.args)
        name = reply.name or offered_tool(request) or "tool"
        message["tool_calls"] = [
            {"id": "call_" + uuid.uuid4().hex[:12], "type": "function", "function": {"name": name, "arguments": args}}
        ]
        finish = "tool_calls"
    finish = reply.finish or finish
    prompt, answer = reply.usage
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer},
    }


@dataclass
class Served:
    """What the server answered (HTTP 200 completions) and the usage those answers reported."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LLMServer:
    """The scripted endpoint; ``with LLMServer() as llm`` starts and stops it."""

    def __init__(self, *, strict: bool = True) -> None:
        self.strict = strict
        self.queues: dict[str | None, collections.deque[Reply]] = collections.defaultdict(collections.deque)
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        self.requests: list[dict[str, Any]] = []
        self.refused: list[str] = []  # why strict mode refused each refused request
        self.served = Served()
        self.disconnects = 0  # requests whose client went away before their answer
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

    def count(self, body: dict[str, Any]) -> None:
        with self._lock:
            usage = body.get("usage") or {}
            self.served.calls += 1
            self.served.prompt_tokens += usage.get("prompt_tokens", 0)
            self.served.completion_tokens += usage.get("completion_tokens", 0)

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
            refused = refusal(body) if server.strict else None
            if refused is not None:
                with server._lock:
                    server.requests.append(body)
                    server.refused.append(refused)
                return self._send(400, {"error": {"message": f"strict: {refused}", "type": "invalid_request_error"}})
            try:
                reply = server.next_reply(body)
            except Exception as exc:  # a responder bug must show up in the test, not hang it
                return self._send(500, {"error": {"message": f"responder failed: {exc!r}"}})
            if reply is None:
                return self._send(400, {"error": {"message": "no scripted reply", "type": "invalid_request_error"}})
            if reply.delay and self._client_left(reply.delay):
                with server._lock:
                    server.disconnects += 1
                self.close_connection = True
                return None
            if reply.kind == "hang":
                return self._send(504, {"error": {"message": "the scripted model never answered"}})
            if reply.kind == "error":
                return self._send(reply.status, {"error": {"message": reply.content, "type": "scripted",
                                                           "code": str(reply.status)}}, reply.headers)
            answer = completion(reply, body)
            server.count(answer)
            self._send(200, answer)

        def _client_left(self, seconds: float) -> bool:
            """Wait ``seconds``; True as soon as the client closes its connection (it gave up)."""
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if readable:
                    try:
                        if self.connection.recv(1, socket.MSG_PEEK) == b"":
                            return True
                    except OSError:
                        return True
                    time.sleep(min(left, 0.05))  # a pipelined request: not ours to read here
            return False

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


FOLLOW_LINE = re.compile(r"^\[(\d+)\] (\S+) \| (.*)$", re.MULTILINE)
LIES = ("json", "range", "twice", "score", "missing", "down", "hang")
"""How ``follow_scores(lie=...)`` fails: text that is not JSON, an index past the last link, one index
twice, a score of 11, a link left out; HTTP 500 (a model down); no answer for a minute."""


def follow_links(request: dict[str, Any]) -> list[tuple[int, str, str]]:
    """The links a crawl's follow prompt numbers (index, URL, anchor text), as the model reads them."""
    text = "\n".join(str(m.get("content")) for m in request.get("messages") or [] if m.get("role") == "user")
    return [(int(i), url, anchor) for i, url, anchor in FOLLOW_LINE.findall(text)]


def follow_scores(score: Callable[[str, str], int], *, lie: str | None = None,
                  otherwise: Callable[[dict[str, Any]], Reply | None] | None = None
                  ) -> Callable[[dict[str, Any]], Reply | None]:
    """A responder for a crawl's follow prompt (the ``FollowScores`` answer): each link scored by
    ``score(url, anchor_text)``; with ``lie`` (one of ``LIES``) an answer browserd must refuse.
    Requests for anything else go to ``otherwise``."""
    def respond(request: dict[str, Any]) -> Reply | None:
        if offered_tool(request) != "FollowScores":
            return otherwise(request) if otherwise else None
        links = follow_links(request)
        scores = [{"index": i, "score": score(url, anchor)} for i, url, anchor in links]
        if lie == "json":
            return Reply.text("I would follow the first few links, they look good.")
        if lie == "down":
            return Reply.error(500, "the model is down")
        if lie == "hang":
            return Reply.hang(60.0)
        if lie == "range":
            scores.append({"index": len(links) + 3, "score": 9})
        elif lie == "twice" and scores:
            scores.append({"index": scores[0]["index"], "score": 1})
        elif lie == "score" and scores:
            scores[0]["score"] = 11
        elif lie == "missing" and scores:
            scores.pop()
        return Reply.tool({"scores": scores})
    return respond
