"""Signatures in product code: at most 8 parameters, no unnamed tuples crossing modules, one class per name.

Read from the source (the AST), so nothing is imported or run: a function whose parameters grow
past 8 wants its arguments grouped into a type; a public function or method that takes or returns
a positional ``tuple[A, B]`` makes its callers remember what each position means, so it returns a
frozen dataclass with named fields instead (``tuple[X, ...]``, a sequence of one type, is fine).

    python -m tests.layout.test_signatures   # the longest parameter lists, the tuples found
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cdp", "dom", "workers", "daemon", "config")
MAX_PARAMETERS = 8

# Public signatures allowed a positional tuple, each for a reason:
TUPLES_ALLOWED = {
    # The public client's callers pass a tab size as (width, height), as they did before the
    # Viewport type existed (tests/frontends/test_sessions.py); it takes a Viewport too.
    "daemon/client.py::Client.open_session",
    "daemon/client.py::AsyncClient.open_session",
}

# Classes of one name in two places, each a different concept in its own layer:
NAMES_SHARED = {
    "Gate",  # cdp/egress.py: a context's egress gate; daemon/console/auth.py: the console's login gate
    "Services",  # workers/pipeline: what features build on; daemon/demo: the demo's child processes
}


@dataclass(frozen=True)
class Function:
    where: str  # path::qualified name
    line: int
    parameters: int
    public: bool
    tuples: tuple[str, ...]  # the positional tuple types its annotations use


def _positional_tuple(annotation: ast.expr) -> str | None:
    """The first ``tuple[A, B, ...]`` (more than one element type, not ``tuple[A, ...]``) inside ``annotation``."""
    for node in ast.walk(annotation):
        if not isinstance(node, ast.Subscript):
            continue
        base = node.value
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if name not in ("tuple", "Tuple"):
            continue
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        homogeneous = len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis
        if len(items) > 1 and not homogeneous:
            return ast.unparse(node)
    return None


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if node.returns is not None:
        yield node.returns


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len([n for n in names if n not in ("self", "cls")])


def functions(root: Path = ROOT) -> list[Function]:
    """Every function and method of product code, nested ones too."""
    found: list[Function] = []

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualified = prefix + child.name
                private = any(part.startswith("_") and not part.startswith("__") for part in qualified.split("."))
                tuples = tuple(t for t in map(_positional_tuple, _annotations(child)) if t)
                found.append(Function(f"{path}::{qualified}", child.lineno, _parameters(child), not private, tuples))
                visit(child, path, qualified + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, path, prefix + child.name + ".")
            else:
                visit(child, path, prefix)

    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            visit(ast.parse(file.read_text()), file.relative_to(root).as_posix(), "")
    return found


def classes(root: Path = ROOT) -> dict[str, list[str]]:
    """Top-level class names of product code and the modules defining each."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            for node in ast.parse(file.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    found[node.name].append(file.relative_to(root).as_posix())
    return found


def longest(found: list[Function], count: int = 10) -> list[Function]:
    return sorted(found, key=lambda f: (-f.parameters, f.where))[:count]


def test_no_function_takes_more_than_8_parameters() -> None:
    found = functions()
    print("\nlongest parameter lists:")
    for f in longest(found):
        print(f"  {f.parameters:2d}  {f.where}  (line {f.line})")
    assert [f"{f.where} ({f.parameters})" for f in found if f.parameters > MAX_PARAMETERS] == []


def test_no_public_signature_passes_a_positional_tuple() -> None:
    found = [f for f in functions() if f.public and f.tuples]
    assert [f"{f.where}: {', '.join(f.tuples)}" for f in found if f.where not in TUPLES_ALLOWED] == []
    assert sorted(TUPLES_ALLOWED - {f.where for f in found}) == [], "an allowed entry that no longer applies"


def test_each_class_name_is_defined_once() -> None:
    shared = {name: where for name, where in classes().items() if len(where) > 1}
    assert {name: where for name, where in shared.items() if name not in NAMES_SHARED} == {}
    assert sorted(NAMES_SHARED - set(shared)) == [], "an allowed name that is no longer shared"


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    package = tmp_path / "workers"
    package.mkdir()
    (package / "m.py").write_text(
        "def many(a, b, c, d, e, f, g, h, i): ...\n"
        "def pair() -> tuple[str, int]: ...\n"
        "def _private() -> tuple[str, int]: ...\n"
        "def seq(x: tuple[int, ...]) -> list[tuple[int, ...]]: ...\n"
        "class C:\n    def method(self, rows: list[tuple[bool, str]]) -> None: ...\n"
    )
    found = {f.where: f for f in functions(tmp_path)}
    assert found["workers/m.py::many"].parameters == 9
    assert [w for w, f in found.items() if f.public and f.tuples] == ["workers/m.py::pair", "workers/m.py::C.method"]


if __name__ == "__main__":
    everything = functions()
    print("longest parameter lists:")
    for f in longest(everything, 15):
        print(f"  {f.parameters:2d}  {f.where}  (line {f.line})")
    print("public signatures with a positional tuple:")
    for f in everything:
        if f.public and f.tuples:
            print(f"  {f.where}: {', '.join(f.tuples)}{'  (allowed)' if f.where in TUPLES_ALLOWED else ''}")
