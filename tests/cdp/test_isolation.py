"""The browser reaches only its gate, whatever Chrome does (issue 22): WebRTC, a network service that
dies, Chrome's own traffic; its renderers sandboxed, as its own user, without the worker's secrets.

These run as root (CI and the dev machine do): namespaces, the test host and the user switch need it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from cdp import process_tree
from config import load_settings
from tests.support.isolation_attacks import (
    after_network_service_killed,
    default_context_reaches,
    isolation_pool,
    network_service_pids,
    visit,
    webrtc_datagrams,
)
from tests.support.jobs import run_job
from tests.conftest import LOOPBACK_ONLY
from tests.support.servers import RecordingServer

pytestmark = pytest.mark.e2e  # every test starts browsers (and a test host, or browserd doctor)

SETTINGS = load_settings(allow_private_networks=False, allowed_networks=[], allowed_domains=[], denied_domains=[])


def test_webrtc_sends_no_datagram_to_a_refused_address():
    assert webrtc_datagrams(SETTINGS) == 0


def test_webrtc_sends_no_datagram_without_the_namespace_either():
    """The fallback where namespaces are refused: the WebRTC preference alone holds."""
    assert webrtc_datagrams(SETTINGS, network_namespace=False) == 0


async def test_a_warm_context_is_never_handed_on_after_the_network_service_died(site):
    with RecordingServer() as denied:
        assert await after_network_service_killed(site.url("cdp/basic.html"), denied, SETTINGS) == []


async def test_without_the_namespace_the_watch_recycles_the_browser(site):
    """The fallback: no namespace, so only the network-service watch keeps the next job off the dead
    browser's contexts, which would connect directly."""
    with RecordingServer() as denied:
        assert await after_network_service_killed(site.url("cdp/basic.html"), denied, SETTINGS,
                                                  network_namespace=False) == []


async def test_chromes_own_traffic_has_no_route():
    with RecordingServer() as denied:
        async with isolation_pool() as pool:
            assert await default_context_reaches(pool, denied) == []


async def test_a_job_running_when_the_network_service_dies_is_stopped(site):
    async with isolation_pool(network_namespace=False) as pool, pool.lease() as lease:
        async def kill_its_network_service() -> None:
            await asyncio.sleep(1.0)
            os.kill(network_service_pids(pool)[0], signal.SIGKILL)

        killer = asyncio.create_task(kill_its_network_service())
        result = await run_job(visit(site.url("cdp/basic.html"), 5.0), lease, settings=SETTINGS)
        await killer
    assert result.status == "failed" and result.category == "browser_crash"
    assert "network service" in (result.error or "")
    assert pool.stats().recycles == {"network_service": 1}


async def test_a_killed_browser_is_a_crash_though_its_network_service_exit_is_seen_first():
    """Chrome killed whole: its network service exits a moment later, and the watch's pidfd is read
    in the same loop turn as the pipe's end, before the connection knows. The pool must count one
    crash, not recycle a dead browser as a network-service restart (CI saw that order once)."""
    async with isolation_pool(network_namespace=False) as pool:
        async with pool.lease():
            pass
        root, service = pool.browser_pids()[0], network_service_pids(pool)[0]
        os.kill(root, signal.SIGKILL)
        while os.path.exists(f"/proc/{service}"):  # the loop stays blocked: both events wait for it
            time.sleep(0.01)
        deadline = time.monotonic() + 30
        while pool.stats().crashes == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert pool.stats().crashes == 1
        assert pool.stats().recycles == {}
        async with pool.lease() as lease:  # its successor serves
            assert lease.browser.alive


async def test_renderers_are_sandboxed_as_their_own_user_without_the_workers_secrets(site, monkeypatch):
    monkeypatch.setenv("BROWSERD_SECRETS_KEY", "a-key-chrome-must-not-see")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-chrome-must-not-see")
    async with isolation_pool() as pool, pool.lease() as lease:
        lease.egress.admit(LOOPBACK_ONLY)
        await lease.page.goto(site.url("cdp/basic.html"))
        pids = process_tree(lease.browser.pid)
        renderers = [pid for pid in pids if b"--type=renderer" in open(f"/proc/{pid}/cmdline", "rb").read()]
        assert renderers
        for pid in renderers:
            status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
            assert status["Seccomp"].strip() == "2", "a renderer runs in Chrome's seccomp sandbox"
            assert status["Uid"].split()[0] != "0", "Chrome runs as its own user, not root"
        for pid in pids:
            environ = open(f"/proc/{pid}/environ", "rb").read()
            assert b"must-not-see" not in environ
        assert os.readlink(f"/proc/{lease.browser.pid}/ns/net") != os.readlink("/proc/self/ns/net")


def test_doctor_names_every_layer():
    done = subprocess.run([sys.executable, "-m", "daemon", "doctor"], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    for layer in ("namespace", "sandbox", "separate_user", "webrtc_policy", "network_service_watch",
                  "minimal_environment"):
        assert any(line.startswith("on ") and f" {layer} " in line for line in lines), done.stdout


def doctor(*wrapper: str, **env: str) -> tuple[int, list[str], str]:
    done = subprocess.run([*wrapper, sys.executable, "-m", "daemon", "doctor"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    return done.returncode, done.stdout.splitlines(), done.stderr


NO_SYS_ADMIN = ("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--")


def test_without_cap_sys_admin_the_namespace_is_held_in_a_user_namespace():
    """A worker that may not create a network namespace itself (not root, or a container without
    CAP_SYS_ADMIN) still gets one, from a user namespace, where the host allows those."""
    code, lines, err = doctor(*NO_SYS_ADMIN)
    assert code == 0, "\n".join(lines) + err
    assert any(line.startswith("on  namespace") and "held in a user namespace" in line for line in lines), lines


def test_where_namespaces_are_refused_browserd_says_so_and_falls_back():
    """No CAP_SYS_ADMIN and no user namespace left to make (a limit of 0, set in a user namespace of the
    test's own): said at start and by doctor, and the fallback layers stay on."""
    confined = ("unshare", "--user", "--map-root-user", "sh", "-c",
                'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh", *NO_SYS_ADMIN)
    code, lines, err = doctor(*confined, BROWSERD_CHROME_USER="")  # root in there maps no other user
    assert code == 1, "\n".join(lines) + err
    assert any(line.startswith("OFF namespace") and "CAP_SYS_ADMIN" in line and "No space left" in line
               for line in lines), lines
    assert "off: namespace (unshare(CLONE_NEWNET): Operation not permitted" in err
    for layer in ("webrtc_policy", "network_service_watch", "minimal_environment"):
        assert any(line.startswith("on ") and f" {layer} " in line for line in lines), lines
