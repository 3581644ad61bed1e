"""The command line read into job specs and batch bodies, without an API (the fast tier): what each
flag becomes, and which mistakes are blamed on which flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.cli import build_parser
from daemon.cli.commands import batch, recipe, run, submit
from workers.jobs.recipes.models import Recipe, RecipeInfo, RecipeStats, RecipeStep
from workers.jobs.specs.batch_body import parse_body


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_submit_and_run_open_networks_and_domains_with_the_spec_fields():
    args = parse("submit", "read it", "--allow-network", "127.0.0.1/32", "--allow-network", "10.1.0.0/16",
                 "--allow", "shop.test", "--deny", "ads.test")
    assert {k: v for k, v in submit.build_spec(args).items() if "ed_" in k} == {
        "allowed_networks": ["127.0.0.1/32", "10.1.0.0/16"], "allowed_domains": ["shop.test"],
        "denied_domains": ["ads.test"]}
    local = run._spec_fields(parse("run", "read it", "--allow-network", "127.0.0.1/32", "--deny", "ads.test"))
    assert local["allowed_networks"] == ["127.0.0.1/32"] and local["denied_domains"] == ["ads.test"]
    assert "allowed_networks" not in submit.build_spec(parse("submit", "read it"))  # none given, none sent


def test_inspect_takes_the_same_flags():
    args = parse("inspect", "http://127.0.0.1:8000/", "--allow-network", "127.0.0.1/32", "--deny", "ads.test")
    assert (args.allow_network, args.deny, args.allow) == (["127.0.0.1/32"], ["ads.test"], [])


def test_batch_flags_are_defaults_of_every_job(tmp_path: Path):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"task": "a"}\n{"task": "b", "allowed_networks": ["10.0.0.0/8"]}\n')
    args = parse("batch", str(jobs), "--allow-network", "127.0.0.1/32", "--deny", "ads.test")
    request = parse_body(batch.body_of(args, jobs.read_bytes()))
    assert request.defaults == {"allowed_networks": ["127.0.0.1/32"], "denied_domains": ["ads.test"]}
    assert request.jobs == [{"task": "a"}, {"task": "b", "allowed_networks": ["10.0.0.0/8"]}]  # the job's own wins


def test_zero_is_passed_on_not_dropped():
    """``--max-steps 0`` and ``--timeout 0`` were dropped (``if args.max_steps:``): the job ran with the
    defaults. They are sent, for the API (or the spec, for ``run``) to refuse with its reason."""
    spec = submit.build_spec(parse("submit", "x", "--max-steps", "0", "--timeout", "0", "--keep-session", "0"))
    assert spec["options"] == {"max_steps": 0, "keep_session": 0} and spec["timeout"] == 0
    local = run._spec_fields(parse("run", "x", "--max-steps", "0", "--timeout", "0"))
    assert local["options"] == {"max_steps": 0} and local["timeout"] == 0


def test_submit_takes_an_output_schema_file_or_json_a_kept_session_and_a_webhook(tmp_path: Path):
    schema = {"type": "object", "required": ["price"]}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    from_file = submit.build_spec(parse("submit", "x", "--output-schema", str(tmp_path / "schema.json")))
    inline = submit.build_spec(parse("submit", "x", "--output-schema", json.dumps(schema), "--keep-session", "300",
                                     "--webhook", "https://hooks.example/job"))
    assert from_file["output_schema"] == inline["output_schema"] == schema
    assert inline["options"] == {"keep_session": 300} and inline["webhook_url"] == "https://hooks.example/job"
    assert run._spec_fields(parse("run", "x", "--output-schema", json.dumps(schema)))["output_schema"] == schema


def test_a_jsonl_header_line_and_the_flags_make_one_batch(tmp_path: Path):
    """The documented header line with --defaults/--webhook was sent as a job (422 jobs[0].defaults)."""
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"defaults": {"timeout": 60, "labels": {"from": "file"}}, "webhook_url": "https://a.example/h"}\n'
                    '{"task": "a"}\n{"task": "b"}\n')
    args = parse("batch", str(jobs), "--defaults", '{"labels": {"run": "cli"}, "priority": "low"}',
                 "--webhook", "https://b.example/h")
    request = parse_body(batch.body_of(args, jobs.read_bytes()))
    assert request.jobs == [{"task": "a"}, {"task": "b"}]
    assert request.defaults == {"timeout": 60, "labels": {"from": "file", "run": "cli"}, "priority": "low"}
    assert request.webhook_url == "https://b.example/h"  # the flag over the file's
    only_file_webhook = parse_body(batch.body_of(parse("batch", str(jobs), "--defaults", "{}"), jobs.read_bytes()))
    assert only_file_webhook.webhook_url == "https://a.example/h" and only_file_webhook.defaults["timeout"] == 60
    array = tmp_path / "jobs.json"
    array.write_text('[{"task": "a"}]')
    wrapped = parse_body(batch.body_of(parse("batch", str(array), "--defaults", '{"timeout": 5}'), array.read_bytes()))
    assert (wrapped.jobs, wrapped.defaults) == ([{"task": "a"}], {"timeout": 5})


def test_a_bad_defaults_flag_is_blamed_on_the_flag(tmp_path: Path):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"task": "a"}\n')
    with pytest.raises(batch.FlagError, match="--defaults is not JSON"):
        batch.body_of(parse("batch", str(jobs), "--defaults", "{timeout: 1}"), jobs.read_bytes())


def test_recipe_show_prints_parameters_as_json_not_python_reprs():
    info = RecipeInfo(recipe=Recipe(name="prices", task="Find {{item}}", steps=[
        RecipeStep(action="input_text", params={"locator": {"role": "textbox", "name": "Search"}, "text": "{{item}}",
                                                "clear": True}),
        RecipeStep(action="done", params={"text": "ok"})]), stats=RecipeStats(), versions=[1])
    shown = recipe.details(info)
    assert '  1. input_text {"locator": {"role": "textbox", "name": "Search"}, "text": "{{item}}", "clear": true}' in shown
    assert "{'" not in shown and "True" not in shown
