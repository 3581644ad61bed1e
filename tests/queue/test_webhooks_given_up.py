"""Given-up webhook deliveries are kept, listed and redelivered (issue 25, item 2).

A receiver down longer than the retry schedule lost every notification sent meanwhile, with
nothing recording what was dropped. Here the schedule is 3 s (two retries) and the receiver is
down: the delivery is given up and kept; the API and ``browserd webhooks given-up`` list it; once
the receiver is back ``browserd webhooks redeliver --all`` sends it, with the same delivery id.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.batches.helpers import quick_script
from tests.queue.hooks import Hooks
from tests.queue.stack import ROOT, Stack, stack, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(webhook_allowed_networks="127.0.0.1/32", webhook_retry_seconds=3, job_timeout=60) as s:
        s.start_worker(2)
        yield s


def browserd(s: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_a_given_up_delivery_is_kept_listed_and_redelivered(deploy: Stack, site: StaticServer) -> None:
    with Hooks() as receiver:
        receiver.status = 503  # the receiver is down
        job = deploy.submit({"script": quick_script(site.url("/cdp/basic.html"), 0), "webhook_url": receiver.url})
        assert deploy.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=60)["state"] == "succeeded"

        def kept() -> list[dict[str, Any]]:
            return deploy.call("GET", "/v1/webhooks/given-up")[1]

        given_up = wait_until(kept, 60, "the delivery to be given up and kept")
        assert len(given_up) == 1 and given_up[0]["url"] == receiver.url and given_up[0]["attempts"] == 3, given_up
        delivery_id = given_up[0]["delivery_id"]
        assert [post["answered"] for post in receiver.posts] == [503, 503, 503]
        assert given_up[0]["payload"]["job"]["id"] == job["id"]

        listed = browserd(deploy, "webhooks", "given-up", "--json")
        assert listed.returncode == 0 and [d["delivery_id"] for d in json.loads(listed.stdout)] == [delivery_id]

        # bad input and no token
        assert deploy.call("POST", "/v1/webhooks/given-up/no-such-delivery/redeliver")[0] == 404
        assert deploy.call("POST", "/v1/webhooks/given-up/bad%20id/redeliver")[0] == 422
        assert deploy.call("GET", "/v1/webhooks/given-up?limit=0")[0] == 422
        assert deploy.call("GET", "/v1/webhooks/given-up", token=None)[0] == 401
        assert deploy.call("POST", "/v1/webhooks/given-up/redeliver", token="wrong")[0] == 401
        assert browserd(deploy, "webhooks", "redeliver").returncode == 2

        receiver.status = 200  # the receiver is back
        again = browserd(deploy, "webhooks", "redeliver", "--all")
        assert again.returncode == 0 and "redelivering 1 " in again.stdout, again.stdout + again.stderr
        wait_until(lambda: [p["answered"] for p in receiver.of(delivery_id)][-1] == 200, 60,
                   "the redelivery to reach the receiver")
        assert kept() == []
