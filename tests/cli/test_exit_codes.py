"""The exit code table (``daemon.cli.output.EXIT_CODES``), command by command, in the fast tier: a
usage or configuration mistake is 2 before anything is sent, an API that cannot be reached is 3.
(0 and 1, which need an API, are in tests/cli/test_cli.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config import get_settings
from daemon.cli import main
from daemon.cli.output import EXIT_UNREACHABLE, EXIT_USAGE

JOB = "0" * 32
NOWHERE = "http://127.0.0.1:9"  # nothing listens on the discard port


@pytest.fixture(autouse=True)
def unreachable_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every command here talks to an API that is not there (main() may set the variable: restored after)."""
    monkeypatch.setenv("BROWSERD_API_URL", NOWHERE)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize("argv", [
    ["submit", "read it"], ["status", JOB], ["watch", JOB], ["cancel", JOB], ["pause", JOB], ["resume", JOB],
    ["follow-up", JOB, "next", "--no-wait"], ["artifacts", JOB], ["jobs"], ["batch", "--attach", JOB],
    ["batch", "--cancel", JOB], ["batches"], ["results", JOB], ["schedule", "list"], ["schedule", "runs", JOB],
    ["recipe", "list"], ["recipe", "show", "prices"], ["profile", "list"],
], ids=lambda argv: " ".join(argv[:2]))
def test_an_api_that_cannot_be_reached_is_3(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_UNREACHABLE
    assert "cannot reach the API at http://127.0.0.1:9" in capsys.readouterr().err


def usage_cases(tmp: Path) -> list[tuple[list[str], str]]:
    jobs = tmp / "jobs.jsonl"
    jobs.write_text('{"task": "a"}\n')
    return [
        (["--api-url", "localhost:8000", "jobs"], "'localhost:8000' is not an http:// or https:// URL"),
        (["submit"], "give a TASK, --script FILE or --recipe NAME"),
        (["submit", "x", "--label", "nokv"], "--label 'nokv' is not K=V"),
        (["submit", "x", "--output-schema", str(tmp / "missing.json")], "--output-schema: "),
        (["submit", "x", "--output-schema", "{not json"], "--output-schema: not valid JSON"),
        (["submit", "--recipe", "r", "--param", "novalue"], "--param 'novalue' is not NAME=VALUE"),
        (["jobs", "--label", "nokv"], "--label 'nokv' is not K=V"),
        (["jobs", "--schedule", "nope"], "is not a schedule id"),
        (["batch"], "give a FILE to submit"),
        (["batch", str(tmp / "missing.jsonl")], "cannot read"),
        (["batch", str(jobs), "--defaults", "{timeout: 60}"], "--defaults is not JSON"),
        (["batch", str(jobs), "--defaults", "[1]"], "--defaults must be a JSON object"),
        (["follow-up", JOB, "  "], "TASK must not be empty"),
        (["schedule", "create", "--every", "60", "--job", str(tmp / "missing.json")], "--job: "),
        (["profile", "import", "acme", str(tmp / "missing.json")], "cannot read a storage state"),
        (["run", "x", "--max-steps", "0"], "max_steps"),
        (["run", "--script", str(tmp / "missing.json")], "cannot read the script"),
        (["inspect", "http://127.0.0.1:9/", "--timeout", "0"], "--timeout must be more than 0"),
        (["inspect", "http://127.0.0.1:9/", "--allow-network", "localhost"], "'localhost' is not an IP network"),
    ]


def test_a_usage_or_configuration_mistake_is_2_and_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for argv, message in usage_cases(tmp_path):
        monkeypatch.setenv("BROWSERD_API_URL", NOWHERE)  # --api-url sets it for the command and what it starts
        get_settings.cache_clear()
        code = main(argv)
        err = capsys.readouterr().err
        assert (code, message in err) == (EXIT_USAGE, True), (argv, code, err)
        assert "cannot reach the API" not in err and "Traceback" not in err


def test_argparse_mistakes_are_2_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["submit", "x", "--max-steps", "many"])
    assert exited.value.code == EXIT_USAGE


def test_a_worker_whose_artifact_store_cannot_be_written_does_not_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``browserd worker`` with a store it cannot write stops at once (exit 2) naming the setting; it
    started and lost every job's screenshots, pages and downloads."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("BROWSERD_ARTIFACTS_URL", f"file://{blocked}/artifacts")
    monkeypatch.setenv("BROWSERD_REDIS_URL", "redis://127.0.0.1:9/0")
    get_settings.cache_clear()
    assert main(["worker", "--side-concurrency", "0"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"BROWSERD_ARTIFACTS_URL='file://{blocked}/artifacts' cannot be written" in err
    assert "Traceback" not in err
