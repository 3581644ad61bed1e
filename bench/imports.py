"""The import graph of browserd's packages: prints it, and fails on a circle or a wrong-way arrow.

    python -m bench.imports        # the graph between layers, then one JSON line; exit 1 on a problem

Every ``import`` counts, at module level and inside functions alike (only ``if TYPE_CHECKING:``
blocks are left out), because a function-level import that closes a circle still is one. The
layers and the arrows allowed between them are the ones docs/architecture.md describes:

    daemon (API, client, CLI) -> workers.jobs (kernel) <- workers (tasks, runtime) -> workers.agent -> dom -> cdp
    daemon.api -> daemon.console (the web console) -> workers.jobs
    daemon.api -> daemon.mcp (MCP server) -> daemon.client (the Python client)
    everything -> config
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cdp", "dom", "workers", "daemon", "config")
# A layer is the longest of these prefixes a module starts with.
LAYERS = ("config", "cdp", "dom", "workers.jobs", "workers.agent", "workers", "daemon.api", "daemon.console",
          "daemon.mcp", "daemon.client", "daemon.cli", "daemon.demo", "daemon")
ALLOWED = {
    "config": set(),
    "cdp": {"config"},
    "dom": {"cdp", "config"},
    "workers.jobs": {"config"},
    "workers.agent": {"workers.jobs", "dom", "cdp", "config"},
    "workers": {"workers.jobs", "workers.agent", "dom", "cdp", "config"},
    "daemon.api": {"daemon.console", "daemon.mcp", "workers.jobs", "config"},
    "daemon.console": {"workers.jobs", "config"},
    "daemon.mcp": {"daemon.client", "workers.jobs", "config"},
    "daemon.client": {"workers.jobs", "config"},
    "daemon.cli": {"daemon.api", "daemon.client", "daemon.mcp", "daemon.demo", "workers", "workers.jobs",
                   "workers.agent", "dom", "cdp", "config"},
    "daemon.demo": {"daemon.cli", "daemon.client", "workers.jobs", "cdp", "config"},
    "daemon": {"daemon.cli"},
}
HEAVY = ("langchain_core", "langchain_openai", "openai")  # what the API must never load


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)
    heavy: set[str] = field(default_factory=set)  # modules importing the LLM stack themselves


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING"):
            skip.update(id(n) for sub in node.body for n in ast.walk(sub))
    return skip


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def build(root: Path = ROOT) -> Graph:
    graph = Graph(_modules(root))
    for name, path in graph.modules.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for candidate in _imported(node, name, path.name == "__init__.py"):
                if candidate.split(".")[0] in HEAVY:
                    graph.heavy.add(name)
                while candidate and candidate not in graph.modules:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    targets.add(candidate)
        graph.edges[name] = targets
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph.edges:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer(module: str) -> str:
    return max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)


def layer_arrows(graph: Graph) -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {}
    for source, targets in graph.edges.items():
        for target in targets:
            if layer(source) != layer(target):
                arrows.setdefault(layer(source), set()).add(layer(target))
    return arrows


def wrong_way(graph: Graph) -> list[str]:
    """Imports against the layering, as ``module -> module``."""
    return sorted(f"{s} -> {t}" for s, targets in graph.edges.items() for t in targets
                  if layer(s) != layer(t) and layer(t) not in ALLOWED[layer(s)])


def reached_from(graph: Graph, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.edges.get(module, ()))
    return seen


def main() -> int:
    graph = build()
    found, wrong = circles(graph), wrong_way(graph)
    api_heavy = sorted(reached_from(graph, "daemon.api.app") & graph.heavy)
    for source, targets in sorted(layer_arrows(graph).items()):
        print(f"{source} -> {', '.join(sorted(targets))}")
    for component in found:
        print("circle:", ", ".join(component))
    for arrow in wrong:
        print("wrong way:", arrow)
    print(json.dumps({"modules": len(graph.modules), "circles": len(found), "wrong_way": len(wrong),
                      "api_reaches_llm": api_heavy}))
    return 1 if found or wrong or api_heavy else 0


if __name__ == "__main__":
    sys.exit(main())
