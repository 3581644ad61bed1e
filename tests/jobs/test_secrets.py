"""Secrets without a stack: sealing with the key, refusing without one, and the agent's fill and scrub."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from config import ConfigError, load_settings
from workers.agent.errors import ActionError
from workers.agent.secrets import Secrets
from workers.jobs.errors import SpecError
from workers.jobs.model.result import StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.secrets.sealing import SecretsUnavailable, open_secrets, seal_spec

KEY = Fernet.generate_key().decode()


def test_a_spec_is_sealed_and_its_record_keeps_only_names() -> None:
    settings = load_settings(secrets_key=KEY)
    spec = seal_spec(JobSpec(task="x", secrets={"password": "hunter22"}), settings)
    stored = spec.model_dump_json(exclude_none=True)
    assert "hunter22" not in stored and '"password":"**********"' in stored
    again = JobSpec.model_validate_json(stored)
    assert open_secrets(again, settings) == {"password": "hunter22"}
    assert open_secrets(again, settings, {"user": "ada@example.org", "password": "old"}) == {
        "user": "ada@example.org", "password": "hunter22"}  # the job's own win over its set's


def test_sealing_refuses_what_it_cannot_keep() -> None:
    with pytest.raises(SpecError, match="BROWSERD_SECRETS_KEY") as err:
        seal_spec(JobSpec(task="x", secrets={"password": "hunter22"}), load_settings())
    assert err.value.problems[0].field == "secrets"
    with pytest.raises(SpecError) as err:
        seal_spec(JobSpec(task="x", credentials="shop"), load_settings())
    assert err.value.problems[0].field == "credentials"
    with pytest.raises(SpecError) as err:
        seal_spec(JobSpec(task="x", sealed_secrets="gAAAA-forged"), load_settings(secrets_key=KEY))
    assert err.value.problems[0].field == "sealed_secrets"


def test_another_key_cannot_open() -> None:
    spec = seal_spec(JobSpec(task="x", secrets={"pw": "hunter22"}), load_settings(secrets_key=KEY))
    with pytest.raises(SecretsUnavailable, match="do not open"):
        open_secrets(spec, load_settings(secrets_key=Fernet.generate_key().decode()))
    with pytest.raises(SecretsUnavailable, match="no BROWSERD_SECRETS_KEY"):
        open_secrets(spec, load_settings())


@pytest.mark.parametrize("value", ["short", "x" * 44, "not base64!" * 4])
def test_a_bad_key_stops_at_start(value: str) -> None:
    with pytest.raises(ConfigError, match="BROWSERD_SECRETS_KEY.*Fernet key"):
        load_settings(secrets_key=value)


def test_fill_and_scrub() -> None:
    secrets = Secrets({"user": "ada@example.org", "password": 'p"w\\d1'})
    assert secrets.fill("<secret>user</secret> / < secret >x", "input_text") == "ada@example.org / < secret >x"
    with pytest.raises(ActionError, match="no secret named 'pin'.*password, user"):
        secrets.fill("<secret>pin</secret>", "input_text")
    assert secrets.scrub("Welcome ada@example.org, pw p\"w\\d1") == "Welcome <secret>user</secret>, pw <secret>password</secret>"
    step = StepRecord(step=1, url="https://x/?u=ada@example.org", error='typed "p\\"w\\\\d1"')
    step.error = 'value p"w\\d1'
    scrubbed = secrets.scrub_model(step)
    assert "ada@example.org" not in scrubbed.model_dump_json() and 'p"w\\d1' not in str(scrubbed.error)
    assert "<secret>user</secret>" in secrets.task_note() and "ada" not in secrets.task_note()
    assert Secrets().task_note() == "" and Secrets().scrub("x") == "x"
