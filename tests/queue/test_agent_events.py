"""The agent's execution events reach the job's stream and its server-sent events."""

from __future__ import annotations

import pytest

from tests.queue.stack import script, stack
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e  # a deployment (tests/queue/stack.py) started in the test


def test_a_jobs_events_carry_the_agents_execution_events(site: StaticServer) -> None:
    with stack(job_timeout=60, visibility_timeout=120) as s:
        s.start_worker(1)
        job = s.submit({"script": script(site.url("/cdp/basic.html"), waits=1, text="evented")})
        assert s.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=90)["state"] == "succeeded"
        events = s.events(job["id"])
    agent = [data for kind, data in events if kind == "agent"]
    states = [(e["actor"], e["state"]) for e in agent]
    assert states[0] == ("system", "task.start") and states[-1] == ("system", "task.ok")
    assert states.count(("system", "step.start")) == states.count(("system", "step.ok")) == 3
    assert [e["action"] for e in agent if e["state"] == "act.ok"] == ["go_to_url", "wait", "done"]
    assert all(e["timestamp"] and e["max_steps"] == 3 for e in agent)
    kinds = [kind for kind, _ in events if kind != "end"]
    assert kinds.index("agent") > kinds.index("state") and kinds[-1] == "state", "the final state comes last"
