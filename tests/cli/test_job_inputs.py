"""``--secret``, ``--input-file`` and ``--proxy-pool`` read into job specs (the fast tier), the
Python client's ``input_file`` and its JobSpec body (secrets in clear, not asterisks), MCP's
arguments, and the console form's secrets lines; and their bad input, refused before anything is
sent."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from daemon.cli import build_parser
from daemon.cli.commands import run, submit
from daemon.cli.output import UsageError
from daemon.client import _spec, input_file
from daemon.console.forms import SubmitForm, spec_body
from daemon.mcp.server import SubmitJobArgs, job_spec
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, JobSpec

SEED = "JBSWY3DPEHPK3PXP"


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_secrets_totp_files_and_a_pool_become_the_spec_fields(tmp_path: Path):
    cv = tmp_path / "cv.pdf"
    cv.write_bytes(b"%PDF-1.4 cv")
    hidden = tmp_path / "pw.txt"
    hidden.write_text("s3cret-from-file\n")
    args = parse("submit", "apply", "--secret", "user=ada@example.org", "--secret", f"otp=totp:{SEED}",
                 "--secret", f"password=@{hidden}", "--input-file", str(cv), "--input-file", f"resume.pdf={cv}",
                 "--proxy-pool", "res")
    spec = submit.build_spec(args)
    assert spec["secrets"] == {"user": "ada@example.org", "password": "s3cret-from-file"}
    assert spec["totp"] == {"otp": SEED} and spec["proxy_pool"] == "res"
    assert [(f["name"], base64.b64decode(f["content_base64"])) for f in spec["input_files"]] == [
        ("cv.pdf", b"%PDF-1.4 cv"), ("resume.pdf", b"%PDF-1.4 cv")]
    JobSpec.model_validate(spec)  # what the API will check
    local = run._spec_fields(parse("run", "apply", "--secret", f"otp=totp:{SEED}", "--input-file", str(cv)))
    assert local["totp"] == {"otp": SEED} and local["input_files"][0]["name"] == "cv.pdf"
    assert not {"secrets", "totp", "input_files", "proxy_pool"} & set(submit.build_spec(parse("submit", "x")))


@pytest.mark.parametrize("flag, value, message", [
    ("--input-file", "/no/such/file.pdf", "no such file"),
    ("--input-file", "/etc", "no such file"),  # a folder is not a file
    ("--secret", "hunter2-typed-without-a-name", "give NAME=VALUE"),
    ("--secret", "name=", "give NAME=VALUE"),
    ("--secret", "pw=@/no/such/secret", "cannot read"),
])
def test_bad_flags_are_refused_naming_the_flag(flag, value, message):
    with pytest.raises(UsageError) as caught:
        submit.build_spec(parse("submit", "x", flag, value))
    assert flag in str(caught.value) and message in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_file_too_large_is_refused_before_it_is_read_or_sent(tmp_path: Path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (MAX_INPUT_FILE_BYTES + 1))
    with pytest.raises(UsageError, match="at most 2 MiB"):
        submit.build_spec(parse("submit", "x", "--input-file", str(big)))
    with pytest.raises(ValueError, match="at most 2 MiB"):
        input_file(big)
    bad = tmp_path / "ok.txt"
    bad.write_text("x")
    with pytest.raises(ValueError, match="should match pattern"):
        input_file(bad, name="../etc/passwd")


def test_the_client_sends_a_specs_secrets_in_clear_for_the_api_to_seal(tmp_path: Path):
    (tmp_path / "a.txt").write_text("hello")
    spec = JobSpec(task="x", secrets={"password": "hunter2-long"}, totp={"otp": SEED},
                   proxy={"server": "http://p:1", "username": "u", "password": "proxy-pw"},
                   input_files=[input_file(tmp_path / "a.txt")])
    body = _spec(spec)
    assert body["secrets"] == {"password": "hunter2-long"} and body["totp"] == {"otp": SEED}
    assert body["proxy"]["password"] == "proxy-pw" and body["input_files"][0]["name"] == "a.txt"
    assert JobSpec.model_validate(body).secrets["password"].get_secret_value() == "hunter2-long"


def test_mcp_takes_secrets_totp_files_and_a_pool():
    args = SubmitJobArgs(task="x", secrets={"pw": "hunter2-long"}, totp={"otp": SEED}, proxy_pool="res",
                         input_files=[{"name": "a.txt", "content_base64": base64.b64encode(b"hi").decode()}])
    spec = job_spec(args)
    assert spec["secrets"] == {"pw": "hunter2-long"} and spec["totp"] == {"otp": SEED} and spec["proxy_pool"] == "res"
    assert JobSpec.model_validate(spec).input_files[0].content() == b"hi"
    with pytest.raises(ValueError, match="should match pattern"):
        SubmitJobArgs(task="x", input_files=[{"name": "/etc/passwd", "content_base64": "aGk="}])


def test_the_console_form_reads_secret_lines_and_never_echoes_a_value():
    form = SubmitForm.from_fields({"kind": ["task"], "task": ["sign in"],
                                   "secrets": [f"user=ada@example.org\notp=totp:{SEED}\nbroken-line-value"],
                                   "proxy_pool": ["res"]})
    body = spec_body(form)
    assert body["secrets"] == {"user": "ada@example.org"} and body["totp"] == {"otp": SEED}
    assert body["proxy_pool"] == "res"
    assert form.errors["secrets"] == "line 3 is not NAME=VALUE"  # never its text: it may be the value
