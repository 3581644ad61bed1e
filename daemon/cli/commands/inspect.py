"""``browserd inspect URL``: print what the agent would see on a page.

The text format is the navigator's prompt (element list between scroll lines, in its untrusted
wrapper); the JSON format lists every offered element with its box, frame and backend node id.
One browser is launched for the command and closed on every way out, Ctrl-C included. The page is
reached under a job's egress rule (the settings' lists and networks, plus ``--allow``, ``--deny``
and ``--allow-network``), and a refused page says which rule refused it and what opens it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

import dom
from cdp import BrowserPool, CDPException, CDPTimeout, NavigationError, Page, PoolConfig
from cdp.egress import Decision
from config import get_settings
from config.networks import parse_networks
from daemon.cli.access import access_fields, add_access_flags

WAIT_CHOICES = ("load", "domcontentloaded", "networkidle", "commit")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="print the element index the agent sees on a page")
    p.add_argument("url", help="page to open")
    p.add_argument("--format", choices=("text", "json"), default="text", help="prompt text (default) or JSON")
    p.add_argument(
        "--viewport-expansion", type=int, default=None, metavar="N",
        help="pixels beyond the viewport to include; -1 for the whole page (default: BROWSERD_VIEWPORT_EXPANSION)",
    )
    p.add_argument("--wait", choices=WAIT_CHOICES, default="load", help="page lifecycle event to wait for")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for it; a page that is still loading is then shown as it is (default 30)")
    add_access_flags(p)
    p.set_defaults(handler=run)


class Refused(Exception):
    """The egress gate did not let the page through (Chrome only says ``net::ERR_EMPTY_RESPONSE`` or a
    failed tunnel): a rule refused it, or its name does not resolve; the message says which."""

    def __init__(self, url: str, decision: Decision) -> None:
        self.url, self.decision = url, decision
        reason = decision.refusal or "refused"
        super().__init__(f"navigation to {url} failed: {reason}" if decision.unresolved
                         else f"blocked: {url}: {reason}")


@dataclass(frozen=True)
class Access:
    """What the page may reach beyond the settings: the job spec fields the flags give."""

    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allowed_networks: tuple[str, ...] = ()


async def render(page: Page, url: str, *, fmt: str = "text", viewport_expansion: int = 0, wait: str = "load",
                 timeout: float = 30.0) -> str:
    """Open ``url`` in ``page`` and render its capture; a page that never finishes loading is still shown."""
    try:
        await page.goto(url, wait_until=wait, timeout=timeout)  # type: ignore[arg-type]
    except CDPTimeout:
        print(f"browserd inspect: {url} did not reach '{wait}' in time; showing it as it is", file=sys.stderr)
    state = await dom.capture(page, viewport_expansion=viewport_expansion)
    if fmt == "json":
        return json.dumps(state.to_json(), indent=2, ensure_ascii=False)
    return f"{state.title}\n{state.url}\n\n{state.to_prompt()}"


async def inspect(url: str, config: PoolConfig, access: Access = Access(), **options: Any) -> str:
    """Open ``url`` under a job's egress rule (the settings' and ``access``) and render it."""
    from workers.agent.config import GlobalEgress  # the agent's package loads only when the command runs
    from workers.agent.firewall import admit_egress

    async with BrowserPool(config) as pool, pool.lease() as lease:
        if lease.egress is not None:
            admit_egress(lease, GlobalEgress.from_settings(get_settings()), allowed_domains=access.allowed_domains,
                         denied_domains=access.denied_domains, allowed_networks=access.allowed_networks)
        try:
            return await render(lease.page, url, **options)
        except NavigationError as exc:
            refused = lease.egress.refusal_for(url) if lease.egress is not None else None
            if refused is not None:
                raise Refused(url, refused) from exc
            raise


def pool_config() -> PoolConfig:
    """One browser, no warm contexts: the command needs exactly one page."""
    config = PoolConfig.from_settings(get_settings())
    config.browsers, config.warm, config.cdp_urls = 1, 0, config.cdp_urls[:1]
    return config


def run(args: argparse.Namespace) -> int:
    settings = get_settings()
    expansion = settings.viewport_expansion if args.viewport_expansion is None else args.viewport_expansion
    if expansion < -1:
        print("browserd inspect: --viewport-expansion must be -1 or more", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("browserd inspect: --timeout must be more than 0", file=sys.stderr)
        return 2
    try:
        fields = access_fields(args)
        access = Access(tuple(fields.get("allowed_domains", ())), tuple(fields.get("denied_domains", ())),
                        tuple(parse_networks(fields.get("allowed_networks", ()))))
    except ValueError as exc:
        print(f"browserd inspect: --allow-network: {exc}", file=sys.stderr)
        return 2
    try:
        out = asyncio.run(inspect(args.url, pool_config(), access, fmt=args.format, viewport_expansion=expansion,
                                  wait=args.wait, timeout=args.timeout))
    except Refused as exc:
        print(f"browserd inspect: {exc}", file=sys.stderr)
        return 1
    except NavigationError as exc:
        print(f"browserd inspect: {exc}", file=sys.stderr)
        return 1
    except CDPException as exc:
        print(f"browserd inspect: browser error: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0
