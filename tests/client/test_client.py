"""daemon.client: the public Python client against a real deployment."""

from __future__ import annotations

import asyncio

import pytest

from daemon.client import ApiUnreachable, AsyncClient, Client, RequestRefused
from tests.queue.stack import TOKEN, Stack, script
from tests.support.servers import StaticServer
from workers.jobs import JobSpec, JobStatus


def test_submit_wait_events_and_list(deploy: Stack, site: StaticServer) -> None:
    with Client(deploy.url, TOKEN) as browserd:
        job = browserd.submit(JobSpec(script=script(site.url("/cdp/basic.html"), waits=1, text="typed"),
                                      labels={"via": "client"}))
        assert job.created and job.state in (JobStatus.queued, JobStatus.running)
        done = browserd.wait(job.id)
        assert done.state == JobStatus.succeeded and done.result is not None
        assert done.result.final_answer == "typed"
        kinds = [event.type for event in browserd.events(job.id, follow=False)]
        assert kinds.count("step") == 3 and kinds[-1] == "end"
        page = browserd.jobs(labels={"via": "client"})
        assert [j.id for j in page.jobs] == [job.id]
        again = browserd.submit({"script": script(site.url("/cdp/basic.html")), "idempotency_key": f"k-{job.id}"})
        assert browserd.submit({"script": script(site.url("/cdp/basic.html")),
                                "idempotency_key": f"k-{job.id}"}).created is False
        browserd.wait(again.id)


def test_batches_with_defaults_and_results_carrying_labels(deploy: Stack, site: StaticServer) -> None:
    with Client(deploy.url, TOKEN) as browserd:
        specs = [{"script": script(site.url("/cdp/basic.html"), waits=0, text=f"n{i}"), "labels": {"n": str(i)}}
                 for i in range(3)]
        batch = browserd.submit_batch(specs, defaults={"labels": {"run": "client"}})
        assert batch.total == 3
        done = browserd.wait_batch(batch.id, interval=0.3)
        assert done.finished and done.counts.succeeded == 3
        lines = list(browserd.results(batch.id))
        assert [(line.final_answer, line.labels) for line in lines] == [
            (f"n{i}", {"run": "client", "n": str(i)}) for i in range(3)]
        assert batch.id in [b.id for b in browserd.batches(limit=5)]


def test_schedules_round_trip(deploy: Stack, site: StaticServer) -> None:
    with Client(deploy.url, TOKEN) as browserd:
        made = browserd.create_schedule({"every": 3600, "job": {"script": script(site.url("/cdp/basic.html"))},
                                         "name": "hourly", "enabled": False})
        assert made.name == "hourly" and not made.enabled
        assert made.id in [s.id for s in browserd.schedules()]
        assert browserd.schedule(made.id, "resume").enabled
        run = browserd.schedule(made.id, "run")
        assert run.schedule_id == made.id
        browserd.schedule(made.id, "delete")
        with pytest.raises(RequestRefused) as gone:
            browserd.schedule(made.id)
        assert gone.value.status == 404


def test_refusals_name_the_field_and_an_absent_api_is_unreachable(deploy: Stack) -> None:
    with Client(deploy.url, TOKEN) as browserd:
        with pytest.raises(RequestRefused) as bad:
            browserd.submit({"task": "x", "options": {"max_steps": 0}})
        assert bad.value.status == 422 and bad.value.fields[0]["field"] == "options.max_steps"
    with Client(deploy.url, "wrong") as intruder, pytest.raises(RequestRefused) as denied:
        intruder.jobs()
    assert denied.value.status == 401
    with Client("http://127.0.0.1:9", TOKEN) as nowhere, pytest.raises(ApiUnreachable):
        nowhere.get("0" * 32)


def test_the_async_client_does_the_same(deploy: Stack, site: StaticServer) -> None:
    async def scenario() -> tuple[str, list[str]]:
        async with AsyncClient(deploy.url, TOKEN) as browserd:
            job = await browserd.submit({"script": script(site.url("/cdp/basic.html"), waits=0, text="async")})
            done = await browserd.wait(job.id)
            batch = await browserd.submit_batch([{"script": script(site.url("/cdp/basic.html"), waits=0)}])
            while not (await browserd.batch(batch.id)).finished:
                await asyncio.sleep(0.3)
            statuses = [line.status async for line in browserd.results(batch.id)]
            return done.result.final_answer if done.result else "", statuses

    assert asyncio.run(scenario()) == ("async", ["succeeded"])
