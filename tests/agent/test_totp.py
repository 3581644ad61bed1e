"""Second factors: a secret of kind ``totp`` types the code of the moment, and neither the seed nor a
code ever reaches the model, the records or the logs.

The sign-in page below checks the code on the server with pyotp, as a real site does, and echoes
what it received (as careless sites do) so that the scrubbing of typed codes is tested on a page.
"""

from __future__ import annotations

import html
import logging
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pyotp
import pytest
from pydantic import ValidationError

from config import load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from workers.agent.errors import ActionError
from workers.agent.secrets import Secrets
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.secrets.sealing import open_totp, seal_spec

SEED = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
KEY = "x" * 43 + "="

FORM = """<!doctype html><html><head><title>Sign in: second step</title></head><body>
<h1>Two-step verification</h1><form method="post" action="/verify">
<label>Code from your authenticator app <input name="code" inputmode="numeric" autocomplete="one-time-code"></label>
<button type="submit">Verify</button></form></body></html>"""


class TotpHandler(BaseHTTPRequestHandler):
    """``GET`` asks for the code; ``POST /verify`` checks it with pyotp (one step of drift allowed)
    and keeps each code it received in its server's ``codes``."""

    server: TotpSite

    def log_message(self, *args: object) -> None:
        """Quiet: the test reads what the page says, not the server's log."""

    def _send(self, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._send(FORM)

    def do_POST(self) -> None:  # noqa: N802
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        code = form.get("code", [""])[0]
        self.server.codes.append(code)
        ok = pyotp.TOTP(SEED).verify(code, valid_window=1)
        said = f"Welcome back, Ada. Code {html.escape(code)} accepted." if ok else (
            f"Code {html.escape(code)} is wrong. Try again.")
        self._send(f"<!doctype html><html><head><title>Account</title></head><body><h1>{said}</h1>"
                   '<a href="/login">Sign out</a></body></html>')


class TotpSite(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), TotpHandler)
        self.codes: list[str] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{path.lstrip('/')}"


@pytest.fixture
def totp_site() -> Iterator[TotpSite]:
    site = TotpSite()
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield site
    site.shutdown()
    site.server_close()


def index_of(state: str, pattern: str) -> int:
    found = re.search(rf"\[(\d+)\]<{pattern}", state)
    if not found:
        open("/tmp/human_state.txt", "w").write(state)
    assert found
    return int(found.group(1))


async def test_a_totp_login_types_the_current_code_and_no_one_sees_it(pool, totp_site, llm, settings, caplog):
    def navigator(request):
        state = last_state(request)
        if "Welcome back" in state:
            return act({"done": {"text": "signed in", "evidence": ["Welcome back, Ada."]}})
        return act({"input_text": {"index": index_of(state, "input"), "text": "<secret>bank_otp</secret>"}},
                   {"click_element": {"index": index_of(state, "button")}})

    llm.add(PLANNER, plan(), plan(done=True, final_answer="signed in"))
    llm.responder = navigator
    with caplog.at_level(logging.DEBUG):
        result, page_text, _ = await run(pool, settings, task="Sign in with the second factor",
                                         start_url=totp_site.url("login"), totp={"bank_otp": SEED})
    assert result.status == JobStatus.succeeded, result.error
    assert "Welcome back, Ada." in page_text  # the server's pyotp accepted the code typed
    [typed] = totp_site.codes
    assert re.fullmatch(r"\d{6}", typed)
    prompts = repr(llm.requests)
    assert "<secret>bank_otp</secret>" in prompts  # the model knows the name...
    assert SEED not in prompts and typed not in prompts  # ...and never the seed or the code, though the page echoed it
    assert re.search(r"Code .secret.bank_otp./secret. accepted", prompts)  # the echo, scrubbed
    record = result.model_dump_json()
    assert SEED not in record and typed not in record
    assert result.steps[0].actions[0].params["text"] == "<secret>bank_otp</secret>"
    assert typed not in caplog.text and SEED not in caplog.text


async def test_an_unknown_second_factor_is_an_action_error_the_model_reads(pool, totp_site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="no", outcome="login_required"))
    llm.add(NAVIGATOR, act({"input_text": {"index": 1, "text": "<secret>other</secret>"}}),
            act({"done": {"text": "cannot sign in", "success": False, "reason": "login_required"}}))
    result, _, _ = await run(pool, settings, task="Sign in", start_url=totp_site.url("login"),
                             totp={"bank_otp": SEED})
    assert result.category == "login_required"
    assert "no secret named 'other' (this job's secrets: bank_otp)" in result.steps[0].error
    assert totp_site.codes == []


# --- no browser: the spec, the sealing and the scrubber ---------------------------------------

def test_a_code_typed_is_scrubbed_from_then_on_to_its_placeholder():
    secrets = Secrets({"pw": "hunter22"}, {"otp": SEED})
    code = secrets.fill("<secret>otp</secret>", "input_text")
    assert pyotp.TOTP(SEED).verify(code)
    assert secrets.scrub(f"code {code}, seed {SEED.lower()}, pw hunter22") == (
        "code <secret>otp</secret>, seed <secret>otp</secret>, pw <secret>pw</secret>")
    assert "<secret>otp</secret>" in secrets.task_note() and SEED not in secrets.task_note()
    with pytest.raises(ActionError, match="this job's secrets: otp, pw"):
        secrets.fill("<secret>nope</secret>", "input_text")


def test_totp_seeds_are_checked_sealed_and_shown_masked():
    settings = load_settings(secrets_key=KEY)
    spec = seal_spec(JobSpec(task="x", totp={"otp": "jbsw y3dp ehpk 3pxp"}), settings)
    assert spec.sealed_totp and "JBSW" not in spec.model_dump_json()
    assert open_totp(JobSpec.model_validate_json(spec.model_dump_json()), settings) == {"otp": "JBSWY3DPEHPK3PXP"}
    with pytest.raises(ValidationError, match="not a base32 seed"):
        JobSpec(task="x", totp={"otp": "not-base32-at-all!"})
    with pytest.raises(ValidationError, match="a base32 seed of 16 to 128"):
        JobSpec(task="x", totp={"otp": "JBSWY3DP"})
    with pytest.raises(ValidationError, match="one name, one value"):
        JobSpec(task="x", totp={"otp": SEED}, secrets={"otp": "hunter22"})
    with pytest.raises(SpecError, match="BROWSERD_SECRETS_KEY"):
        seal_spec(JobSpec(task="x", totp={"otp": SEED}), load_settings())
    with pytest.raises(SpecError, match="set by browserd"):
        seal_spec(JobSpec(task="x", sealed_totp="gAAAA-forged"), settings)
    with pytest.raises(SpecError, match="the seed itself"):
        seal_spec(JobSpec(task="x", totp={"otp": "**********"}), settings)
