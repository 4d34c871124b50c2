"""The architecture, enforced: each layer imports only the layers below it, no import
closes a circle (imports inside functions counted), and a function-local import is
only ever an optional dependency, marked ``# lazy:`` with the reason.

The layers are drawn on the docs' contributor page; this test is their definition.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BOTTOM = {"relgraph.exceptions", "relgraph.cache_files", "relgraph.unionfind"}
# Each layer and what it may import (besides itself, acyclically).
BELOW: dict[str, set[str]] = {
    "relgraph.exceptions": set(),
    "relgraph.cache_files": {"relgraph.exceptions"},
    "relgraph.unionfind": set(),
    "relgraph.terms": BOTTOM,
    "relgraph.ops": BOTTOM | {"relgraph.terms"},
    "relgraph.logic": BOTTOM | {"relgraph.terms"},
    "relgraph.rewriting": BOTTOM | {"relgraph.terms", "relgraph.ops", "relgraph.logic"},
    "relgraph.eqsat": BOTTOM
    | {"relgraph.terms", "relgraph.ops", "relgraph.logic", "relgraph.rewriting"},
    # A backend sees programs only: terms and the Ops.
    "relgraph.backends.numba": BOTTOM | {"relgraph.terms", "relgraph.ops"},
    "relgraph.backends.dask": BOTTOM
    | {"relgraph.terms", "relgraph.ops", "relgraph.backends.numba"},
}
BELOW["relgraph.frontend"] = set().union(*BELOW.values(), BELOW) - {"relgraph.frontend"}
BELOW["relgraph.ui"] = BELOW["relgraph.frontend"] | {"relgraph.frontend"}
BELOW["relgraph"] = BELOW["relgraph.ui"] | {"relgraph.ui"}  # the package: re-exports only
BELOW["relations"] = BELOW["relgraph"] | {"relgraph"}
LAYERS = sorted(BELOW, key=len, reverse=True)  # the longest prefix names a module's layer


def _modules() -> dict[str, Path]:
    found = {}
    for package in ("relgraph", "relations"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> str:
    return next(layer for layer in LAYERS if module == layer or module.startswith(layer + "."))


def _targets(node: ast.Import | ast.ImportFrom, importer: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer if MODULES[importer].name == "__init__.py" else importer
        package = package.rsplit(".", node.level - (MODULES[importer].name == "__init__.py"))[0]
        base = f"{package}.{base}".rstrip(".")
    # ``from relgraph.ops import elemwise`` imports a module; ``from relgraph import x``
    # where x is a name imports the package.
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _imports() -> tuple[dict[str, set[str]], list[str]]:
    """Every module's imports of our own modules, and function-local imports not marked."""
    graph: dict[str, set[str]] = defaultdict(set)
    unmarked = []
    for name, path in MODULES.items():
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source)
        local = {
            id(node)
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            ours = [
                t for t in _targets(node, name) if t.split(".")[0] in ("relgraph", "relations")
            ]
            graph[name].update(t for t in ours if t != name)
            if id(node) in local and (ours or "# lazy:" not in lines[node.lineno - 1]):
                unmarked.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return graph, unmarked


GRAPH, UNMARKED = _imports()


def test_every_module_is_in_a_layer():
    assert {layer_of(m) for m in MODULES} <= set(BELOW)


def test_every_module_holds_one_concept_in_at_most_600_lines():
    long = {m: n for m, path in MODULES.items() if (n := len(path.read_text().splitlines())) > 600}
    assert not long, f"split these modules along their concepts: {long}"


def test_no_import_goes_up_or_across_a_layer():
    wrong = [
        f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)})"
        for m, targets in sorted(GRAPH.items())
        for t in sorted(targets)
        if layer_of(t) != layer_of(m) and layer_of(t) not in BELOW[layer_of(m)]
    ]
    assert not wrong, "\n".join(wrong)


def test_function_local_imports_are_optional_dependencies_marked_lazy():
    assert not UNMARKED, "\n".join(UNMARKED)


def _circle() -> list[str] | None:
    done: set[str] = set()
    for start in sorted(GRAPH):
        stack, path, on_path = [(start, iter(sorted(GRAPH[start])))], [start], {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(path.pop())
                done.add(node)
            elif child in on_path:
                return path[path.index(child) :] + [child]
            elif child not in done and child in MODULES:
                stack.append((child, iter(sorted(GRAPH[child]))))
                path.append(child)
                on_path.add(child)
    return None


def test_no_import_circle():
    circle = _circle()
    assert circle is None, " -> ".join(circle or [])


@pytest.mark.parametrize("package", ["relgraph"])
def test_the_package_only_re_exports(package):
    tree = ast.parse(MODULES[package].read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module.startswith("relgraph."):
            renamed = [a.name for a in node.names if a.asname not in (a.name, f"_{a.name}")]
            assert not renamed, f"{node.module}: {renamed} (write `name as name`)"


def test_the_checker_sees_a_circle_and_a_layer_broken(monkeypatch):
    monkeypatch.setitem(
        GRAPH, "relgraph.terms.term", GRAPH["relgraph.terms.term"] | {"relgraph.ops.base"}
    )
    monkeypatch.setitem(
        GRAPH, "relgraph.ops.base", GRAPH["relgraph.ops.base"] | {"relgraph.terms.term"}
    )
    assert _circle() is not None
    with pytest.raises(AssertionError, match="relgraph.terms.term .relgraph.terms. imports"):
        test_no_import_goes_up_or_across_a_layer()


def test_the_contributor_page_lists_every_module_in_its_layer():
    page = (ROOT / "docs" / "contributing.md").read_text()
    rows = {
        line.split("|")[1].strip(" `/"): line.split("|")[2]
        for line in page.splitlines()
        if line.startswith("| ") and line.count("|") >= 4
    }
    for module, path in MODULES.items():
        layer = layer_of(module)
        if path.name == "__init__.py" or layer == "relations":
            continue
        row = "bottom" if module in BOTTOM else layer.removeprefix("relgraph.").replace(".", "/")
        name = module.rsplit(".", 1)[-1]
        assert f"`{name}`" in rows.get(row, ""), f"{module} is not in the {row} row"
