"""Merging extractions into the output schema (pure code)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workers.agent.actions.content import split_text
from workers.agent.merge import merge, without_extensions
from workers.jobs.model.spec import JobSpec

ITEMS = {"type": "object", "properties": {"title": {"type": "string"}, "items": {
    "type": "array", "x-key": "sku", "items": {"type": "object"}}}}


def test_arrays_are_concatenated_and_deduplicated_by_the_schemas_key():
    pages = [{"title": "Shop", "items": [{"sku": "a", "price": 1}, {"sku": "b"}]},
             {"title": None, "items": [{"sku": "b", "price": 2}, {"sku": "c", "price": 3}]}]
    assert merge(pages, ITEMS) == {"title": "Shop", "items": [
        {"sku": "a", "price": 1}, {"sku": "b", "price": 2}, {"sku": "c", "price": 3}]}


def test_without_a_key_only_identical_records_are_repeats():
    schema = {"type": "array", "items": {"type": "object"}}
    assert merge([[{"n": 1}, {"n": 2}], [{"n": 2}, {"n": 3}]], schema) == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert merge([[1, 2], [2]], {"type": "array"}) == [1, 2, 2]
    assert merge([[1, 2], [2]], {"type": "array", "uniqueItems": True}) == [1, 2]


def test_a_later_value_refines_an_earlier_one_but_null_never_erases():
    schema = {"type": "object", "properties": {"price": {"type": "number"}}}
    assert merge([{"price": 3}, {"price": None}], schema) == {"price": 3}
    assert merge([{"price": 3}, {"price": 4}], schema) == {"price": 4}
    assert merge([{"price": None}], schema) == {"price": None}
    assert merge([None, None], schema) is None


def test_refs_and_a_key_over_several_fields():
    schema = {"$defs": {"List": {"type": "array", "x-key": ["shop", "sku"]}}, "$ref": "#/$defs/List"}
    rows = [[{"shop": 1, "sku": "a"}], [{"shop": 2, "sku": "a"}, {"shop": 1, "sku": "a", "note": "x"}]]
    assert merge(rows, schema) == [{"shop": 1, "sku": "a", "note": "x"}, {"shop": 2, "sku": "a"}]


def test_the_model_never_sees_browserds_keywords_but_properties_keep_their_names():
    schema = {"type": "object", "properties": {"x-ray": {"type": "string"}, "list": {"type": "array", "x-key": "id"}}}
    assert without_extensions(schema) == {"type": "object", "properties": {"x-ray": {"type": "string"},
                                                                           "list": {"type": "array"}}}


def test_long_text_is_split_between_lines_and_nothing_is_lost():
    text = "".join(f"line {i}\n" for i in range(1000)) + "x" * 250
    chunks = split_text(text, 100)
    assert "".join(chunks) == text and all(len(c) <= 100 for c in chunks)
    assert all(c.endswith("\n") for c in chunks[:-4])


@pytest.mark.parametrize("key", [7, {"a": 1}, [], [1, "a"], None])
def test_a_malformed_key_is_no_key(key):
    schema = {"type": "array", "x-key": key, "items": {"type": "object"}}
    assert merge([[{"a": 1}, {"a": 1}], [{"a": 1, "b": 2}]], schema) == [{"a": 1}, {"a": 1, "b": 2}]


@pytest.mark.parametrize("options", [{"strategy": "yolo"}, {"horizon": 0}, {"horizon": 21}, {"memory_interval": -1},
                                     {"memory_interval": 1001}, {"strategy": None}])
def test_bad_agent_options_are_refused(options):
    with pytest.raises(ValidationError):
        JobSpec(task="x", options=options)


def test_agent_option_defaults():
    options = JobSpec(task="x").options
    assert (options.strategy, options.horizon, options.memory_interval) == ("planner_navigator", 3, 10)
