"""Which Lua scripts could run on Redis Cluster (issue 26), kept true: the table in docs/operations.md
(section "Redis Cluster") names every script, and a script it lists as one hash slot declares the one
key it touches (``KEYS[1]``), builds none from its arguments, and runs, with the keys its store passes,
on a redis-server in cluster mode, held to one slot by a shebang (``#!lua``), as Cluster would need.

A script that touches keys in several slots is listed with the reason; the docs say why browserd's job
transitions are among them (they move a job and the fleet-wide indexes in one atomic step)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS as SLOTS
from redis.crc import key_slot
from redis.exceptions import ResponseError

from config.redis_client import connect
from tests.support.redis_server import RedisServer, free_port
from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import PRELUDE, _composed, source

LUA = Path(__file__).resolve().parents[2] / "workers" / "jobs" / "store" / "lua"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
CALL = re.compile(r"redis\.call\('(\w+)'(?:,\s*([^,)]+))?")
KEYLESS = {"TIME"}


def scripts() -> set[str]:
    names = {p.stem for p in LUA.glob("*.lua")}
    preludes = {m for p in LUA.glob("*.lua") for m in PRELUDE.findall(p.read_text())}
    return names - preludes


def table() -> dict[str, str]:
    """script -> the "one hash slot" column of the docs' Redis Cluster table."""
    text = DOCS.read_text()
    section = text[text.index("### Redis Cluster"):]
    section = section[:section.index("\n## ")] if "\n## " in section else section
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and "`" in cells[0]:
            for name in re.findall(r"`(\w+)`", cells[0]):
                assert name not in rows, f"{name} is listed twice"
                rows[name] = cells[2]
    return rows


def test_the_docs_list_every_lua_script_once() -> None:
    assert set(table()) == scripts()


def test_a_script_listed_as_one_slot_declares_the_one_key_it_touches() -> None:
    one_slot = [name for name, verdict in table().items() if verdict == "yes"]
    assert one_slot, "no script is listed as Cluster-ready"
    for name in one_slot:
        text = _composed(name)
        touched = [(cmd, arg) for cmd, arg in CALL.findall(text) if cmd.upper() not in KEYLESS]
        assert touched, name
        passed = _key_parameters(text)  # a prelude's helper given KEYS[n] (backoff_level(key, ...))
        assert all(re.fullmatch(r"KEYS\[\d+\]", arg.strip()) or arg.strip() in passed for _, arg in touched), (
            name, touched)
        assert len(set(re.findall(r"KEYS\[(\d+)\]", text))) == 1, name
        assert ".." not in "".join(arg for _, arg in touched), name


def _key_parameters(text: str) -> set[str]:
    """The first parameters of the script's local functions that every call passes a declared key."""
    names = set()
    for function, parameter in re.findall(r"local function (\w+)\((\w+)", text):
        calls = re.findall(rf"(?<!function ){function}\(([^,)]+)", text)
        if calls and all(re.fullmatch(r"KEYS\[\d+\]", arg.strip()) for arg in calls):
            names.add(parameter)
    return names


def test_a_script_listed_as_several_slots_does_touch_keys_in_several() -> None:
    """The "no" rows are true today: the keys of one job's transition are in different slots."""
    keys = Keys()
    job = "0f1e2d3c"
    transition = [keys.job(job), keys.events(job), keys.all_jobs, keys.state_index("running")]
    assert len({key_slot(k.encode()) for k in transition}) > 1
    sessions = [keys.sessions, keys.session("s1")]
    assert len({key_slot(k.encode()) for k in sessions}) > 1
    verdicts = table()
    assert all(verdicts[name].startswith("no") for name in ("job_start", "job_finish", "session_open"))


@pytest.fixture(scope="module")
def cluster_node() -> Iterator[RedisServer]:
    """A redis-server in cluster mode serving every slot: a script touching keys in two slots fails there."""
    # its own free bus port: the default (port + 10000) may be taken, or past 65535
    server = RedisServer(args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                               "--cluster-port", str(free_port()))).start()
    client = redis.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
    try:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", str(SLOTS - 1))
        deadline = time.monotonic() + 30
        while client.cluster("info")["cluster_state"] != "ok":
            assert time.monotonic() < deadline, "the one-node cluster did not come up"
            time.sleep(0.05)
        yield server
    finally:
        client.close()
        server.stop()


def strict(name: str) -> str:
    """The script as a Cluster deployment would run it: with a shebang, so that Redis holds it to the keys'
    one slot (a script without one is let touch any slot, for compatibility)."""
    return "#!lua\n" + source(name)


async def test_the_one_slot_scripts_run_on_a_cluster_node_as_their_stores_call_them(cluster_node: RedisServer) -> None:
    client = connect(f"redis://127.0.0.1:{cluster_node.port}/0")
    try:
        with pytest.raises(ResponseError, match="same slot"):  # the node does check: two slots in one script
            await client.eval("#!lua\nredis.call('GET', 'a') return redis.call('GET', 'b')", 0)
        keys, lease = Keys(), "30"
        take, renew = client.register_script(strict("politeness_slot_take")), client.register_script(
            strict("politeness_slot_renew"))
        backoff, put = client.register_script(strict("politeness_backoff")), client.register_script(
            strict("profile_put"))
        reserve = client.register_script(strict("politeness_navigation_reserve"))
        # with the keys and arguments DomainLimits.try_slot, .renew, .back_off and ProfileStore.put pass
        assert await take(keys=[keys.domain_slots("shop.example")], args=["job-1", 2, lease]) == 1
        assert await renew(keys=[keys.domain_slots("shop.example")], args=[lease, "job-1"]) == 1
        level, _ = await backoff(keys=[keys.domain_backoff("shop.example")], args=[-1, 1, 300, 60])
        assert int(level) == 1
        assert int(await put(keys=[keys.profiles], args=["p", json.dumps({"sealed": "x"}), ""])) == 1
        with pytest.raises(ResponseError, match="same slot"):  # listed "no": a domain's two keys, two slots
            await reserve(keys=[keys.domain_last_navigation("shop.example"), keys.domain_backoff("shop.example")],
                          args=[0.5, 1, 300, 60])
        with pytest.raises(ResponseError, match="same slot"):  # renewing two sites' slots: two slots
            await renew(keys=[keys.domain_slots("a.example"), keys.domain_slots("b.example")], args=[lease, "j", "j"])
    finally:
        await client.aclose()
