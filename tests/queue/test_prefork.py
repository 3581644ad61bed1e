"""Celery's prefork pool, for users who run ``celery worker -P prefork`` themselves.

``browserd worker`` uses the threads pool (one loop, one browser pool per process). Celery cannot
tell ``-P prefork`` from its default, so our ``worker_pool`` setting wins over it; prefork is
chosen by its other name, ``-P processes``. Under
prefork each child process must start its own runtime after the fork (a loop and browsers are
never inherited), and every child's Chrome must go when the worker stops.
"""

from __future__ import annotations

import socket
import sys

import pytest

from tests.queue.stack import Proc, running, script, stack, tree_of, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e  # a deployment (tests/queue/stack.py) started in the test


def test_a_prefork_worker_runs_jobs_with_a_runtime_per_child(site: StaticServer) -> None:
    with stack(metrics_port=0) as s:
        args = [sys.executable, "-m", "celery", "-A", "workers.jobs.queue.app:app", "worker", "--pool=processes",
                "--concurrency=2", "--queues=high,normal,low", "--hostname=prefork@%h", "--loglevel=INFO",
                "--without-mingle", "--without-gossip"]
        worker = Proc("prefork", args, s.env, s.dir)
        s.workers.append(worker)
        def ready() -> bool:
            assert worker.alive, f"the prefork worker exited:\n{worker.log()}"
            return s.redis.zcard("browserd:workers") >= 2

        try:
            wait_until(ready, 120, "both prefork children to report ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{worker.log()}") from None
        ids = [s.submit({"script": script(site.url("/cdp/basic.html"), waits=1)})["id"] for _ in range(4)]
        jobs = [s.wait_state(job_id, {"succeeded", "failed"}, 120) for job_id in ids]
        assert [j["state"] for j in jobs] == ["succeeded"] * 4, [j.get("error") for j in jobs]
        runtimes = {w.split(":")[1] for w in s.redis.zrange("browserd:workers", 0, -1)}
        assert len(runtimes) == 2 and str(worker.pid) not in runtimes, "one runtime per child, none in the parent"
        nodes = {s.redis.hget(f"browserd:worker:{w}", "node") for w in s.redis.zrange("browserd:workers", 0, -1)}
        assert nodes == {f"prefork@{socket.gethostname()}"}, "the children go by their Celery node's name"
        tree = tree_of(worker)
        assert len(tree) > 3  # the parent, two children and their browsers
        worker.stop()
    assert not [pid for pid in tree if running(pid)], "a stopped prefork worker leaves no process behind"
