"""Refusals in words a user understands (issue 29): no ``relative URL without a base`` from the URL
parser, no bytes repr from RE2; the field or variable is named with what to type."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import ConfigError, load_settings
from tests.jobs.test_specs import SETTINGS
from workers.jobs.crawls.scope import check_pattern
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.specs.checks import check_spec, problems_of
from workers.jobs.specs.output import check_schema

INTERNALS = ("relative URL without a base", "b'", "Input should be", "Value error")


def refusal(body: dict) -> str:
    with pytest.raises(ValidationError) as refused:
        JobSpec.model_validate(body)
    return problems_of(refused.value).summary


def test_a_url_without_its_scheme_says_what_to_type() -> None:
    said = refusal({"task": "read it", "start_url": "example.com/shop"})
    assert said == ("start_url: 'example.com/shop' is not a valid URL: give it in full, with its scheme, "
                    "e.g. https://example.com/page")
    said = refusal({"task": "read it", "start_url": "ftp://example.com/"})
    assert said.startswith("start_url: 'ftp://example.com/' is not a web address: its scheme must be 'http' or")
    said = refusal({"task": "read it", "start_url": "http://shop.example:99999/"})
    assert "is not a valid URL (invalid port number)" in said
    for text in (said, refusal({"task": "read it", "start_url": "example.com"})):
        assert not any(internal in text for internal in INTERNALS), text


def test_a_bad_url_setting_is_worded_too() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(llm_base_url="localhost:11434/v1")
    assert "BROWSERD_LLM_BASE_URL='localhost:11434/v1': 'localhost:11434/v1' is not a valid URL" in str(refused.value) \
        or "BROWSERD_LLM_BASE_URL='localhost:11434/v1': 'localhost:11434/v1' is not a web address" in str(refused.value)
    assert "relative URL without a base" not in str(refused.value)


def test_patterns_re2_refuses_are_named_in_text_not_bytes() -> None:
    said = check_schema({"type": "string", "pattern": "(?=a)b"})[0]
    assert said == "pattern '(?=a)b': not supported by the linear-time engine (RE2): invalid perl operator: (?="
    with pytest.raises(SpecError) as refused:
        check_spec(JobSpec(task="a", output_schema={"type": "string", "pattern": "x(?<=a)y"}), SETTINGS)
    assert refused.value.summary == ("output_schema: pattern 'x(?<=a)y': not supported by the linear-time engine "
                                     "(RE2): invalid perl operator: (?<=")
    with pytest.raises(ValueError, match=r"^not an RE2 pattern: invalid perl operator: \(\?=$"):
        check_pattern("(?=a)b")
