"""Incremental runs, the pure parts: which jobs have a read to reuse (``read_key``), and the page
fingerprint an unchanged page keeps (``content_fingerprint``)."""

from __future__ import annotations

from types import SimpleNamespace

from workers.agent.unchanged import content_fingerprint
from workers.jobs.model.spec import JobSpec
from workers.jobs.schedules.reads import PageRead, read_key

SCHEMA = {"type": "object", "properties": {"price": {"type": "string"}}}


def spec(**fields: object) -> JobSpec:
    return JobSpec.model_validate({"task": "read the price", "start_url": "https://shop.example/p/1",
                                   "output_schema": SCHEMA, **fields})


def test_the_same_page_and_work_share_a_key_and_other_work_does_not() -> None:
    key = read_key(spec())
    assert key is not None and key == read_key(spec(labels={"run": "2"}, timeout=30))  # labels, limits: same work
    assert read_key(spec(start_url="https://shop.example/p/2")) != key
    assert read_key(spec(task="read the name")) != key
    assert read_key(spec(output_schema={"type": "object"})) != key
    assert read_key(spec(models={"navigator": "other-model"})) != key


def test_jobs_that_ask_no_model_of_a_page_of_their_own_have_no_key() -> None:
    assert read_key(JobSpec(script=[{"go_to_url": {"url": "https://shop.example/"}}])) is None
    assert read_key(JobSpec(task="search the web for a mug")) is None  # no page of its own
    assert read_key(JobSpec(recipe="prices", params={"q": "mug"}, start_url="https://shop.example/")) is None


def state(title: str, text: str, elements: str) -> SimpleNamespace:
    return SimpleNamespace(title=title, text=lambda: text, fingerprint=lambda: elements)


def test_the_fingerprint_is_what_the_agent_reads() -> None:
    first = content_fingerprint(state("Item 1", "Price: 12 EUR", "[1]<a>next</a>"))
    assert first == content_fingerprint(state("Item 1", "Price: 12 EUR", "[1]<a>next</a>"))
    assert first != content_fingerprint(state("Item 1", "Price: 13 EUR", "[1]<a>next</a>"))  # text below the fold too
    assert first != content_fingerprint(state("Item 2", "Price: 12 EUR", "[1]<a>next</a>"))
    assert first != content_fingerprint(state("Item 1", "Price: 12 EUR", "[1]<a>previous</a>"))


def test_a_read_round_trips_as_json() -> None:
    read = PageRead(fingerprint="f" * 64, data={"price": "12"}, final_answer='{"price": "12"}', job_id="a" * 32)
    assert PageRead.model_validate_json(read.model_dump_json()) == read
