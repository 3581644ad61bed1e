"""The fast tier cannot take in an e2e test unnoticed (tests/support/tiers.py).

The guard is tried on a small suite of its own, run by a pytest subprocess with the tiers plugin:
the processes its tests "start" are ``python -c pass -m daemon``, which the guard takes for a
browserd process (the words ``-m daemon``) while Python only runs ``pass``, so nothing heavy runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.queue.stack import ROOT
from tests.support.tiers import E2E_FIXTURES, e2e_process

DAEMON = '[sys.executable, "-c", "pass", "-m", "daemon"]'  # the guard sees ``-m daemon``; Python runs ``pass``

SUITE = f'''
import asyncio, subprocess, sys

import pytest

from cdp import Browser

BACKGROUND = []


@pytest.fixture
def pool():  # an e2e fixture's name: its tests are e2e, whatever it does
    return None


def test_fast_starts_a_daemon():
    subprocess.run({DAEMON}, check=True)


def test_fast_starts_chromium():
    asyncio.run(Browser.launch(timeout=5))


def test_fast_swallows_the_refusal():
    try:
        subprocess.run([sys.executable, "-c", "pass", "-m", "pproxy"], check=True)
    except Exception:
        pass


async def test_fast_starts_one_in_a_task_of_its_own():
    proc = await asyncio.gather(asyncio.create_subprocess_exec(*{DAEMON}))
    await proc[0].wait()


@pytest.mark.e2e
def test_marked_starts_a_daemon():
    subprocess.run({DAEMON}, check=True)


def test_keyed_by_its_fixture_starts_a_daemon(pool):
    subprocess.run({DAEMON}, check=True)


@pytest.mark.e2e
async def test_marked_leaves_a_task_behind():
    async def later():
        await asyncio.sleep(0.05)
        return await asyncio.create_subprocess_exec(*{DAEMON})

    BACKGROUND.append(asyncio.get_running_loop().create_task(later()))


async def test_fast_while_an_e2e_tests_task_starts_a_daemon():
    """Not this test's launch: the task was made by the e2e test before it, in that test's context."""
    proc = await BACKGROUND.pop()
    await proc.wait()


def test_fast_starts_a_redis_server_and_python():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    subprocess.run(["redis-server", "--version"], check=True, capture_output=True)
'''

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
markers =
    e2e: needs a browser or a server process
"""


def run_suite(tmp_path: Path, *args: str) -> dict[str, str]:
    """Each test of ``SUITE`` and its outcome (and the output, under ``"output"``)."""
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_suite.py").write_text(SUITE)
    # only the plugins the suite needs: loading every installed one (schemathesis, hypothesis) takes seconds
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.support.tiers", "-p", "pytest_asyncio.plugin",
                           "-p", "no:cacheprovider", "-rA", "-q", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    found = re.findall(r"^(PASSED|FAILED|ERROR) test_suite\.py::(\w+)", done.stdout, re.M)
    return {name: outcome for outcome, name in found} | {"output": done.stdout + done.stderr}


def _outcomes(found: dict[str, str]) -> dict[str, str]:
    return {name: outcome for name, outcome in found.items() if name != "output"}


def test_a_fast_test_that_starts_an_e2e_process_fails_and_an_e2e_test_may(tmp_path: Path) -> None:
    found = run_suite(tmp_path)
    assert _outcomes(found) == {
        "test_fast_starts_a_daemon": "FAILED",
        "test_fast_starts_chromium": "FAILED",
        "test_fast_swallows_the_refusal": "FAILED",
        "test_fast_starts_one_in_a_task_of_its_own": "FAILED",
        "test_marked_starts_a_daemon": "PASSED",
        "test_keyed_by_its_fixture_starts_a_daemon": "PASSED",
        "test_marked_leaves_a_task_behind": "PASSED",
        "test_fast_while_an_e2e_tests_task_starts_a_daemon": "PASSED",
        "test_fast_starts_a_redis_server_and_python": "PASSED",
    }, found["output"]
    output = found["output"]
    assert "test_fast_starts_chromium is in the fast tier but started Chromium" in output
    assert "test_fast_starts_a_daemon is in the fast tier but started a browserd process" in output
    assert "test_fast_swallows_the_refusal is in the fast tier but started pproxy" in output
    assert "E2E_FIXTURES in tests/support/tiers.py" in output


def test_the_fast_tier_alone_deselects_what_is_marked_or_keyed(tmp_path: Path) -> None:
    found = _outcomes(run_suite(tmp_path, "-m", "not e2e", "-k", "not while_an_e2e"))
    assert found == {
        "test_fast_starts_a_daemon": "FAILED",
        "test_fast_starts_chromium": "FAILED",
        "test_fast_swallows_the_refusal": "FAILED",
        "test_fast_starts_one_in_a_task_of_its_own": "FAILED",
        "test_fast_starts_a_redis_server_and_python": "PASSED",
    }


@pytest.mark.parametrize("argv, what", [
    (["/bin/bash", "-c", 'exec "$@" 3<&10 4>&11', "bash", "/usr/bin/chromium", "--headless=new",
      "--remote-debugging-pipe"], "Chromium"),
    (["/opt/wrapper.sh", "--remote-debugging-port=0"], "Chromium"),
    ([sys.executable, "-m", "daemon", "worker", "--concurrency=2"], "a browserd process (python -m daemon)"),
    (["/usr/local/bin/browserd", "serve"], "a browserd process (python -m daemon)"),
    ([sys.executable, "-m", "pproxy", "-l", "http://127.0.0.1:1"], "pproxy"),
    (["celery", "-A", "workers.celery_app", "worker"], "celery"),
    (["/usr/bin/alertmanager", "--config.file=x"], "alertmanager"),
    ([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "1"], "moto (an S3 server)"),
    (["redis-server", "--port", "1"], None),
    ([sys.executable, "-c", "import daemon.client"], None),
    ([sys.executable, "-m", "mkdocs", "build"], None),
    (["/usr/bin/promtool", "check", "rules", "x"], None),
])
def test_what_the_guard_takes_for_an_e2e_process(argv: list[str], what: str | None) -> None:
    assert e2e_process(argv) == what


def test_every_e2e_fixture_is_defined_in_the_suite() -> None:
    """A renamed fixture must leave the list too (its tests would then meet the guard, not pass unmarked)."""
    sources = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py"))
    defined = set(re.findall(r"^(?:async )?def (\w+)\(", sources, re.M))
    assert E2E_FIXTURES <= defined, E2E_FIXTURES - defined
