"""A plain HTTP GET a job makes besides its pages (robots.txt, a sitemap), through its egress gate.

The request goes through the gate's side door (``cdp.Gate.side_door``), so it is judged by the very
rule the job's browser is: politeness and crawls can never reach an address the job could not. A
refusal there (of the first request or of a redirect) is ``SideDoorRefused``, naming the address the
gate refused; any other failure is an answer with status 0 (no answer) and the error.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

import cdp

MAX_REDIRECTS = 5  # RFC 9309 asks crawlers to follow at least five


@dataclass(frozen=True)
class Fetched:
    status: int  # 0: no answer (refused, reset, timed out)
    body: bytes = b""
    error: str = ""


class SideDoorRefused(Exception):
    """The job's egress policy refused the fetch (or one of its redirects)."""

    def __init__(self, address: str, host: str, port: int, refusal: str) -> None:
        super().__init__(f"the job's egress policy refused {host}:{port} ({refusal}) fetching {address}")
        self.address, self.host, self.port, self.refusal = address, host, port, refusal


async def side_fetch(egress: cdp.Gate, address: str, user_agent: str, *, max_bytes: int,
                     timeout: float) -> Fetched:
    """GET ``address`` through ``egress``; at most ``max_bytes`` of its body are read."""
    refused_before = egress.refused
    try:
        async with egress.side_door() as door:
            async with httpx.AsyncClient(proxy=door, trust_env=False, timeout=timeout, follow_redirects=True,
                                         max_redirects=MAX_REDIRECTS, headers={"User-Agent": user_agent}) as client:
                async with client.stream("GET", address) as response:
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= max_bytes:
                            break
                    return Fetched(response.status_code, bytes(body[:max_bytes]))
    except httpx.HTTPError as exc:
        if egress.refused > refused_before:
            decision = egress.unreported()[-1]
            raise SideDoorRefused(address, decision.host, decision.port, decision.refusal) from None
        return Fetched(0, error=f"{type(exc).__name__}: {exc}"[:300])
