"""The artifact store (fsspec, a real local folder), large data offloading, and retention: a job's
folder is deleted by the reconciler pass that trims its expired record (real redis-server)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from config import ConfigError, load_settings
from tests.jobs.test_finishing import run_to_end
from tests.support.redis_server import RedisServer
from workers.jobs.artifacts.names import (
    NoSuchArtifact,
    UnsafeName,
    by_run,
    name_from,
    run_name,
    safe_name,
    serving_headers,
)
from workers.jobs.artifacts.offload import inline, offload
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.ids import new_id
from workers.jobs.model.result import JobResult, JobTotals, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.reconcile import Reconciler
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys


@pytest.fixture
def artifacts(tmp_path) -> ArtifactStore:
    return ArtifactStore.open(f"file://{tmp_path}/store")


@pytest.mark.parametrize("name", ["..", "../x", "..%2Fx", "a/b", "/etc/passwd", ".env", "a..b", "", "x" * 201,
                                  "a\\b", "a b", "step-1.jpg\n"])
def test_names_that_could_leave_the_folder_are_refused(artifacts: ArtifactStore, name: str) -> None:
    with pytest.raises(UnsafeName):
        safe_name(name)
    with pytest.raises(UnsafeName):
        artifacts.job(new_id()).read(name)


# gs:// is fsspec's, its package (gcsfs) is not installed: the filesystem browserd has no package for
@pytest.mark.parametrize("url", ["nosuchfs://bucket/prefix", "gs://bucket/prefix"])
def test_a_store_that_cannot_be_opened_names_the_setting(url: str) -> None:
    if url.startswith("gs") and importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed here")
    with pytest.raises(ConfigError, match="BROWSERD_ARTIFACTS_URL"):
        ArtifactStore.open(url)


def test_job_ids_are_checked_too(artifacts: ArtifactStore) -> None:
    with pytest.raises(UnsafeName):
        artifacts.job("../../etc")


def test_page_chosen_file_names_are_made_safe() -> None:
    assert name_from("../../etc/passwd", "download-") == "download-etc_passwd"
    assert name_from("report (2).csv", "download-") == "download-report_2_.csv"
    assert name_from("..", "download-") == "download-file"


def test_put_list_read_and_delete(artifacts: ArtifactStore, tmp_path) -> None:
    folder = artifacts.job(new_id())
    assert folder.list() == []
    link = folder.put("page.html", b"<p>hi</p>")
    assert (link.name, link.size, link.content_type) == ("page.html", 9, "text/html; charset=utf-8")
    assert link.url == f"/v1/jobs/{folder.job_id}/artifacts/page.html"
    local = tmp_path / "report.csv"
    local.write_bytes(b"a,b\n" * 100_000)
    folder.put_file("download-report.csv", str(local))
    assert [(a.name, a.size) for a in folder.list()] == [("download-report.csv", 400_000), ("page.html", 9)]
    assert b"".join(folder.chunks("download-report.csv")) == local.read_bytes()
    with pytest.raises(NoSuchArtifact):
        folder.size("nothing.txt")
    assert folder.delete() and folder.list() == [] and not folder.delete()


def test_a_large_result_is_offloaded_and_read_back(artifacts: ArtifactStore) -> None:
    folder = artifacts.job(new_id())
    small = JobResult(status=JobStatus.succeeded, final_answer="ok", data={"n": 1}, steps=[StepRecord(step=1)])
    assert offload(small, folder, 1024) is small and folder.list() == []
    rows = [{"name": f"item {n}", "price": n} for n in range(500)]
    steps = [StepRecord(step=1, plan={"final_answer": "many"}), StepRecord(step=2, url="http://127.0.0.1/")]
    full = JobResult(status=JobStatus.succeeded, final_answer="many", data=rows, steps=steps,
                     totals=JobTotals(steps=2))
    big = offload(full, folder, 1024)
    assert big.data is None and big.final_answer is None and big.steps == [] and big.totals.steps == 2
    assert big.result_artifact == f"/v1/jobs/{folder.job_id}/artifacts/result.json"
    assert [a.name for a in big.artifacts] == ["result.json"] and len(big.model_dump_json()) < 1024
    back = inline(big, folder)
    assert back.data == rows and back.final_answer == "many" and back.steps == steps
    assert back.model_copy(update={"artifacts": [], "result_artifact": None}) == full


def test_a_result_whose_json_is_known_is_offloaded_exactly_as_one_whose_is_not(artifacts: ArtifactStore) -> None:
    """The result limits hand ``offload`` the JSON they measured; a result under half the limit is then
    not serialized again, and every result is kept or moved just as without it (dense JSON: numbers,
    separators, non-ASCII text, escapes)."""
    limit = 1024
    for n in [*range(0, 40), *range(40, 400, 7)]:  # kept without a second dump, kept after one, moved
        rows = [[k, k / 3, "é\n\u2028"] for k in range(n)]
        result = JobResult(status=JobStatus.succeeded, final_answer="x" * (n % 50), data=rows)
        plain = offload(result, artifacts.job(new_id()), limit)
        known = offload(result, artifacts.job(new_id()), limit, encoded=result.model_dump_json())
        assert (plain is result) == (known is result), n


def test_a_follow_ups_files_have_names_of_their_own_that_say_its_run(artifacts: ArtifactStore) -> None:
    folder = artifacts.job(new_id())
    assert [run_name(run, "step-001.jpg") for run in (1, 2, 12)] == ["step-001.jpg", "run-2-step-001.jpg",
                                                                     "run-12-step-001.jpg"]
    for name in ("step-001.jpg", "page.md", "download-run-3-x.pdf", "run-2-step-001.jpg", "run-2-page.md",
                 "run-2-download-report.csv", "run-12-console.jsonl"):
        folder.put(safe_name(name), b"x")
    runs = [(group.run, [a.name for a in group.links]) for group in by_run(folder.list())]
    assert runs == [(1, ["download-run-3-x.pdf", "page.md", "step-001.jpg"]),
                    (2, ["run-2-download-report.csv", "run-2-page.md", "run-2-step-001.jpg"]),
                    (12, ["run-12-console.jsonl"])], "a page's file name never passes for a run's"
    links = {a.name: a for a in folder.list()}
    assert links["run-2-step-001.jpg"].url == f"/v1/jobs/{folder.job_id}/artifacts/run-2-step-001.jpg"
    assert links["run-2-page.md"].content_type == links["page.md"].content_type == "text/markdown"
    inline_ok = {n: serving_headers(n, 1)["Content-Disposition"].startswith("inline")
                 for n in ("step-001.jpg", "run-2-step-001.jpg", "run-2-page.html", "run-x-step-001.jpg",
                           "download-step-1.jpg")}
    assert inline_ok == {"step-001.jpg": True, "run-2-step-001.jpg": True, "run-2-page.html": False,
                         "run-x-step-001.jpg": False, "download-step-1.jpg": False}


def test_a_follow_ups_large_result_does_not_overwrite_the_first_runs(artifacts: ArtifactStore) -> None:
    folder = artifacts.job(new_id())
    first = offload(JobResult(status=JobStatus.succeeded, final_answer="a" * 2000), folder, 1024)
    second = offload(JobResult(status=JobStatus.succeeded, final_answer="b" * 2000), folder, 1024, run=2)
    assert second.result_artifact == f"/v1/jobs/{folder.job_id}/artifacts/run-2-result.json"
    assert [a.name for a in second.artifacts] == ["run-2-result.json"] and second.artifacts[0].run == 2
    assert inline(first, folder).final_answer == "a" * 2000 and inline(second, folder).final_answer == "b" * 2000


async def test_the_reconciler_deletes_the_folders_of_expired_jobs_only(redis: RedisServer, tmp_path) -> None:
    url = f"file://{tmp_path}/store"
    settings = load_settings(redis_url=redis.url, result_ttl=1, artifacts_url=url)
    artifacts = ArtifactStore.open(url)
    client = connect(redis.url)
    keys = Keys(prefix=f"t{new_id()[:8]}:")
    short, long = JobStore(client, result_ttl=1, keys=keys), JobStore(client, result_ttl=3600, keys=keys)
    try:
        expiring = (await short.create(JobSpec(task="old"), max_steps=3)).job_id
        await run_to_end(short, expiring, JobStatus.failed)
        kept = (await long.create(JobSpec(task="new"), max_steps=3)).job_id
        await run_to_end(long, kept, JobStatus.failed)
        running = (await long.create(JobSpec(task="running"), max_steps=3)).job_id
        for job_id in (expiring, kept, running):
            artifacts.job(job_id).put("step-001.jpg", b"\xff\xd8\xff jpeg")
        await asyncio.sleep(1.5)  # past the first job's TTL: its record is gone, its folder not yet
        assert not await client.exists(keys.job(expiring)) and artifacts.job(expiring).list()

        report = await Reconciler(short, settings).run_once()
        assert report is not None and report.artifact_folders_deleted == 1
        assert artifacts.job(expiring).list() == []
        assert artifacts.job(kept).list() and artifacts.job(running).list()
        again = await Reconciler(short, settings).run_once()
        assert again is not None and again.artifact_folders_deleted == 0
    finally:
        await client.aclose()


def test_a_store_that_cannot_be_written_names_the_setting(tmp_path: Path) -> None:
    """A worker writes a file before its first job; one it cannot write is a configuration error
    naming BROWSERD_ARTIFACTS_URL (it went on, and every job's artifacts went missing quietly)."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    url = f"file://{blocked}/artifacts"
    with pytest.raises(ConfigError, match="BROWSERD_ARTIFACTS_URL=.*cannot be written by this process") as refused:
        ArtifactStore.open(url).check_writable(url)
    assert "Set BROWSERD_ARTIFACTS_URL to a store it can write" in str(refused.value)
    fine = f"file://{tmp_path}/store"
    ArtifactStore.open(fine).check_writable(fine)
    assert list((tmp_path / "store").iterdir()) == []  # the probe is gone
