"""A small client of the HTTP API for the CLI (standard library only: the CLI must not need httpx)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from config import Settings

STREAM_READ_TIMEOUT = 60.0  # the API sends a keep-alive every few seconds; silence this long means trouble


class ApiError(Exception):
    """The API refused or failed a request; ``message`` is the API's own explanation."""

    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.body = status, message, body or {}


def api_url(settings: Settings) -> str:
    if settings.api_url:
        return settings.api_url.rstrip("/")
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "::") else settings.api_host
    return f"http://{host}:{settings.api_port}"


class ApiClient:
    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiClient:
        token = settings.api_token.get_secret_value() if settings.api_token else None
        return cls(api_url(settings), token)

    def _request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> urllib.request.Request:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        return req

    def _open(self, req: urllib.request.Request, timeout: float | None) -> Any:
        try:
            return urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                body = json.loads(raw)
                message = body.get("message") or raw.decode(errors="replace")
            except ValueError:
                body, message = None, raw.decode(errors="replace") or exc.reason
            raise ApiError(exc.code, f"{message} (HTTP {exc.code})", body) from None
        except urllib.error.URLError as exc:
            raise ApiError(0, f"cannot reach the API at {self.base_url}: {exc.reason}; is 'browserd serve' "
                           "running, and is BROWSERD_API_URL right?") from None

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        with self._open(self._request(method, path, body, query), self.timeout) as resp:
            return json.loads(resp.read() or b"null")

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "/v1/jobs", spec)

    def job(self, job_id: str) -> dict[str, Any]:
        return self.call("GET", f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}")

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self.call("POST", f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}/cancel")

    def jobs(self, **query: Any) -> dict[str, Any]:
        return self.call("GET", "/v1/jobs", **query)

    def events(self, job_id: str, follow: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event type, data) pairs of the job's server-sent events, until the stream ends."""
        path = f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}/events"
        req = self._request("GET", path, query={"follow": str(follow).lower()}, headers={"Accept": "text/event-stream"})
        with self._open(req, STREAM_READ_TIMEOUT) as resp:
            kind, data = "message", []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield kind, json.loads("\n".join(data))
                    if kind == "end":
                        return
                    kind, data = "message", []
