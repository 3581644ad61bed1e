"""The one scrubber of a job's secrets (``workers.jobs.secrets.scrubber``): every form a page, a URL, a
log line or a header can echo a value in becomes its placeholder, and text without one is left alone."""

from __future__ import annotations

import base64
import html
import json
import logging
from urllib.parse import quote, quote_plus

import pytest
import re2
from pydantic import ValidationError

from config import bind, scrub_with, setup_logging
from tests.support.secret_echoes import PASSWORD, SECRETS, USER, encodings
from workers.jobs.model.spec import MIN_SECRET
from workers.jobs.secrets.models import CredentialSet
from workers.jobs.secrets.scrubber import MIN_BASE64_CORE, PER_CHARACTER_MAX, Scrubber, base64_forms


@pytest.mark.parametrize("name", list(SECRETS))
@pytest.mark.parametrize("form", list(encodings(USER)))
def test_every_encoding_of_each_sample_value_is_scrubbed(name: str, form: str) -> None:
    echoed = encodings(SECRETS[name])[form]
    text = f"<p>Signed in: {echoed}.</p> /next?{echoed}&x=1"
    scrubbed = Scrubber(SECRETS).scrub(text)
    for variant in encodings(SECRETS[name]).values():
        assert variant not in scrubbed, (form, variant, scrubbed)
    assert f"<secret>{name}</secret>" in scrubbed and scrubbed.startswith("<p>Signed in: ") and "&x=1" in scrubbed


def test_the_issues_get_form_url_and_page_are_scrubbed_to_placeholders() -> None:
    url = f"http://127.0.0.1:8000/login?user={quote_plus(USER)}&password={quote_plus(PASSWORD)}"
    scrubbed = Scrubber(SECRETS).scrub(url)
    assert scrubbed == "http://127.0.0.1:8000/login?user=<secret>user</secret>&password=<secret>password</secret>"
    page = f"<h1 style='text-transform: uppercase'>{USER.upper()}</h1><input value=\"{html.escape(PASSWORD)}\">"
    assert Scrubber(SECRETS).scrub(page) == ("<h1 style='text-transform: uppercase'><secret>user</secret></h1>"
                                             "<input value=\"<secret>password</secret>\">")


def test_text_without_a_secret_is_left_exactly_as_it_was() -> None:
    text = ("S3cr3t P@ss w0rd, ada test example.org, %26%40 &amp; &#38; \\u0026 UzNjcjN0 YWRhK3Rlc3R "
            "Ü \U0001f600 " + "lorem ipsum " * 100)
    assert Scrubber(SECRETS).scrub(text) == text
    assert Scrubber({}).scrub(text) == text and not Scrubber({})


def test_base64_is_matched_in_its_own_case_only() -> None:
    b64 = base64.b64encode(PASSWORD.encode()).decode()
    assert Scrubber(SECRETS).scrub(b64.swapcase()) == b64.swapcase()  # another value's base64, not this one's


def test_the_shortest_secret_is_still_scrubbed_in_every_case_and_has_no_unaligned_base64_core() -> None:
    short = "a" * (MIN_SECRET - 1) + "Z"
    scrubber = Scrubber({"pin": short})
    assert scrubber.scrub(f"x {short.upper()} {quote(short)} {base64.b64encode(short.encode()).decode()} y") == \
        "x <secret>pin</secret> <secret>pin</secret> <secret>pin</secret> y"
    assert all(len(form) >= MIN_BASE64_CORE for form in base64_forms("a" * 32)[2:])
    assert base64_forms(short) == ["YWFhWg==", "YWFhWg"]  # only its whole encodings: no short cores


@pytest.mark.parametrize("value", ["abc", "x" * 4097])
def test_a_credential_set_keeps_a_jobs_bound(value: str) -> None:
    with pytest.raises(ValidationError, match=f"{MIN_SECRET} to 4096 characters"):
        CredentialSet(name="shop", secrets={"password": value})
    assert CredentialSet(name="shop", secrets={"password": "abcd"}).secrets["password"].get_secret_value() == "abcd"


def test_a_long_value_is_matched_in_each_whole_encoding() -> None:
    long = ("k3y/" + "x" * PER_CHARACTER_MAX) + "&end"
    scrubber = Scrubber({"key": long})
    for form in (long, long.upper(), quote(long, safe=""), quote_plus(long), html.escape(long),
                 json.dumps(long)[1:-1], base64.b64encode(long.encode()).decode()):
        assert scrubber.scrub(f"[{form}]") == "[<secret>key</secret>]", form


def test_the_longest_value_wins_and_a_placeholder_is_not_scrubbed_again() -> None:
    scrubber = Scrubber({"secret": "secret", "long": "secret-longer"})
    assert scrubber.scrub("secret-longer and secret") == "<secret>long</secret> and <secret>secret</secret>"


def test_two_values_echoed_overlapping_leave_nothing_of_either() -> None:
    scrubber = Scrubber({"a": "abcdef12", "b": "ef12ghij"})
    assert scrubber.scrub("<abcdef12ghij>") == "<<secret>a</secret><secret>b</secret>>"
    assert scrubber.scrub("abcdef12 ef12ghij") == "<secret>a</secret> <secret>b</secret>"


def test_json_like_values_stay_well_formed_whatever_the_secret_holds() -> None:
    scrubber = Scrubber({"q": 'ab"c\\'})
    entry = {"text": 'said ab"c\\ and AB\\"C\\\\', 'ab"c\\': ["ab%22c%5C", 3, None]}
    assert scrubber.scrub_value(entry) == {"text": "said <secret>q</secret> and <secret>q</secret>",
                                           "<secret>q</secret>": ["<secret>q</secret>", 3, None]}


def test_a_finished_jobs_values_are_not_kept_by_a_pattern_cache() -> None:
    before = re2._Regexp._make.cache_info().currsize
    assert Scrubber({"pin": "pin-7391"}).scrub("pin-7391") == "<secret>pin</secret>"
    assert re2._Regexp._make.cache_info().currsize == before


def test_a_lone_surrogate_does_not_stop_the_scrub() -> None:
    assert Scrubber(SECRETS).scrub(f"\ud800 {PASSWORD}") == "\ufffd <secret>password</secret>"


@pytest.mark.parametrize("json_lines", [True, False])
def test_every_log_line_of_a_job_is_scrubbed_message_fields_and_traceback(capsys, json_lines: bool) -> None:
    url = f"http://127.0.0.1/login?user={quote_plus(USER)}&password={quote_plus(PASSWORD)}"
    setup_logging("INFO", json_lines=json_lines)
    log = logging.getLogger("browserd.test")
    try:
        with bind(job_id="job-1"):
            scrub_with(Scrubber(SECRETS).scrub)
            with bind(url=url):
                log.info("opened %s as %s", url, USER.upper())
                try:
                    raise ValueError(f"no page at {url}")
                except ValueError:
                    log.exception("failed")
        log.info("after the job: %s", "S3cr3t%26P")  # not the job's context: as written
        err = capsys.readouterr().err
    finally:
        logging.getLogger().handlers.clear()
    job_lines, after = err.split("after the job")
    for variant in (*encodings(USER).values(), *encodings(PASSWORD).values()):
        assert variant not in job_lines, variant
    assert job_lines.count("<secret>password</secret>") == 4 and "ValueError: no page at" in job_lines
    assert "job-1" in job_lines and "S3cr3t%26P" in after
    assert '"_scrub"' not in job_lines and "_scrub=" not in job_lines and "<bound method" not in job_lines
