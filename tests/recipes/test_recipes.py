"""Recipes end to end: redis-server, the API and a Celery worker, the demo shop, a scripted model.

A search-and-extract agent job is saved as a recipe and replayed with zero LLM calls (the scripted
server counts them); on a changed shop it heals with the agent and its new version replays clean;
it runs for 20 queries as a batch; a recipe that no longer matches fails clearly when healing is
off, and is marked broken after failing too often; bad inputs are refused naming the field.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from daemon.demo import PRODUCTS
from tests.batches.helpers import results, wait_completed, worker_metrics_url
from tests.queue.stack import Stack, stack
from tests.support.llm_server import LLMServer
from tests.support.shop import CHANGED_FIELDS, DEMO_FIELDS, ShopModel, SwitchableShop, task

NETWORKS = ["127.0.0.1/32"]
FINAL = {"succeeded", "failed", "cancelled"}
MAX_FAILURES = 2


@pytest.fixture(scope="module")
def model() -> ShopModel:
    return ShopModel()


@pytest.fixture(scope="module")
def llm(model: ShopModel) -> Iterator[LLMServer]:
    with LLMServer() as server:
        server.responder = model
        yield server


@pytest.fixture(scope="module")
def s(llm: LLMServer) -> Iterator[Stack]:
    with stack(llm_base_url=llm.base_url, openai_api_key="sk-test", recipe_max_failures=MAX_FAILURES,
               metrics_port=0) as running:
        running.start_worker(concurrency=4)
        yield running


@pytest.fixture
def shop(model: ShopModel) -> Iterator[SwitchableShop]:
    with SwitchableShop() as site:
        yield site
    model.fields = DEMO_FIELDS


def run(s: Stack, spec: dict[str, Any]) -> dict[str, Any]:
    job = s.submit({"allowed_networks": NETWORKS, **spec})
    return s.wait_state(job["id"], FINAL, timeout=180)


def record(s: Stack, shop: SwitchableShop, name: str, query: str = "mug") -> dict[str, Any]:
    """An agent job searching the shop, saved as recipe ``name`` (its parameter inferred)."""
    job = run(s, {"task": task(query), "start_url": shop.url("/"), "options": {"planning_interval": 100}})
    assert job["state"] == "succeeded", job["error"]
    status, saved = s.call("POST", f"/v1/jobs/{job['id']}/recipe", {"name": name})
    assert status == 201, saved
    return saved


def matching(query: str) -> list[str]:
    return [p.name for p in PRODUCTS if query.lower() in (p.name + " " + p.blurb).lower()]


def test_a_saved_search_replays_with_zero_llm_calls(s, llm, model, shop):
    saved = record(s, shop, "search")
    recipe = saved["recipe"]
    assert recipe["params"] == {"q": "mug"} and recipe["version"] == 1
    assert [step["action"] for step in recipe["steps"]] == ["input_text", "click_element", "extract_fields"]
    assert recipe["steps"][0]["params"]["locator"]["attributes"]["name"] == "q"
    calls = model.calls

    job = run(s, {"recipe": "search", "params": {"q": "tent"}})
    assert job["state"] == "succeeded", job["error"]
    assert model.calls == calls  # the scripted server was not asked once
    assert job["result"]["data"] == {"names": ["Two-Person Tent"], "prices": ["$349.00"]}
    assert job["result"]["totals"]["llm_calls"] == 0
    assert all(step["replayed"] for step in job["result"]["steps"])
    acts = [data for kind, data in s.events(job["id"]) if kind == "agent" and data["state"] == "act.ok"]
    assert acts and all(event["replayed"] for event in acts)

    status, shown = s.call("GET", "/v1/recipes/search")
    assert status == 200 and shown["stats"]["runs"] == 1 and shown["stats"]["replayed"] == 1
    assert shown["stats"]["success_rate"] == 1.0
    with urllib.request.urlopen(worker_metrics_url(s), timeout=30) as resp:
        exposed = resp.read().decode()
    assert metric(exposed, 'browserd_replay_steps_total{outcome="replayed"}') >= 3
    assert metric(exposed, "browserd_llm_tokens_saved_total") >= recipe["recorded_tokens"] > 0


def metric(exposition: str, series: str) -> float:
    found = re.search(rf"^{re.escape(series)} (\S+)$", exposition, re.MULTILINE)
    assert found, f"{series} not exposed"
    return float(found.group(1))


def test_a_changed_shop_heals_and_the_new_version_replays_clean(s, model, shop):
    record(s, shop, "heal-me")
    shop.change()  # classes renamed, a banner above the button, its text changed, results reversed
    model.fields = CHANGED_FIELDS
    calls = model.calls

    healed = run(s, {"recipe": "heal-me", "params": {"q": "mug"}})
    assert healed["state"] == "succeeded", healed["error"]
    assert model.calls > calls  # the agent finished it
    assert healed["result"]["data"]["names"] == ["Enamel Camp Mug"]
    steps = healed["result"]["steps"]
    assert any(st["replayed"] and st["error"] for st in steps) and any(not st["replayed"] for st in steps)
    status, shown = s.call("GET", "/v1/recipes/heal-me")
    assert shown["recipe"]["version"] == 2 and shown["recipe"]["healed"] and shown["versions"] == [1, 2]
    assert shown["stats"]["healed"] == 1
    status, old = s.call("GET", "/v1/recipes/heal-me?version=1")
    assert status == 200 and old["recipe"]["steps"][2]["params"]["fields"] == DEMO_FIELDS  # kept

    calls = model.calls
    clean = run(s, {"recipe": "heal-me", "params": {"q": "vest"}})
    assert clean["state"] == "succeeded", clean["error"]
    assert model.calls == calls
    assert clean["result"]["data"]["names"] == ["Down Vest"]


def test_a_parameterized_recipe_runs_for_20_queries_as_a_batch(s, model, shop):
    record(s, shop, "per-query")
    queries = ["mug", "tent", "vest", "jacket", "shoes", "filter", "stove", "poles", "pad", "sun", "gaiters", "map",
               "kit", "hoody", "pants", "merino", "headlamp", "bivy", "backpack", "down"]
    calls = model.calls
    status, batch = s.call("POST", "/v1/batches", {"jobs": [{"recipe": "per-query", "params": {"q": q}} for q in queries],
                                                   "defaults": {"allowed_networks": NETWORKS}})
    assert status == 201, batch
    wait_completed(s, batch["id"])
    jobs = [s.job(line["id"]) for line in results(s, batch["id"])]
    assert len(jobs) == 20
    for job in jobs:
        assert job["state"] == "succeeded", job["error"]
        query = job["spec"]["params"]["q"]
        assert job["result"]["data"]["names"] == matching(query), query
    healed = [(job["spec"]["params"], [st["error"] for st in job["result"]["steps"] if st["error"]]) for job in jobs
              if not all(st["replayed"] for st in job["result"]["steps"])]
    assert model.calls == calls and not healed, healed


def test_a_recipe_that_no_longer_matches_fails_clearly_and_is_marked_broken(s, model, shop):
    record(s, shop, "strict")
    shop.change()
    calls = model.calls
    for _ in range(MAX_FAILURES):
        job = run(s, {"recipe": "strict", "params": {"q": "mug"}, "heal": False})
        assert job["state"] == "failed" and job["category"] == "action_error"
        assert "recipe 'strict' step" in job["error"], job["error"]
    assert model.calls == calls  # no healing, no LLM
    status, shown = s.call("GET", "/v1/recipes/strict")
    assert shown["stats"]["failed"] == MAX_FAILURES and "failures in a row" in shown["stats"]["broken"]
    status, refused = s.call("POST", "/v1/jobs", {"recipe": "strict", "params": {"q": "mug"}})
    assert status == 422 and refused["fields"][0]["field"] == "recipe" and "broken" in refused["message"]
    shop.change(False)
    record(s, shop, "strict")  # saving it again clears the mark
    assert s.call("GET", "/v1/recipes/strict")[1]["stats"]["broken"] == ""


def test_automatic_mode_records_the_first_run_and_replays_the_next(s, model, shop):
    first = run(s, {"task": task("mug"), "start_url": shop.url("/"), "auto_recipe": "auto-shop",
                    "options": {"planning_interval": 100}})
    assert first["state"] == "succeeded", first["error"]
    status, shown = s.call("GET", "/v1/recipes/auto-shop")
    assert status == 200 and shown["recipe"]["source_job"] == first["id"]
    calls = model.calls
    second = run(s, {"task": task("tent"), "start_url": shop.url("/"), "auto_recipe": "auto-shop"})
    assert second["state"] == "succeeded", second["error"]
    assert model.calls == calls
    assert second["result"]["data"]["names"] == ["Two-Person Tent"]


def batch_jobs(s: Stack, body: dict[str, Any], path: str = "/v1/batches") -> list[dict[str, Any]]:
    """Submit a batch (or run a schedule now) and wait for every job; the jobs, in order."""
    status, batch = s.call("POST", path, body)
    assert status == 201, batch
    wait_completed(s, batch["id"])
    return [s.job(line["id"]) for line in results(s, batch["id"])]


def test_a_batch_in_automatic_mode_records_its_first_success_and_replays_it(s, model, shop):
    queries = ["mug", "tent", "vest", "jacket", "kit", "map"]  # more jobs than the worker runs at once (4)
    jobs = batch_jobs(s, {"jobs": [{"task": task(q)} for q in queries], "mode": "auto",
                          "defaults": {"start_url": shop.url("/"), "allowed_networks": NETWORKS,
                                       "options": {"planning_interval": 100}}})
    assert all(job["state"] == "succeeded" for job in jobs), [job["error"] for job in jobs]
    assert [job["result"]["data"]["names"] for job in jobs] == [matching(q) for q in queries]
    replayed = [job for job in jobs if all(st["replayed"] for st in job["result"]["steps"])]
    assert replayed and all(job["result"]["totals"]["llm_calls"] == 0 for job in replayed)
    name = jobs[0]["spec"]["auto_recipe"]
    assert name.startswith("batch-") and {job["spec"]["auto_recipe"] for job in jobs} == {name}
    status, shown = s.call("GET", f"/v1/recipes/{name}")
    assert status == 200 and shown["stats"]["replayed"] == len(replayed)


def test_a_schedule_in_automatic_mode_replays_after_its_first_run(s, model, shop):
    status, schedule = s.call("POST", "/v1/schedules", {
        "every": 3600, "enabled": False, "mode": "auto",
        "job": {"task": task("mug"), "start_url": shop.url("/"), "allowed_networks": NETWORKS,
                "options": {"planning_interval": 100}}})
    assert status == 201, schedule
    first = batch_jobs(s, {}, f"/v1/schedules/{schedule['id']}/run")[0]
    assert first["state"] == "succeeded", first["error"]
    assert s.call("GET", f"/v1/recipes/schedule-{schedule['id']}")[1]["recipe"]["source_job"] == first["id"]
    calls = model.calls
    second = batch_jobs(s, {}, f"/v1/schedules/{schedule['id']}/run")[0]
    assert second["state"] == "succeeded", second["error"]
    assert model.calls == calls and second["result"]["data"]["names"] == ["Enamel Camp Mug"]
    status, refused = s.call("POST", "/v1/schedules", {"every": 60, "mode": "auto", "job": {"script": [
        {"go_to_url": {"url": shop.url("/")}}]}})
    assert status == 422 and refused["fields"][0]["field"] == "mode"
    status, refused = s.call("POST", "/v1/batches", {"jobs": [{"task": "x"}], "mode": "sometimes"})
    assert status == 422 and refused["fields"][0]["field"] == "mode"


def test_recipes_are_listed_and_deleted(s, shop):
    record(s, shop, "to-delete")
    status, listing = s.call("GET", "/v1/recipes")
    assert status == 200 and "to-delete" in [r["recipe"]["name"] for r in listing]
    assert s.call("DELETE", "/v1/recipes/to-delete")[0] == 204
    assert s.call("GET", "/v1/recipes/to-delete")[0] == 404
    assert s.call("DELETE", "/v1/recipes/to-delete")[0] == 404


def test_bad_inputs_are_refused_naming_the_field(s, shop):
    saved = record(s, shop, "checked")
    job_id = saved["recipe"]["source_job"]

    def refused(method: str, path: str, body: Any, field: str, status: int = 422) -> str:
        code, answer = s.call(method, path, body)
        assert code == status, (code, answer)
        if status == 422:
            assert field in [f["field"] for f in answer["fields"]], answer
        return answer["message"]

    assert "no recipe named" in refused("POST", "/v1/jobs", {"recipe": "nope"}, "recipe")
    assert "needs this parameter" in refused("POST", "/v1/jobs", {"recipe": "checked"}, "params.q")
    assert "no such parameter" in refused("POST", "/v1/jobs", {"recipe": "checked", "params": {"q": "a", "x": "b"}},
                                          "params.x")
    refused("POST", "/v1/jobs", {"recipe": "checked", "task": "both"}, "body")
    refused("POST", "/v1/jobs", {"task": "a task", "params": {"q": "a"}}, "body")
    refused("POST", "/v1/jobs", {"recipe": "bad name!"}, "recipe")
    refused("POST", "/v1/batches", {"jobs": [{"recipe": "checked", "params": {"q": "a"}}, {"recipe": "nope"}]},
            "jobs[1].recipe")
    refused("POST", f"/v1/jobs/{job_id}/recipe", {"name": "x", "params": {"q": "never typed"}}, "params.q")
    refused("POST", f"/v1/jobs/{job_id}/recipe", {"name": "bad name!"}, "name")
    refused("POST", f"/v1/jobs/{job_id}/recipe", {"name": "x", "extra": 1}, "extra")
    refused("POST", "/v1/jobs/0123456789abcdef0123456789abcdef/recipe", {"name": "x"}, "", status=404)
    script = run(s, {"script": [{"go_to_url": {"url": shop.url("/")}}]})
    assert "not an agent task" in refused("POST", f"/v1/jobs/{script['id']}/recipe", {"name": "x"}, "job")
    assert s.call("GET", "/v1/recipes/nope")[0] == 404


def cli(s: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], env=s.env, capture_output=True, text=True,
                          timeout=120)


def test_the_cli_saves_lists_shows_runs_and_deletes_recipes(s, model, shop):
    job = run(s, {"task": task("mug"), "start_url": shop.url("/"), "options": {"planning_interval": 100}})
    saved = cli(s, "recipe", "save", job["id"], "--name", "from-cli", "--param", "q=mug")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("from-cli  v1  steps=3  params=q")
    assert "from-cli" in cli(s, "recipe", "list").stdout
    shown = cli(s, "recipe", "show", "from-cli", "--json")
    assert json.loads(shown.stdout)["recipe"]["params"] == {"q": "mug"}
    calls = model.calls
    ran = cli(s, "submit", "--recipe", "from-cli", "--param", "q=tent", "--wait", "--json")
    assert ran.returncode == 0, ran.stderr
    assert model.calls == calls

    bad = cli(s, "recipe", "save", job["id"], "--name", "x", "--param", "no-equals-sign")
    assert bad.returncode != 0 and "is not NAME=VALUE" in bad.stderr
    missing = cli(s, "submit", "--recipe", "from-cli")
    assert missing.returncode == 1 and "params.q" in missing.stderr
    both = cli(s, "submit", "a task", "--recipe", "from-cli")
    assert both.returncode != 0 and "exactly one" in both.stderr
    assert cli(s, "recipe", "show", "nope").returncode == 1
    assert cli(s, "recipe", "delete", "from-cli").stdout.strip() == "deleted from-cli"
