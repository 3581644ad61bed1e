"""Which Lua scripts could run on Redis Cluster (issue 26), kept true: the table in docs/operations.md
(section "Redis Cluster") names every script, and a script it lists as one hash slot declares the one
key it touches (``KEYS[1]``), builds none from its arguments, and so needs no more than one slot.

A script that touches keys in several slots is listed with the reason; the docs say why browserd's job
transitions are among them (they move a job and the fleet-wide indexes in one atomic step)."""

from __future__ import annotations

import re
from pathlib import Path

from redis.crc import key_slot

from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import PRELUDE, _composed

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
        assert all(re.fullmatch(r"KEYS\[\d+\]", arg.strip()) for _, arg in touched), (name, touched)
        assert len(set(re.findall(r"KEYS\[(\d+)\]", text))) == 1, name
        assert ".." not in "".join(arg for _, arg in touched), name


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
