"""Imports run one way: no circles, no wrong-way arrows, and an API that never loads the agent."""

from __future__ import annotations

import json
import subprocess
import sys

from bench import imports
from tests.queue.stack import ROOT


def test_the_import_graph_has_no_circles_and_no_wrong_way_arrows() -> None:
    graph = imports.build()
    assert imports.circles(graph) == []
    assert imports.wrong_way(graph) == []
    assert imports.layer_arrows(graph)["workers.jobs"] == {"config"}, "the job kernel imports only config"
    assert "daemon.api" not in {imports.layer(t) for s, ts in graph.edges.items() for t in ts
                                if imports.layer(s).startswith("workers")}


def test_a_function_level_import_that_closes_a_circle_is_caught(tmp_path) -> None:
    for package, body in (("cdp", "def f():\n    import dom\n"), ("dom", "import cdp\n")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(body)
    assert imports.circles(imports.build(tmp_path)) == [["cdp", "dom"]]


def test_serving_the_api_loads_no_agent_langchain_or_browser_code() -> None:
    probe = (
        "import sys, json\n"
        "from config import Settings\n"
        "from daemon.api import create_app\n"
        "create_app(Settings(redis_url='redis://127.0.0.1:9/0'))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain_openai', 'openai', 'cdp', 'dom', 'websockets') "
        "or m.startswith(('workers.agent', 'workers.tasks', 'workers.runtime')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_bench_imports_prints_the_graph_and_passes() -> None:
    out = subprocess.run([sys.executable, "-m", "bench.imports"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["circles"] == 0 and summary["wrong_way"] == 0 and summary["api_reaches_llm"] == []
    assert "workers.jobs -> config" in out.stdout
