"""workers.jobs.store.scripts: the Lua files load as package data, with their prelude and Python's constants."""

from __future__ import annotations

from importlib.resources import files

import pytest

from workers.jobs.model.status import FINAL_STATES
from workers.jobs.store.scripts import EVENTS_MAX, source

SCRIPTS = sorted(p.name.removesuffix(".lua") for p in files("workers.jobs.store.lua").iterdir()
                 if p.name.endswith(".lua"))


@pytest.mark.parametrize("name", [n for n in SCRIPTS if n not in ("batch_create_many", "crawl_admit", "crawl_resume",
                                                "crawl_retry")])
def test_every_script_loads_with_nothing_left_to_fill(name: str) -> None:
    text = source(name)
    assert "${" not in text and "--! prelude" not in text


def test_job_scripts_start_with_the_prelude_and_its_constants_come_from_python() -> None:
    start = source("job_start")
    assert start.startswith(source("job_prelude"))
    assert f"local EVENTS_MAX = {EVENTS_MAX}\n" in start
    assert all(f"{state.value} = true" in start for state in FINAL_STATES)
    assert source("politeness_slot_take").startswith(source("clock_prelude"))


def test_a_batch_runs_the_job_create_script_once_per_job() -> None:
    many = source("batch_create_many", CREATE_ONE=source("job_create"))
    assert source("job_create") in many and "${" not in many
    with pytest.raises(KeyError):
        source("batch_create_many")  # the part it needs was not given


@pytest.mark.parametrize("name", ["batch_create_many", "crawl_admit", "crawl_resume", "crawl_retry"])
def test_scripts_that_embed_job_create_load_with_it(name: str) -> None:
    text = source(name, CREATE_ONE=source("job_create"))
    assert "${" not in text and "--! prelude" not in text
