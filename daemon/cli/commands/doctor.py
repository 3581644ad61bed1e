"""``browserd doctor``: which isolation layers this host gives the browsers, checked on a real one.

It starts the pool a worker would start (same settings), opens one page, and then looks at the
processes themselves rather than trusting the plan: the browser's network namespace and its
interfaces, the user its processes run as, whether its renderers sit in seccomp, the environment it
got. Exit status 0 when every layer is active, 1 when one is off (each line says why).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

from cdp import BrowserPool, PoolConfig, process_tree
from config import load_settings
from config.isolation import IsolationLayer

SECRET_VARIABLES = ("BROWSERD_SECRETS_KEY", "BROWSERD_API_TOKEN", "BROWSERD_WEBHOOK_SECRET", "BROWSERD_REDIS_URL",
                    "OPENAI_API_KEY", "BROWSERD_OPENAI_API_KEY", "BROWSERD_LLM_API_KEY")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check which isolation layers this host gives the browsers")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = asyncio.run(examine())
    if args.json:
        print(json.dumps(report))
    else:
        for layer, entry in report["layers"].items():
            print(f"{'on ' if entry['active'] else 'OFF'} {layer:<22} {entry['detail']}")
    return 0 if all(entry["active"] for entry in report["layers"].values()) else 1


async def examine() -> dict[str, object]:
    """The pool's own report, checked against the processes of one launched browser."""
    config = PoolConfig.from_settings(load_settings())
    config.browsers, config.warm = 1, 0
    async with BrowserPool(config) as pool:
        reported = pool.isolation()
        seen: dict[IsolationLayer, str] = {}
        if not config.cdp_urls:
            async with pool.lease() as lease:
                await lease.page.goto("about:blank")
                pid = lease.browser.pid
                assert pid is not None
                seen = _observed(pid, pool)
    layers = {}
    for layer in IsolationLayer:
        active = reported.active.get(layer, False)
        detail = seen.get(layer) if active else reported.off.get(layer, "off")
        if active and detail and detail.startswith("NOT "):  # the plan said on, the processes say otherwise
            active = False
        layers[layer.value] = {"active": active, "detail": detail or ""}
    return {"layers": layers}


def _observed(browser_pid: int, pool: BrowserPool) -> dict[IsolationLayer, str]:
    """What the browser's processes show, layer by layer (a line starting "NOT " contradicts the plan)."""
    pids = process_tree(browser_pid)
    ours = os.readlink("/proc/self/ns/net")
    theirs = os.readlink(f"/proc/{browser_pid}/ns/net")
    interfaces = pool.network.interfaces() if pool.network is not None else []
    uids = {_status(pid, "Uid").split()[0] for pid in pids if _status(pid, "Uid")}
    renderers = [pid for pid in pids if b"--type=renderer" in _read(f"/proc/{pid}/cmdline")]
    seccomp = {_status(pid, "Seccomp") for pid in renderers}
    environ = _read(f"/proc/{browser_pid}/environ").split(b"\0")
    leaked = [name for name in SECRET_VARIABLES if any(v.startswith(name.encode() + b"=") for v in environ)]
    return {
        IsolationLayer.namespace: (f"browser in {theirs} (worker: {ours}), interfaces: {', '.join(interfaces)}; "
                                   f"{pool.network.how if pool.network else ''}"
                                   if theirs != ours and interfaces == ["lo"]
                                   else f"NOT isolated: browser in {theirs}, worker in {ours}"),
        IsolationLayer.sandbox: (f"{len(renderers)} renderer(s) in seccomp filter mode" if seccomp == {"2"}
                                 else f"NOT sandboxed: renderer seccomp modes {sorted(seccomp)}"),
        IsolationLayer.separate_user: (f"browser processes run as uid {', '.join(sorted(uids))} (worker: {os.geteuid()})"
                                       if str(os.geteuid()) not in uids else "NOT separate: the worker's uid"),
        IsolationLayer.webrtc_policy: "every profile starts with webrtc.ip_handling_policy=disable_non_proxied_udp",
        IsolationLayer.network_service_watch: "the network service's pid is watched (pidfd)",
        IsolationLayer.minimal_environment: ("none of the worker's keys or tokens in Chrome's environment" if not leaked
                                             else f"NOT minimal: Chrome's environment has {', '.join(leaked)}"),
    }


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _status(pid: int, field: str) -> str:
    for line in _read(f"/proc/{pid}/status").decode(errors="replace").splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""
