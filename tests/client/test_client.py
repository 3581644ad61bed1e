"""daemon.client: the public Python client against a real deployment."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from daemon.client import ApiUnreachable, AsyncClient, Client, RequestRefused
from tests.queue.stack import TOKEN, Stack, script
from tests.support.servers import StaticServer
from workers.jobs.batches.models import ResultLine
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus


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


def test_an_output_schema_past_a_limit_is_refused_naming_it(deploy: Stack) -> None:
    with Client(deploy.url, TOKEN) as browserd, pytest.raises(RequestRefused) as bad:
        browserd.submit({"task": "x", "output_schema": {"$ref": "#"}})
    assert bad.value.status == 422 and "schema limit 'recursion'" in str(bad.value)
    assert bad.value.fields[0]["field"] == "output_schema" and bad.value.fields[0]["limit"] == "recursion"


def test_the_async_client_does_the_same(deploy: Stack, site: StaticServer) -> None:
    async def scenario() -> tuple[str, list[str]]:
        async with AsyncClient(deploy.url, TOKEN) as browserd:
            job = await browserd.submit({"script": script(site.url("/cdp/basic.html"), waits=0, text="async")})
            done = await browserd.wait(job.id)
            batch = await browserd.submit_batch([{"script": script(site.url("/cdp/basic.html"), waits=0)}])
            assert (await browserd.wait_batch(batch.id, interval=0.3)).counts.succeeded == 1
            statuses = [line.status async for line in browserd.results(batch.id)]
            return done.result.final_answer if done.result else "", statuses

    assert asyncio.run(scenario()) == ("async", ["succeeded"])


def _public(cls: type) -> dict[str, list[tuple[str, object, object]]]:
    return {name: [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
            for name, member in inspect.getmembers(cls) if not name.startswith("_")}


def test_both_clients_offer_the_same_methods_with_the_same_parameters() -> None:
    assert _public(AsyncClient) == _public(Client)
    for name in _public(Client):
        blocking, awaited = getattr(Client, name), getattr(AsyncClient, name)
        if inspect.isgeneratorfunction(blocking):
            assert inspect.isasyncgenfunction(awaited), f"AsyncClient.{name} should be an async iterator"
        else:
            assert inspect.iscoroutinefunction(awaited), f"AsyncClient.{name} should be awaited"


def test_the_async_client_follows_a_job_across_an_api_restart(deploy: Stack, site: StaticServer) -> None:
    """The API goes away after the first step and comes back: ``follow`` resumes from the last
    event it saw, so every step arrives once, and ``wait`` then gives the final record."""

    async def scenario() -> tuple[list[str], list[str], str]:
        async with AsyncClient(deploy.url, TOKEN) as browserd:
            job = await browserd.submit({"script": script(site.url("/cdp/basic.html"), waits=3, text="back")})
            ids, kinds, restart = [], [], None
            async for event in browserd.follow(job.id):
                ids.append(event.id)
                kinds.append(event.type)
                if restart is None and event.type == "step":
                    assert deploy.api is not None
                    deploy.api.stop()
                    restart = asyncio.create_task(asyncio.to_thread(deploy.start_api))
            assert restart is not None
            await restart
            done = await browserd.wait(job.id)
            return ids, kinds, done.result.final_answer if done.result else str(done.state)

    ids, kinds, answer = asyncio.run(scenario())
    assert answer == "back"
    assert len(ids) == len(set(ids)), f"an event came twice: {ids}"
    assert kinds.count("step") == 5 and "end" not in kinds


def test_the_async_client_reads_lines_saves_artifacts_and_counts_workers(deploy: Stack, site: StaticServer,
                                                                           tmp_path: Path) -> None:
    texts = ["large " * 12_000, "small"]  # the first answer is above the inline size: stored as an artifact

    async def scenario() -> tuple[list[str], list[str], dict[str, bytes], dict[str, bytes], int]:
        async with AsyncClient(deploy.url, TOKEN) as browserd:
            batch = await browserd.submit_batch([{"script": script(site.url("/cdp/basic.html"), waits=0, text=t)}
                                                 for t in texts])
            await browserd.wait_batch(batch.id, interval=0.3)
            lines = [line async for line in browserd.result_lines(batch.id)]
            answers = [line.final_answer or "" async for line in browserd.results(batch.id)]
            job_id = ResultLine.model_validate_json(lines[0]).id
            saved = {path.name: path.read_bytes() for path in await browserd.save_artifacts(job_id, tmp_path / "a")}
            served = {Path(link.name).name: await browserd.artifact(job_id, link.name)
                      for link in await browserd.artifacts(job_id)}
            return lines, answers, saved, served, await browserd.live_workers()

    lines, answers, saved, served, workers = asyncio.run(scenario())
    assert answers == texts and [ResultLine.model_validate_json(raw).final_answer for raw in lines] == answers
    assert saved and saved == served
    assert workers >= 1
