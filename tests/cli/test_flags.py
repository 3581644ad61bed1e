"""The command line read into job specs and batch bodies, without an API (the fast tier): what each
flag becomes, and which mistakes are blamed on which flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.cli import build_parser
from daemon.cli.commands import batch, run, submit
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
