"""Listing a schedule's jobs: ``GET /v1/jobs?schedule=``, the clients, ``browserd jobs --schedule``
and the console's jobs filter, against the shared deployment (real API, worker and Redis)."""

from __future__ import annotations

import asyncio
import json
import re

import httpx

from daemon.client import AsyncClient, Client
from tests.batches.helpers import quick_script, wait_completed
from tests.batches.test_cli import browserd
from tests.queue.stack import TOKEN, Stack
from tests.support.servers import StaticServer
from workers.jobs.ids import new_id

LABEL = {"suite": "schedule-filter"}


def listed(s: Stack, query: str) -> tuple[int, dict]:
    return s.call("GET", "/v1/jobs?" + query)


def test_jobs_are_listed_by_the_schedule_that_made_them(ops: Stack, site: StaticServer) -> None:
    job = {"script": quick_script(site.url("/cdp/basic.html"), 0), "labels": LABEL}
    status, created = ops.call("POST", "/v1/schedules", {"every": 3600, "job": job, "enabled": False})
    assert status == 201, created
    sid = created["id"]
    runs = []
    for _ in range(2):  # two runs, each a batch of one job
        status, run = ops.call("POST", f"/v1/schedules/{sid}/run")
        assert status == 201, run
        runs.append(wait_completed(ops, run["id"], timeout=120)["id"])
    other = ops.submit(job)  # the same template and label, but not the schedule's
    ops.wait_state(other["id"], {"succeeded"}, timeout=120)

    status, page = listed(ops, f"schedule={sid}")
    assert status == 200, page
    jobs = page["jobs"]
    assert len(jobs) == 2 and other["id"] not in [j["id"] for j in jobs]
    assert [j["batch"] for j in jobs] == runs[::-1], "newest first: the second run's job, then the first's"
    assert all(j["schedule"] == sid for j in jobs)
    ids = [j["id"] for j in jobs]
    assert [j["id"] for j in listed(ops, f"schedule={sid}&label=suite%3Dschedule-filter")[1]["jobs"]] == ids
    assert listed(ops, f"schedule={sid}&label=suite%3Dother")[1]["jobs"] == []
    assert listed(ops, f"schedule={sid}&state=failed")[1]["jobs"] == []
    first = listed(ops, f"schedule={sid}&limit=1")[1]
    rest = listed(ops, f"schedule={sid}&limit=1&cursor={first['next_cursor']}")[1]
    assert [j["id"] for j in first["jobs"] + rest["jobs"]] == ids

    # a well-formed id of no schedule matches nothing, as an unknown label does; text that is no id is refused
    assert listed(ops, f"schedule={new_id()}") == (200, {"jobs": [], "next_cursor": None})
    for bad in ("nope", sid.upper(), sid + "0", "../x"):
        status, err = listed(ops, "schedule=" + bad)
        assert status == 422 and err["fields"][0]["field"] == "schedule", (bad, err)

    # the clients
    with Client(ops.url, TOKEN) as client:
        assert [j.id for j in client.jobs(schedule=sid).jobs] == ids

    async def via_async() -> list[str]:
        async with AsyncClient(ops.url, TOKEN) as client:
            return [j.id for j in (await client.jobs(schedule=sid, labels=LABEL)).jobs]

    assert asyncio.run(via_async()) == ids

    # the CLI
    shown = browserd(ops, "jobs", "--schedule", sid, "--json")
    assert shown.returncode == 0, shown.stderr.decode()
    assert [j["id"] for j in json.loads(shown.stdout)["jobs"]] == ids
    paged = browserd(ops, "jobs", "--schedule", sid, "--limit", "1").stdout.decode()
    assert ids[0] in paged and f"--schedule {sid}" in paged, "the next page's command keeps the filter"
    refused = browserd(ops, "jobs", "--schedule", "nope")
    assert refused.returncode != 0 and "'nope' is not a schedule id" in refused.stderr.decode()

    # the console: the jobs page's filter, and the schedule page's link to it
    with httpx.Client(base_url=ops.url, follow_redirects=True, timeout=30) as console:
        page = console.get(f"/ui/?token={TOKEN}&schedule={sid}")
        assert page.status_code == 200 and page.url.path == "/ui/"
        assert re.findall(r'<tr data-job="([0-9a-f]+)"', page.text) == ids
        assert f'name="schedule" placeholder="schedule id" value="{sid}"' in page.text
        assert re.findall(r'<tr data-job="', console.get(f"/ui/?schedule={new_id()}").text) == []
        bad = console.get("/ui/?schedule=%3Cb%3Enope")
        assert bad.status_code == 422 and "is not a schedule id" in bad.text and "<b>nope" not in bad.text
        assert f'href="/ui/?schedule={sid}"' in console.get(f"/ui/schedules/{sid}").text
    assert ops.call("DELETE", f"/v1/schedules/{sid}")[0] == 204
