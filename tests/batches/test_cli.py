"""``browserd batch --wait`` and ``browserd results`` as a user runs them (not a TTY: plain progress lines)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.batches.helpers import quick_script
from tests.queue.stack import ROOT, Stack
from tests.support.servers import StaticServer


def browserd(s: Stack, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, cwd=ROOT, input=stdin,
                          capture_output=True, timeout=300)


def test_batch_wait_then_results(ops: Stack, site: StaticServer, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"script": quick_script(site.url("/cdp/basic.html"), n)}) + "\n"
                            for n in range(6)))
    done = browserd(ops, "batch", str(jobs), "--wait", "--defaults", '{"labels": {"from": "cli"}}')
    err = done.stderr.decode()
    assert done.returncode == 0, err
    batch_id = done.stdout.decode().strip()
    assert "6 jobs queued" in err and "progress: 6/6" in err and "fails 0" in err and "6 succeeded" in err

    out = browserd(ops, "results", batch_id)
    assert out.returncode == 0, out.stderr.decode()
    lines = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert [line["final_answer"] for line in lines] == [f"item {n}" for n in range(6)]
    assert set(lines[0]) >= {"id", "status", "final_answer", "data", "error"}
    assert ops.job(lines[0]["id"])["labels"] == {"from": "cli"}


def test_batch_refused_prints_the_field(ops: Stack, tmp_path: Path) -> None:
    jobs = tmp_path / "bad.jsonl"
    jobs.write_text('{"task": "ok"}\n{"task": "bad", "timeout": -1}\n')
    done = browserd(ops, "batch", str(jobs))
    assert done.returncode == 1
    assert "jobs[1].timeout" in done.stderr.decode()


def test_schedule_commands(ops: Stack, tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"script": [{"done": {"text": "x"}}]}))
    made = browserd(ops, "schedule", "--json", "create", "--every", "3600", "--job", str(job), "--name", "hourly",
                    "--paused")
    assert made.returncode == 0, made.stderr.decode()
    sid = json.loads(made.stdout)["id"]
    listed = browserd(ops, "schedule", "list").stdout.decode()
    assert sid in listed and "hourly" in listed and "paused" in listed
    assert "enabled" in browserd(ops, "schedule", "resume", sid).stdout.decode()
    assert browserd(ops, "schedule", "runs", sid).stdout.decode() == f"no runs of {sid} yet\n"
    ran = browserd(ops, "schedule", "run", sid).stdout.decode()  # a table line, as `batches` prints, not JSON
    batch_id = ran.split()[0]
    assert not ran.startswith("{") and f"schedule={sid}" in ran and "/1  failed=" in ran, ran
    runs = browserd(ops, "schedule", "runs", sid).stdout.decode().splitlines()
    assert len(runs) == 1 and runs[0].startswith(f"{batch_id}  ") and "failed=" in runs[0]
    assert json.loads(browserd(ops, "schedule", "runs", sid, "--json").stdout)[0]["id"] == batch_id
    none = browserd(ops, "jobs", "--label", "nobody=here")
    assert none.returncode == 0 and none.stdout.decode() == "no jobs match these filters\n"
    assert browserd(ops, "schedule", "delete", sid).returncode == 0
    assert sid not in browserd(ops, "schedule", "list").stdout.decode()


def test_a_header_line_with_defaults_and_webhook_flags(ops: Stack, site: StaticServer, tmp_path: Path) -> None:
    """The documented header line and --defaults/--webhook together: one batch, not 422 jobs[0].defaults."""
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"defaults": {"labels": {"from": "header"}}}) + "\n"
                    + json.dumps({"script": quick_script(site.url("/cdp/basic.html"), 0)}) + "\n")
    done = browserd(ops, "batch", str(jobs), "--wait", "--defaults", '{"labels": {"run": "flag"}}',
                    "--webhook", "https://hooks.example/batch", "--json")
    assert done.returncode == 0, done.stderr.decode()
    record = json.loads(done.stdout)
    assert record["total"] == 1
    out = browserd(ops, "results", record["id"])
    job = ops.job(json.loads(out.stdout.decode().splitlines()[0])["id"])
    assert job["labels"] == {"from": "header", "run": "flag"}
    bad = browserd(ops, "batch", str(jobs), "--defaults", "{labels: 1}")
    assert bad.returncode == 2 and "--defaults is not JSON" in bad.stderr.decode() and str(jobs) not in bad.stderr.decode()
