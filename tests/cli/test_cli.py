"""The ``browserd`` command as a user types it: flags, exit codes, listings, batches, completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.client import Client
from tests.queue.stack import ROOT, TOKEN, Stack, script, wait_until
from tests.support.schemas import anyof_bomb
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e  # every test runs the real command, python -m daemon


def browserd(s: Stack | None, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = s.env if s is not None else {**os.environ, "BROWSERD_API_URL": "http://127.0.0.1:9"}
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_version_flags_and_exit_codes(deploy: Stack) -> None:
    assert browserd(deploy, "--version").stdout.startswith("browserd ")
    unreachable = browserd(None, "status", "0" * 32)
    assert unreachable.returncode == 3 and "cannot reach the API" in unreachable.stderr
    flags = browserd(None, "--api-url", deploy.url, "--token", TOKEN, "jobs", "--state", "retrying")
    assert flags.returncode == 0, flags.stderr
    missing = browserd(deploy, "status", "0" * 32)
    assert missing.returncode == 1 and "no job with id" in missing.stderr


def test_a_refused_spec_names_its_reason_once(deploy: Stack, tmp_path: Path) -> None:
    bad = browserd(deploy, "submit", "do it", "--timeout", "-1")
    assert bad.returncode == 1
    assert bad.stderr.count("greater than 0") == 1 and "timeout" in bad.stderr, bad.stderr


def test_refusals_read_in_a_users_words(deploy: Stack) -> None:
    """No internals in what the command prints: a wrong token names the variable and flag (not the
    API's 'bearer token' header), a URL without its scheme says what to type (not the URL parser's
    'relative URL without a base'), a pattern RE2 refuses is text (not a bytes repr)."""
    wrong = browserd(deploy, "--token", "not-the-token", "jobs")
    assert wrong.returncode == 1 and "set BROWSERD_API_TOKEN (or pass --token)" in wrong.stderr, wrong.stderr
    assert "bearer" not in wrong.stderr.lower()
    bare = browserd(deploy, "submit", "read it", "--start-url", "example.com/shop")
    assert bare.returncode == 1
    assert "start_url: 'example.com/shop' is not a valid URL: give it in full, with its scheme" in bare.stderr
    assert "relative URL" not in bare.stderr
    schema = json.dumps({"type": "string", "pattern": "x(?<=a)y"})
    regex = browserd(deploy, "submit", "read it", "--output-schema", schema)
    assert regex.returncode == 1 and "(RE2): invalid perl operator: (?<=" in regex.stderr and "b'" not in regex.stderr


def test_a_local_run_refuses_an_output_schema_past_a_limit_naming_it(tmp_path: Path) -> None:
    """``browserd run`` builds its job here, not through the API: the same bounds apply."""
    bomb = tmp_path / "bomb.json"
    bomb.write_text(json.dumps(anyof_bomb()))
    refused = browserd(None, "run", "do it", "--output-schema", str(bomb))
    assert refused.returncode == 2 and refused.stderr.count("schema limit 'branches'") == 1, refused.stderr
    assert "invalid job: output_schema: " in refused.stderr
def test_zero_steps_and_timeout_are_refused_by_the_api_not_dropped(deploy: Stack) -> None:
    """``--max-steps 0`` / ``--timeout 0`` were dropped and the job queued with the defaults."""
    steps = browserd(deploy, "submit", "do it", "--max-steps", "0")
    assert steps.returncode == 1 and "options.max_steps" in steps.stderr and "greater than or equal to 1" in steps.stderr
    timeout = browserd(deploy, "submit", "do it", "--timeout", "0")
    assert timeout.returncode == 1 and "timeout" in timeout.stderr and "greater than 0" in timeout.stderr


def test_exit_codes_0_and_1_per_command(deploy: Stack, site: StaticServer, tmp_path: Path) -> None:
    """0 done, 1 a job failed or the API refused (what it names does not exist); 2 and 3 are in
    tests/cli/test_exit_codes.py."""
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(script(site.url("/cdp/basic.html"), waits=0, text="fine")))
    failing = tmp_path / "fail.json"
    failing.write_text(json.dumps([{"go_to_url": {"url": site.url("/cdp/basic.html")}},
                                   {"scroll_to_text": {"text": "no such text anywhere"}}]))
    done = browserd(deploy, "submit", "--script", str(ok), "--wait", "--output-schema", '{"type": "object"}',
                    "--webhook", "https://hooks.example/job", "--keep-session", "0")
    assert done.returncode == 1 and "options.keep_session" in done.stderr  # a script keeps no session
    done = browserd(deploy, "submit", "--script", str(ok), "--wait", "--webhook", "https://hooks.example/job")
    assert done.returncode == 0 and "answer: fine" in done.stdout, done.stderr
    job_id = done.stdout.split()[0]
    failed = browserd(deploy, "submit", "--script", str(failing), "--wait")
    assert failed.returncode == 1 and "failed" in failed.stdout
    for argv, code in ([("status", job_id), 0], [("watch", job_id), 0], [("artifacts", job_id), 0],
                       [("jobs", "--limit", "1"), 0], [("batches",), 0], [("schedule", "list"), 0],
                       [("recipe", "list"), 0], [("profile", "list"), 1],  # no secrets key here: refused
                       [("status", "0" * 32), 1],
                       [("watch", "0" * 32), 1], [("cancel", "0" * 32), 1], [("results", "0" * 32), 1],
                       [("recipe", "show", "nothing-here"), 1], [("schedule", "runs", "0" * 32), 1]):
        got = browserd(deploy, *argv)
        assert got.returncode == code, (argv, got.stdout, got.stderr)
    with Client(deploy.url, TOKEN) as api:
        assert str(api.get(job_id).spec.webhook_url) == "https://hooks.example/job"


def test_politeness_flags_reach_the_spec_and_bad_ones_are_named(deploy: Stack, tmp_path: Path) -> None:
    bad = browserd(deploy, "submit", "do it", "--max-concurrent", "0")
    assert bad.returncode == 1 and "politeness.max_concurrent" in bad.stderr, bad.stderr
    steps = tmp_path / "script.json"
    steps.write_text(json.dumps([{"done": {"text": "polite"}}]))
    ok = browserd(deploy, "submit", "--script", str(steps), "--max-concurrent", "1", "--min-delay", "0.5",
                  "--respect-robots-txt", "--json")
    assert ok.returncode == 0, ok.stderr
    job_id = json.loads(ok.stdout)["id"]
    with Client(deploy.url, TOKEN) as api:
        spec = api.get(job_id).spec
    assert spec is not None and spec.politeness.model_dump() == {
        "max_concurrent": 1, "min_delay": 0.5, "respect_robots_txt": True}


def test_paging_keeps_every_filter(deploy: Stack, site: StaticServer) -> None:
    with Client(deploy.url, TOKEN) as api:
        for _ in range(3):
            api.submit({"script": script(site.url("/cdp/basic.html"), waits=0), "labels": {"page": "me"}})
    first = browserd(deploy, "jobs", "--label", "page=me", "--limit", "2")
    hint = next(line for line in first.stdout.splitlines() if line.startswith("more: "))
    assert "--label page=me" in hint and "--limit 2" in hint
    rest = browserd(deploy, *hint.removeprefix("more: browserd ").split())
    assert rest.returncode == 0 and len([line for line in rest.stdout.splitlines() if "  " in line]) == 1


def test_watch_json_batch_cancel_attach_batches_and_schedule_json(deploy: Stack, site: StaticServer,
                                                                 tmp_path: Path) -> None:
    with Client(deploy.url, TOKEN) as api:
        job = api.submit({"script": script(site.url("/cdp/basic.html"), waits=0, text="watched")})
        watched = browserd(deploy, "watch", job.id, "--json")
        lines = [json.loads(line) for line in watched.stdout.splitlines() if line.startswith('{"id"')]
        assert watched.returncode == 0 and {"state", "step"} <= {line["event"] for line in lines}

        slow = api.submit_batch([{"script": script(site.url("/cdp/basic.html"), waits=20)}] * 4)
    cancelled = browserd(deploy, "batch", "--cancel", slow.id, "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["cancel_requested"] is True
    attached = browserd(deploy, "batch", "--attach", slow.id, timeout=120)
    assert attached.returncode == 1 and "progress: 4/4" in attached.stderr and "cancelled" in attached.stderr
    listed = browserd(deploy, "batches", "--limit", "5")
    assert slow.id in listed.stdout
    schedules = browserd(deploy, "schedule", "list", "--json")
    assert schedules.returncode == 0 and isinstance(json.loads(schedules.stdout), list)


def test_progress_says_when_no_worker_is_alive(tmp_path: Path, site: StaticServer) -> None:
    from tests.queue.stack import stack

    with stack() as idle:  # an API and Redis, and no worker
        with Client(idle.url, TOKEN) as api:
            batch = api.submit_batch([{"script": script(site.url("/cdp/basic.html"))}])
        log = tmp_path / "stderr.txt"
        with open(log, "w") as err_file:
            proc = subprocess.Popen([sys.executable, "-m", "daemon", "batch", "--attach", batch.id], env=idle.env,
                                    cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_file)
        try:
            wait_until(lambda: "no worker is alive" in log.read_text(), 60, "the progress line")
        finally:
            proc.terminate()
            proc.wait(20)
        # submit --wait sat at queued saying nothing; it says so as batch --wait does
        steps = tmp_path / "steps.json"
        steps.write_text(json.dumps(script(site.url("/cdp/basic.html"))))
        single = tmp_path / "submit.txt"
        with open(single, "w") as err_file:
            proc = subprocess.Popen([sys.executable, "-m", "daemon", "submit", "--script", str(steps), "--wait"],
                                    env=idle.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_file)
        try:
            wait_until(lambda: "no worker is alive: start one with 'browserd worker'" in single.read_text(), 60,
                       "the submit --wait line")
        finally:
            proc.terminate()
            proc.wait(20)
    assert "progress: 0/1" in log.read_text()
    assert "queued; following it (no worker is alive" in single.read_text()


def test_submit_wait_says_when_the_last_worker_goes_while_the_job_waits(tmp_path: Path, site: StaticServer) -> None:
    """``submit --wait`` looked for a worker once, at submission: a job left queued after the last
    worker died sat there silently. It looks again while the job waits."""
    from tests.queue.stack import stack

    with stack() as s:
        worker = s.start_worker(queues="high")  # alive, but not serving the job's queue
        steps = tmp_path / "steps.json"
        steps.write_text(json.dumps(script(site.url("/cdp/basic.html"))))
        said = tmp_path / "submit.txt"
        with open(said, "w") as err_file:
            proc = subprocess.Popen([sys.executable, "-m", "daemon", "submit", "--script", str(steps), "--priority",
                                     "low", "--wait"], env=s.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_file)
        try:
            wait_until(lambda: "queued; following it" in said.read_text(), 60, "the submit --wait line")
            assert "no worker is alive" not in said.read_text()
            worker.kill9()
            wait_until(lambda: "still queued: no worker is alive: start one with 'browserd worker'" in said.read_text(),
                       90, "the line saying the last worker went")
            s.start_worker()  # every queue: the job runs
            assert proc.wait(180) == 0, said.read_text()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(20)
    text = said.read_text()
    assert "state: succeeded" in text, text


def test_the_progress_bar_stays_on_one_line_in_a_narrow_terminal(deploy: Stack, site: StaticServer) -> None:
    import fcntl
    import pty
    import struct
    import termios

    with Client(deploy.url, TOKEN) as api:
        batch = api.submit_batch([{"script": script(site.url("/cdp/basic.html"), waits=1)}] * 4)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "daemon", "batch", "--attach", batch.id], env=deploy.env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(60)
    os.close(master)
    screen = out.decode(errors="replace")
    assert proc.returncode == 0, screen
    redraws = [part for line in screen.split("\n") for part in line.split("\r") if part.strip()]
    assert screen.count("\n") <= 3, screen  # the bar is redrawn in place, not printed again
    assert all(len(part.rstrip()) <= 60 for part in redraws if "%" in part), redraws


def test_shell_completion_for_bash(tmp_path: Path) -> None:
    text = browserd(None, "completion", "bash").stdout
    probe = (f"{text}\nCOMP_WORDS=(browserd sch); COMP_CWORD=1; _browserd; echo \"${{COMPREPLY[@]}}\";"
             "COMP_WORDS=(browserd schedule ''); COMP_CWORD=2; _browserd; echo \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "schedule"
    assert {"create", "list", "pause", "resume", "--json"} <= set(out[1].split())


def test_tenant_keys_from_the_command_line(deploy: Stack, site: StaticServer) -> None:
    made = browserd(deploy, "tenant", "create", "cli-acme", "--network", "127.0.0.1/32", "--max-steps", "5")
    assert made.returncode == 0, made.stderr
    line, key = made.stdout.splitlines()
    assert line.startswith("cli-acme  key ") and "networks 127.0.0.1/32" in line and key.startswith("bdk_")
    assert "shown only now" in made.stderr
    wide = browserd(deploy, "tenant", "create", "cli-wide", "--network", "10.0.0.0/8")
    assert wide.returncode == 1 and "BROWSERD_ALLOWED_NETWORKS" in wide.stderr
    assert browserd(deploy, "tenant", "create", "cli-bad", "--network", "nowhere").returncode == 2
    listed = browserd(deploy, "tenant", "list")
    assert "cli-acme  key " in listed.stdout and key not in listed.stdout
    operator = deploy.submit({"script": script(site.url("/cdp/basic.html"), waits=0)})
    as_tenant = ("--token", key)
    own = deploy.call("POST", "/v1/jobs", {"script": script(site.url("/cdp/basic.html"), waits=0)}, token=key)[1]
    mine = browserd(deploy, *as_tenant, "jobs", "--json")
    assert [j["id"] for j in json.loads(mine.stdout)["jobs"]] == [own["id"]]
    filtered = json.loads(browserd(deploy, "jobs", "--tenant", "cli-acme", "--json").stdout)["jobs"]
    assert [j["id"] for j in filtered] == [own["id"]]
    hidden = browserd(deploy, *as_tenant, "status", operator["id"])
    assert hidden.returncode == 1 and "no job with id" in hidden.stderr
    assert browserd(deploy, *as_tenant, "tenant", "list").returncode == 1  # the operator's command
    rotated = browserd(deploy, "tenant", "rotate", "cli-acme")
    new_key = rotated.stdout.splitlines()[1]
    old = browserd(deploy, *as_tenant, "jobs")
    assert old.returncode != 0 and "revoked" in old.stderr
    assert browserd(deploy, "--token", new_key, "jobs").returncode == 0
    assert "REVOKED" in browserd(deploy, "tenant", "revoke", "cli-acme").stdout
    assert browserd(deploy, "--token", new_key, "jobs").returncode != 0


def test_a_crawl_schedule_and_its_change_feed_from_the_command_line(deploy: Stack, tmp_path: Path) -> None:
    spec = tmp_path / "site.json"
    spec.write_text(json.dumps({"start_urls": ["https://shop.example/"], "max_pages": 5}))
    made = browserd(deploy, "schedule", "create", "--every", "3600", "--paused", "--crawl", str(spec), "--json")
    assert made.returncode == 0, made.stderr
    schedule = json.loads(made.stdout)
    assert schedule["crawl"] == {"start_urls": ["https://shop.example/"], "max_pages": 5} and schedule["job"] is None
    bad = browserd(deploy, "schedule", "create", "--every", "3600", "--crawl", '{"start_urls": ["https://a.example/"], '
                   '"max_depth": -1}')
    assert bad.returncode == 1 and "crawl.max_depth" in bad.stderr, bad.stderr
    assert browserd(deploy, "schedule", "create", "--every", "3600", "--crawl", "{nope").returncode == 2
    none = browserd(deploy, "changes", schedule["id"])
    assert none.returncode == 0 and f"no runs of {schedule['id']} compared yet" in none.stdout, none.stderr
    assert browserd(deploy, "changes", schedule["id"], "--json").stdout.strip() == "[]"
    missing = browserd(deploy, "changes", "0" * 32)
    assert missing.returncode == 1 and "no schedule" in missing.stderr
    for flags in (("--limit", "0"), ("--since", "yesterday")):
        refused = browserd(deploy, "changes", schedule["id"], *flags)
        assert refused.returncode == 2 and flags[0] in refused.stderr, refused.stderr
def test_tenant_quotas_from_the_command_line(deploy: Stack) -> None:
    made = browserd(deploy, "tenant", "create", "cli-quota", "--max-queued", "0", "--max-running", "2")
    assert made.returncode == 0, made.stderr
    assert "max_running 2" in made.stdout and "max_queued 0" in made.stdout
    key = made.stdout.splitlines()[1]
    over = browserd(deploy, "--token", key, "submit", "read the front page")
    assert over.returncode == 1 and "over its quota 'queued'" in over.stderr and "quota queued: retry after" in over.stderr
    bad = browserd(deploy, "tenant", "limits", "cli-quota", "--max-running", "0")
    assert bad.returncode == 2 and "max_running" in bad.stderr
    changed = browserd(deploy, "tenant", "limits", "cli-quota", "--max-queued", "5", "--max-jobs-per-day", "1")
    assert changed.returncode == 0 and "max_queued 5" in changed.stdout and "max_running" not in changed.stdout
    assert browserd(deploy, "--token", key, "submit", "read the front page").returncode == 0
    daily = browserd(deploy, "--token", key, "submit", "read it again")
    assert daily.returncode == 1 and "quota jobs_per_day: retry after" in daily.stderr
    used = json.loads(browserd(deploy, "tenant", "usage", "cli-quota", "--json").stdout)
    assert used["jobs_today"] == 1 and used["queued"] + used["running"] <= 1
    assert browserd(deploy, "--token", key, "tenant", "usage", "cli-quota").returncode == 1  # the operator's command


def test_input_files_secrets_and_a_pool_from_the_command_line(deploy: Stack, site: StaticServer,
                                                               tmp_path: Path) -> None:
    """``--input-file`` is sent with the job and uploaded by its script; a secret without the server's
    key, an unknown pool, a missing file and one too large are refused, each naming its flag or field."""
    cv = tmp_path / "cv.txt"
    cv.write_text("Ada Lovelace, analytical engines\n")
    upload = tmp_path / "upload.json"
    upload.write_text(json.dumps([{"go_to_url": {"url": site.url("/agent/uploads/plain.html")}},
                                  {"upload_file": {"text": "CV", "files": ["cv.txt"]}}, {"wait": {"seconds": 0.5}},
                                  {"extract_fields": {"fields": {"got": "#got"}}}]))
    done = browserd(deploy, "submit", "--script", str(upload), "--input-file", str(cv), "--wait", "--json",
                    "--allow-network", "127.0.0.1/32")
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job["result"]["data"] == {"got": "Received cv.txt (33 bytes): Ada Lovelace, analytical engines"}
    no_key = browserd(deploy, "submit", "x", "--secret", "otp=totp:JBSWY3DPEHPK3PXP")
    assert no_key.returncode == 1 and "BROWSERD_SECRETS_KEY" in no_key.stderr, no_key.stderr
    assert "JBSWY3DPEHPK3PXP" not in no_key.stderr + no_key.stdout
    pool = browserd(deploy, "submit", "x", "--proxy-pool", "nope")
    assert pool.returncode == 1 and "proxy_pool" in pool.stderr and "nope" in pool.stderr, pool.stderr
    missing = browserd(deploy, "submit", "x", "--input-file", str(tmp_path / "gone.pdf"))
    assert missing.returncode == 2 and "--input-file" in missing.stderr and "no such file" in missing.stderr
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (3 << 20))
    large = browserd(deploy, "submit", "x", "--input-file", str(big))
    assert large.returncode == 2 and "at most 2 MiB" in large.stderr, large.stderr
