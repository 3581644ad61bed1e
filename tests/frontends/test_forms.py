"""The console's pure parts: the submit form, the session and CSRF tokens, masking, the outcome chart."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import SecretStr

from config import load_settings
from daemon.console.auth import Gate, safe_next
from daemon.console.charts import outcomes
from daemon.console.forms import SubmitForm, input_for, to_spec
from daemon.console.secrets import mask_url, masked_settings
from workers.jobs.model.record import JobRecord

SETTINGS = load_settings(redis_url="redis://127.0.0.1:1/0")


def form(**values: str) -> SubmitForm:
    return SubmitForm.from_fields({k.replace("__", "."): [v] for k, v in values.items()})


def test_a_task_form_becomes_a_spec() -> None:
    f = form(kind="task", task="Find the mug", start_url="http://127.0.0.1:9/", options__max_steps="7",
             labels="team=shop\nrun = may", allowed_domains="a.example, b.example", timeout="30",
             output_schema='{"type": "object"}')
    spec = to_spec(f, SETTINGS)
    assert spec is not None, f.errors
    assert spec.task == "Find the mug" and spec.options.max_steps == 7 and spec.timeout == 30
    assert spec.labels == {"team": "shop", "run": "may"} and spec.allowed_domains == ["a.example", "b.example"]
    assert spec.output_schema == {"type": "object"}


def test_every_bad_field_is_named_next_to_its_input() -> None:
    f = form(kind="task", task="", options__max_steps="0", output_schema="{bad", labels="nokey", timeout="soon")
    assert to_spec(f, SETTINGS) is None
    assert set(f.errors) == {"task", "options.max_steps", "output_schema", "labels", "timeout"}, f.errors
    assert "not valid JSON" in f.errors["output_schema"]
    assert "greater than or equal to 1" in f.errors["options.max_steps"]
    assert f.general_errors == {}


def test_a_script_problem_points_at_the_script_input() -> None:
    f = form(kind="script", script='[{"go_to_url": {"nope": 1}}]')
    assert to_spec(f, SETTINGS) is None
    assert list(f.errors) == ["script"] and "script" in f.errors["script"], f.errors
    assert input_for("script[0].go_to_url.url") == "script" and input_for("body") is None


def test_a_schema_re2_cannot_run_is_refused_at_its_field() -> None:
    f = form(kind="task", task="t", output_schema='{"type": "string", "pattern": "(a)\\\\1"}')
    assert to_spec(f, SETTINGS) is None and "output_schema" in f.errors, f.errors


def test_a_schema_past_a_limit_is_refused_at_its_field_naming_the_limit() -> None:
    f = form(kind="task", task="t", output_schema='{"$ref": "#"}')
    assert to_spec(f, SETTINGS) is None and "schema limit 'recursion'" in f.errors["output_schema"], f.errors


def test_sessions_expire_and_die_with_the_token() -> None:
    gate = Gate.for_token(SecretStr("one"))
    cookie = gate.new_session(now=1000.0)
    assert gate.session_ok(cookie, now=1001.0)
    assert not gate.session_ok(cookie, now=1000.0 + 13 * 3600)
    assert "one" not in cookie
    assert not Gate.for_token(SecretStr("two")).session_ok(cookie, now=1001.0)
    assert not gate.session_ok(cookie[:-1] + ("0" if cookie[-1] != "0" else "1"), now=1001.0)
    assert not gate.session_ok(None) and not gate.session_ok("garbage")
    assert gate.csrf_ok(cookie, gate.csrf_for(cookie)) and not gate.csrf_ok(cookie, gate.csrf_for("other"))
    assert not gate.csrf_ok(cookie, "") and not gate.csrf_ok(cookie, None)


def test_login_goes_back_only_to_the_console() -> None:
    assert safe_next("/ui/jobs/abc") == "/ui/jobs/abc"
    for hostile in ("https://evil.example/", "//evil.example/ui/", "/ui\\@evil", "/other", None):
        assert safe_next(hostile) == "/ui/"


def test_secrets_and_passwords_in_urls_are_masked() -> None:
    assert mask_url("redis://:pw@127.0.0.1:6379/0") == "redis://:********@127.0.0.1:6379/0"
    assert mask_url("http://user@host/") == "http://********@host/"
    assert mask_url("http://127.0.0.1/") == "http://127.0.0.1/"
    shown = masked_settings(load_settings(redis_url="redis://u:hunter2@127.0.0.1:1/0", api_token="tok-123",
                                          openai_api_key="sk-secret"))
    assert "hunter2" not in str(shown) and "tok-123" not in str(shown) and "sk-secret" not in str(shown)
    assert shown["api_token"] == "********"


def _job(state: str, category: str | None = None) -> JobRecord:
    return JobRecord(id="a" * 32, state=state, category=category, created_at=datetime.now(UTC))


def test_outcomes_per_failure_category() -> None:
    jobs = [_job("succeeded")] * 6 + [_job("failed", "max_steps")] * 2 + [_job("failed", "timeout"),
                                                                          _job("cancelled"), _job("running")]
    chart = outcomes(jobs)
    assert chart.finished == 10 and chart.success_rate == 0.6
    assert [(b.label, b.count) for b in chart.bars] == [
        ("succeeded", 6), ("failed: max_steps", 2), ("cancelled", 1), ("failed: timeout", 1)]
    assert outcomes([_job("queued")]).bars == []
