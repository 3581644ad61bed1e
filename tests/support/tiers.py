"""The two tiers of the suite: ``e2e`` tests and the fast tier (``pytest -m "not e2e"``).

A test is ``e2e`` when it needs Chromium, a browserd process (``python -m daemon ...``: the API,
a worker, beat, the CLI, the MCP server), Celery, a real upstream proxy (pproxy) or another
server process (Prometheus, Alertmanager, redis_exporter, moto's S3). Everything else is the fast tier:
models, specs, the codec, the failure table, prompt builders, ``dom`` on recorded snapshots, the
pipeline's stages with collaborators that need no browser. A fast test may start a redis-server
(about 10 ms, one per module) and in-process threads (static sites, the scripted model).

How a test becomes ``e2e`` (this module is a plugin, loaded by tests/conftest.py):

* automatically, when its fixture closure holds one of ``E2E_FIXTURES`` (every fixture of the
  suite that starts such a process, directly or through a ``Stack``);
* explicitly, with ``pytestmark = pytest.mark.e2e`` on a module (or ``@pytest.mark.e2e`` on a
  test) that starts them in its own body.

And why the tiers cannot drift apart: every subprocess the test process starts passes an audit
hook (``sys.addaudithook``). While a fast test sets up or runs, starting one of those processes
raises ``E2ELaunch`` there and fails the test, with what to do about it; the test fails even
if the code under test swallowed the error. In a full run the launch is the fast test's when it
comes from the test's own context (its thread, its asyncio tasks): a browser an earlier e2e test's
pool relaunches in the background is not; in a run of the fast tier alone, any launch is.
"""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from cdp.launcher import CANDIDATES

E2E = "e2e"

E2E_FIXTURES = frozenset({
    # Chromium
    "pool",  # tests/conftest.py, tests/agent/conftest.py: the session's browser pool
    "page",  # tests/dom/conftest.py: a page leased from ``pool``
    "offline_pool",  # tests/dom/test_inspect.py: a pool whose Chrome has no network
    # browserd deployments (tests/queue/stack.py: redis-server, ``python -m daemon serve``, workers)
    "deploy",  # tests/cli, tests/client conftests; tests/queue/test_{api,jobs,faults,artifacts,politeness,redelivery}.py
    "ops",  # tests/batches/conftest.py: API, worker and beat
    "frontend_stack",  # tests/frontends/conftest.py
    "stack",  # tests/ops/test_live_scrape.py
    "s",  # tests/queue/test_follow_up.py, tests/recipes/test_recipes.py
    # other server processes
    "upstream",  # tests/cdp/test_upstream_proxy.py, tests/agent/test_browser_settings.py: pproxy
    "alertmanager",  # tests/ops/test_alerts.py: Alertmanager and the alert receiver script
    "redis_exporter",  # tests/ops/test_live_scrape.py
    "s3",  # tests/queue/conftest.py: moto's S3 server (tests/support/s3_server.py)
})
"""Fixtures that start Chromium or a server process; a test whose fixture closure holds one is e2e."""


class E2ELaunch(RuntimeError):
    """A test of the fast tier started a process only e2e tests may start."""


def e2e_process(argv: Sequence[str]) -> str | None:
    """What ``argv`` starts when it is a process of the e2e tier (None: any other process).

    Every word is looked at, not only the program's: Chrome is started through ``bash -c 'exec "$@"'``
    (cdp.launcher), and a shell may start anything."""
    words = [word for arg in argv for word in arg.split()]
    names = {os.path.basename(word) for word in words}
    modules = {words[i + 1] for i, word in enumerate(words[:-1]) if word == "-m"}
    if names.intersection(CANDIDATES) or any(word.startswith("--remote-debugging-") for word in words):
        return "Chromium"
    if "daemon" in modules or "browserd" in names:
        return "a browserd process (python -m daemon)"
    if "moto.server" in modules or "moto_server" in names:
        return "moto (an S3 server)"
    for server in ("celery", "pproxy", "uvicorn", "prometheus", "alertmanager", "redis_exporter"):
        if server in modules or server in names:
            return server
    return None


@dataclass
class Guard:
    """The fast test running now and what it launched that it may not."""

    running: str | None = None  # node id of the fast test in setup or call
    alone: bool = False  # the run selected no e2e test: every launch during a fast test is its own
    launched: list[str] = field(default_factory=list)


GUARD = Guard()
_IN_TEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("fast_test", default=None)
"""The fast test whose setup or call this context serves (asyncio tasks inherit it; background
tasks created earlier, by e2e tests, do not)."""


def _argv(event: str, args: tuple[Any, ...]) -> list[str] | None:
    if event in ("subprocess.Popen", "os.posix_spawn"):  # (executable or path, argv, ...)
        executable, command = args[0], args[1]
    elif event == "os.system":
        executable, command = None, args[0]
    else:
        return None
    if isinstance(command, (str, bytes, os.PathLike)):
        argv = os.fsdecode(command).split()
    else:
        argv = [os.fsdecode(arg) for arg in command or ()]
    if executable is not None and (not argv or os.fsdecode(executable) != argv[0]):
        argv = [os.fsdecode(executable), *argv]  # what runs, and what it is told it is: both count
    return argv


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if GUARD.running is None or event not in ("subprocess.Popen", "os.posix_spawn", "os.system"):
        return
    test = _IN_TEST.get() or (GUARD.running if GUARD.alone else None)
    if test is None:
        return
    argv = _argv(event, args)
    what = e2e_process(argv) if argv else None
    if what is None:
        return
    message = (f"{test} is in the fast tier but started {what}: {' '.join(argv)[:300]}\n"
               "A test that needs it is e2e: mark it (pytestmark = pytest.mark.e2e, or @pytest.mark.e2e) "
               "or, for a fixture that starts it, add the fixture's name to E2E_FIXTURES in tests/support/tiers.py.")
    GUARD.launched.append(message)
    raise E2ELaunch(message)


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_audit)  # process-wide and for good: it acts only while a fast test runs


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())) and item.get_closest_marker(E2E) is None:
            item.add_marker(E2E)


def pytest_collection_finish(session: pytest.Session) -> None:
    GUARD.alone = not any(item.get_closest_marker(E2E) for item in session.items)


def _guarded(item: pytest.Item) -> Generator[None, object, object]:
    if item.get_closest_marker(E2E) is not None:
        return (yield)
    token = _IN_TEST.set(item.nodeid)
    GUARD.running, GUARD.launched = item.nodeid, []
    try:
        outcome = yield
    finally:
        GUARD.running = None
        _IN_TEST.reset(token)
    if GUARD.launched:  # the error was caught on the way (a pool that retries, a handler that logs)
        pytest.fail(GUARD.launched[0], pytrace=False)
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))
