"""Artifacts on S3, end to end: a real S3-compatible server (moto's server mode, a process of its
own), redis-server, the API and a Celery worker with Chromium, every browserd process configured
only through its environment: ``BROWSERD_ARTIFACTS_URL=s3://bucket/prefix`` and the AWS variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``).

A job's steps, final page, console log, downloads and offloaded result land as objects under the
prefix; the API lists and serves them back; the reconciler deletes them once the record expired."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.client import Client
from tests.queue.stack import TOKEN, Stack, script, stack, wait_until
from tests.support.s3_server import BUCKET, S3Server
from tests.support.servers import StaticServer, serve
from workers.jobs.store.keys import Keys

PREFIX = f"{BUCKET}/fleet-a"
INLINE = 2048
FINISHED = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def deploy(s3: S3Server) -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120, artifacts_url=f"s3://{PREFIX}", artifact_inline_bytes=INLINE,
               reconcile_interval=1, env=s3.env) as s:
        s.start_worker(2)
        yield s


@pytest.fixture(scope="module")
def download_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticServer]:
    root = tmp_path_factory.mktemp("downloads")
    (root / "downloads.html").write_text('<a href="r.csv" download="report.csv">report</a>')
    (root / "r.csv").write_text("name,price\nkettle,39.90\n")
    with serve(root) as server:
        yield server


def finished(s: Stack, spec: dict[str, Any]) -> dict[str, Any]:
    return s.wait_state(s.submit(spec)["id"], FINISHED, timeout=120)


def objects(s3: S3Server, job_id: str) -> dict[str, bytes]:
    """The job's objects in the bucket, by file name, read with a client of the test's own. An object
    listed and then deleted before it is read (the reconciler deleting while we look) is gone."""
    fs = s3.filesystem()
    found = {}
    for key in s3.keys(f"{PREFIX}/jobs/{job_id}"):
        try:
            found[key.rsplit("/", 1)[1]] = fs.cat_file(key)
        except FileNotFoundError:
            continue
    return found


def test_steps_page_and_console_land_in_s3_and_the_api_serves_them(deploy: Stack, s3: S3Server,
                                                                   site: StaticServer) -> None:
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("agent/artifacts.html")}},
                                       {"wait": {"seconds": 0}}, {"click_element": {"index": 99}}],
                            "artifacts": {"screenshots": "every_step"}})
    assert job["state"] == "failed"
    stored = objects(s3, job["id"])
    assert sorted(stored) == ["console.jsonl", "network.jsonl", "page.html", "page.md",
                              "step-001.jpg", "step-002.jpg", "step-003.jpg"]
    assert not list(Path(deploy.dir).rglob("step-001.jpg")), "nothing was written to a local folder"
    status, listing = deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts")
    assert status == 200 and [a["name"] for a in listing] == sorted(stored)
    assert listing == job["result"]["artifacts"]
    assert [a["size"] for a in listing] == [len(stored[a["name"]]) for a in listing]
    for name, body in stored.items():
        status, headers, served = deploy.fetch(f"/v1/jobs/{job['id']}/artifacts/{name}")
        assert status == 200 and served == body, name
    status, headers, shot = deploy.fetch(f"/v1/jobs/{job['id']}/artifacts/step-001.jpg")
    assert headers["content-type"] == "image/jpeg" and shot[:3] == b"\xff\xd8\xff"
    assert headers["content-disposition"].startswith("inline")
    status, headers, page = deploy.fetch(f"/v1/jobs/{job['id']}/artifacts/page.html")
    assert b"Order status" in page and headers["content-disposition"].startswith("attachment")
    console = stored["console.jsonl"].decode().splitlines()
    assert any(json.loads(line)["text"] == "page ready 42" for line in console)
    assert objects(s3, job["id"]) == stored, "reading them changed nothing"


def test_a_listing_read_while_the_job_runs_hides_none_of_its_later_files(deploy: Stack, s3: S3Server,
                                                                        site: StaticServer) -> None:
    """The API and the console read S3 while workers write it: what they saw before is not kept."""
    job = deploy.submit({"script": script(site.url("cdp/basic.html"), waits=3), "artifacts": {"screenshots": "every_step"}})
    base = f"/v1/jobs/{job['id']}/artifacts"
    early = wait_until(lambda: (listing := deploy.call("GET", base)[1]) and listing, 60, "a first screenshot")
    assert [a["name"] for a in early][:1] == ["step-001.jpg"] and len(early) < 5
    done = deploy.wait_state(job["id"], FINISHED, timeout=120)
    assert done["state"] == "succeeded", done["error"]
    status, listing = deploy.call("GET", base)
    shots = [f"step-00{n}.jpg" for n in range(1, 6)]
    # five steps' records pass BROWSERD_ARTIFACT_INLINE_BYTES: the result went to S3 too, after the listing
    assert [a["name"] for a in listing] == ["result.json", *shots] == sorted(objects(s3, job["id"]))
    assert done["result"]["result_artifact"] == f"{base}/result.json" and len(done["result"]["steps"]) == 5
    status, _, shot = deploy.fetch(f"{base}/step-005.jpg")
    assert status == 200 and shot == objects(s3, job["id"])["step-005.jpg"]


def test_a_download_lands_in_s3_and_is_served(deploy: Stack, s3: S3Server, download_site: StaticServer) -> None:
    job = finished(deploy, {"start_url": download_site.url("downloads.html"),
                            "script": [{"click_element": {"index": 1}}, {"done": {"text": "ok"}}]})
    assert job["state"] == "succeeded", job["error"]
    assert objects(s3, job["id"])["download-report.csv"] == b"name,price\nkettle,39.90\n"
    link = f"/v1/jobs/{job['id']}/artifacts/download-report.csv"
    assert [(d["name"], d["artifact"]) for d in job["result"]["downloads"]] == [("report.csv", link)]
    status, headers, body = deploy.fetch(link)
    assert status == 200 and body == b"name,price\nkettle,39.90\n" and headers["content-type"].startswith("text/csv")


def test_a_large_result_is_offloaded_to_s3_and_read_back(deploy: Stack, s3: S3Server, site: StaticServer) -> None:
    answer = "row;" * 2000  # 8000 bytes, above BROWSERD_ARTIFACT_INLINE_BYTES
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}}, {"done": {"text": answer}}]})
    assert job["state"] == "succeeded", job["error"]
    assert job["result"]["final_answer"] == answer
    assert job["result"]["result_artifact"] == f"/v1/jobs/{job['id']}/artifacts/result.json"
    assert json.loads(objects(s3, job["id"])["result.json"])["final_answer"] == answer
    assert answer not in deploy.redis.hget(f"browserd:job:{job['id']}", "result")
    with Client(deploy.url, TOKEN) as client:
        assert client.get(job["id"]).result.final_answer == answer
        assert json.loads(client.artifact(job["id"], "result.json"))["final_answer"] == answer


def test_missing_and_hostile_names_on_s3(deploy: Stack, site: StaticServer) -> None:
    job = finished(deploy, {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}}, {"done": {"text": "ok"}}]})
    assert deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts") == (200, [])
    status, body = deploy.call("GET", f"/v1/jobs/{job['id']}/artifacts/page.html")
    assert status == 404 and "no such artifact" in body["message"]
    for name in ("%2e%2e", "..", "a%5Cb"):
        status, _, _ = deploy.fetch(f"/v1/jobs/{job['id']}/artifacts/{name}")
        assert status == 422, name
    status, _, _ = deploy.fetch(f"/v1/jobs/{job['id']}/artifacts/..%2F..%2Fother%2Fstep-001.jpg")
    assert status == 404


def test_the_reconciler_deletes_an_expired_jobs_objects_only(deploy: Stack, s3: S3Server, site: StaticServer) -> None:
    keep = {"screenshots": "every_step"}
    spec = {"script": [{"go_to_url": {"url": site.url("cdp/basic.html")}}, {"done": {"text": "ok"}}], "artifacts": keep}
    expiring, kept = finished(deploy, spec), finished(deploy, spec)
    assert objects(s3, expiring["id"]) and objects(s3, kept["id"])
    # The record of `expiring` expires: its hash goes (as Redis's TTL would drop it) and the index of
    # what expires says it is due (as it would be BROWSERD_RESULT_TTL after it finished).
    keys = Keys()
    (member,) = [m for m in deploy.redis.zrange(keys.expiring, 0, -1) if f" {expiring['id']} " in f"{m} "]
    deploy.redis.delete(keys.job(expiring["id"]))
    deploy.redis.zadd(keys.expiring, {member: 0})
    wait_until(lambda: not objects(s3, expiring["id"]), 60, "the reconciler to delete the expired job's objects")
    assert objects(s3, kept["id"]), "a live job's objects stay"
    status, _ = deploy.call("GET", f"/v1/jobs/{expiring['id']}/artifacts")
    assert status == 404
