"""Jupyter display: terms, spaces, derivations and reports render, with or without dot."""

import pytest

import relgraph as rg
from relations import optdb
from relations.linalg import dot_distributeo
from relgraph.ui import display

A = rg.matrix("A")
x, y = rg.vector("x"), rg.vector("y")
SHARED = rg.exp(A @ x) + rg.exp(A @ x) * y
needs_dot = pytest.mark.skipif(not display.has_dot(), reason="Graphviz's dot is not installed")


@pytest.fixture
def no_dot(monkeypatch):
    monkeypatch.setattr(display, "has_dot", lambda: False)


def test_term_graph_is_a_dag():
    src = display.term_graph(SHARED).source
    # one node per distinct subterm and leaf: +, *, exp, @, A, x, y
    assert src.count("shape=") == 7
    assert src.count("label=exp") == 1 and src.count('label="@"') == 1
    assert src.count("->") == 7  # edges: +:2, *:2, exp:1, @:2


def test_term_html_without_dot_is_a_tree_with_shared_references(no_dot):
    assert SHARED._repr_svg_() is None
    out = SHARED._repr_html_()
    assert "<svg" not in out and "(exp(A @ x) + (exp(A @ x) * y))" in out
    assert out.count("<b>exp</b>") == 1 and "shared #2" in out


def test_term_html_is_cut_on_huge_terms(no_dot):
    big = rg.add(*(rg.exp(rg.vector(f"v{i}")) for i in range(300)))
    assert display._tree_html(big).count("<li>") <= display.MAX_TREE_NODES + 1
    assert "&hellip;" in display._tree_html(big)


@needs_dot
def test_term_svg_with_dot():
    out = SHARED._repr_svg_()
    assert out.lstrip().startswith("<?xml") and "<svg" in out and ">exp<" in out
    assert "<svg" in SHARED._repr_html_() and "<?xml" not in SHARED._repr_html_()


def test_space_html(no_dot):
    space = rg.explore(A @ x + A @ y, optdb.query(include=["linalg", "canonicalize"]),
                       max_iterations=1, timeout=None, schedule="saturate")  # fmt: skip
    out = space._repr_html_()
    assert "e-nodes in" in out and "stopped by max_iterations" in out
    assert "best (cost 11, was 21)" in out and "<code>(A @ (x + y))</code>" in out
    assert "<td>dot_distributeo</td><td>backward</td>" in out
    assert "e-nodes added" in out and space._repr_svg_() is None
    bfs = rg.explore(A @ x + A @ y, [dot_distributeo], method="bfs")._repr_html_()
    assert "2 terms" in bfs and "complete" in bfs


def test_space_graph_shows_the_classes_and_the_best_term():
    space = rg.explore(A @ x + A @ y, [dot_distributeo])
    src = display.space_graph(space).source
    assert display.BEST_COLOR in src and display.START_COLOR in src
    assert src.count("subgraph cluster_") == space.classes and "lhead=cluster_" in src
    bfs = display.space_graph(rg.explore(A @ x + A @ y, [dot_distributeo], method="bfs"))
    assert "dot_distributeo (bw)" in bfs.source and "cost 11" in bfs.source


def test_a_large_space_is_summarised_not_drawn():
    z, w = rg.vector("z"), rg.vector("w")
    space = rg.explore(A @ x + A @ y + A @ z + A @ w,
                       optdb.query(include=["linalg", "canonicalize"]), timeout=None)  # fmt: skip
    assert len(space) > display.PICTURE_MAX_NODES
    out = space._repr_html_()
    assert "<svg" not in out and "best e-node" in out and "e-nodes added" in out
    root = space.egraph.find(space.root)
    assert f"<tr><td>e{root}</td><td><code>dot(" in out  # the best term's root: A @ (...)


@needs_dot
def test_space_svg_with_dot():
    space = rg.explore(A @ x + A @ y, [dot_distributeo])
    assert "<svg" in space._repr_svg_() and "<svg" in space._repr_html_()


def test_report_html():
    _, report = rg.rewrite(A @ (x + y), optdb.query(include=["linalg"]), report=True)
    out = report._repr_html_()
    assert "<b>optdb</b>" in out and "<b>linalg</b>" in out
    assert "<td>dot_distributeo</td>" in out and "<th>applied</th>" in out


def test_derivation_html():
    d = rg.explore(A @ x + A @ y, [dot_distributeo]).explain()
    out = d._repr_html_()
    assert "<td>1</td><td>dot_distributeo</td><td>backward</td><td>[]</td>" in out


def test_the_core_never_imports_the_display():
    # The display registers its hooks on the core's classes; the core stays below it.
    import ast
    import pathlib

    package = pathlib.Path(rg.__file__).parent
    for path in package.glob("*.py"):
        if path.name in ("__init__.py", "display.py", "cli.py", "stepper.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [a.name for a in node.names]
            module = getattr(node, "module", "") or ""
            assert "relgraph.ui.display" not in [module, *names], path.name
            assert not (module == "relgraph" and "display" in names), path.name
