"""Rich display in Jupyter: terms as DAGs, spaces as graphs, reports as tables.

Importing this module (``import relgraph`` does) gives terms, rewrite spaces,
derivations and reports their ``_repr_html_``/``_repr_svg_``: the core modules
never import the display.

Graphs are described with the ``graphviz`` package and rendered to SVG by
Graphviz's ``dot`` program when it is installed.  Without it (a pip-only
machine) every object still renders as HTML: a term as a nested tree in which a
shared subterm is drawn once and referred to after, a space as a table of its
cheapest terms.

Examples
--------
>>> import relgraph as rg
>>> x = rg.vector("x")
>>> "exp" in term_html(rg.exp(x) + rg.exp(x))
True
"""

from __future__ import annotations

import html
import shutil
from typing import Any

import graphviz

from relgraph.eqsat.bfs import Derivation, TermSpace
from relgraph.eqsat.egraph import LEAF
from relgraph.eqsat.explore import RewriteSpace
from relgraph.eqsat.views import MAX_ALTERNATIVES, MAX_VIEWS
from relgraph.frontend.jit import JitFunction, Specialization
from relgraph.frontend.tracing import flatten
from relgraph.rewriting.report import RewriteReport
from relgraph.rewriting.why import Why
from relgraph.terms.printing import brief, pprint
from relgraph.terms.term import Term
from relgraph.terms.traverse import subterms

__all__ = [
    "has_dot",
    "svg",
    "term_graph",
    "term_html",
    "space_graph",
    "space_html",
    "derivation_html",
    "report_html",
    "specialization_html",
    "jit_html",
]

BEST_COLOR = "#c6efce"
START_COLOR = "#dde8f6"
MAX_TREE_NODES = 200  # an HTML tree stops here and says so


def has_dot() -> bool:
    """Whether Graphviz's ``dot`` program is on the PATH."""
    return shutil.which("dot") is not None


def svg(graph: graphviz.Digraph) -> str | None:
    """``graph`` rendered as SVG text, or ``None`` without Graphviz's ``dot``."""
    if not has_dot():
        return None
    try:
        return graph.pipe(format="svg", encoding="utf-8")
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError):
        return None


# -- terms -------------------------------------------------------------------------


_SYMBOLS = {"dot": "@", "transpose": ".T"}


def _label(x: Any) -> str:
    if type(x) is Term:
        name = str(getattr(x.op, "name", ""))
        return getattr(x.op, "symbol", None) or _SYMBOLS.get(name) or name or repr(x.op)
    return pprint(x)


def term_graph(term: Any) -> graphviz.Digraph:
    """The DAG of ``term``: one node per distinct subterm and leaf, edges to arguments.

    Examples
    --------
    >>> import relgraph as rg
    >>> A, x = rg.matrix("A"), rg.vector("x")
    >>> src = term_graph(A @ x + A @ x * x).source
    >>> src.count("label=\\"@\\""), src.count("label=x")
    (1, 1)
    """
    graph = graphviz.Digraph(graph_attr={"rankdir": "TB"}, node_attr={"fontname": "monospace"})
    ids: dict[Any, str] = {}

    def node_id(x: Any) -> str:
        key = x if type(x) is Term else ("leaf", type(x).__name__, pprint(x))
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            shape = "ellipse" if type(x) is Term else "box"
            graph.node(ids[key], _label(x), shape=shape)
        return ids[key]

    for node in subterms(term):
        parent = node_id(node)
        args = node.args
        for i, arg in enumerate(args):
            graph.edge(parent, node_id(arg), label=str(i) if len(args) > 1 else None)
    if type(term) is not Term:
        node_id(term)
    return graph


def term_html(term: Any) -> str:
    """The infix text of ``term`` above its DAG (SVG) or, without ``dot``, a tree."""
    picture = svg(term_graph(term)) if type(term) is Term else None
    body = _inline(picture) if picture is not None else _tree_html(term)
    return f'<div class="relgraph-term"><code>{html.escape(pprint(term))}</code>{body}</div>'


def _tree_html(term: Any) -> str:
    """A nested list; a subterm met again is shown as a reference to its first drawing."""
    numbers: dict[Term, int] = {}
    out: list[str] = []
    drawn = 0
    stack: list[Any] = [term]
    while stack:
        item = stack.pop()
        if isinstance(item, str):  # closing tags
            out.append(item)
            continue
        drawn += 1
        if drawn > MAX_TREE_NODES:
            if drawn == MAX_TREE_NODES + 1:
                out.append("<li>&hellip;</li>")
            continue
        if type(item) is not Term:
            out.append(f"<li><code>{html.escape(pprint(item))}</code></li>")
        elif item in numbers:
            out.append(f"<li><i>shared #{numbers[item]}</i></li>")
        else:
            numbers[item] = len(numbers) + 1
            out.append(
                f"<li><b>{html.escape(_label(item))}</b> <small>#{numbers[item]}</small><ul>"
            )
            stack.append("</ul></li>")
            stack.extend(reversed(item.args))
    return f'<ul class="relgraph-tree">{"".join(out)}</ul>'


# -- spaces ------------------------------------------------------------------------


def _shown_terms(space: TermSpace, limit: int) -> list[Term]:
    """The best term and the cheapest others, each with its derivation from the start,
    while they fit in ``limit`` (the best one's always does)."""
    ranked = sorted(space.terms, key=lambda t: (space.cost(t), space.depth(t)))
    shown: dict[Term, None] = {}
    for term in [space.best(), *ranked]:
        path = [space.start, *(e.target for e in space.explain(term))]
        new = [t for t in path if t not in shown]
        if shown and len(shown) + len(new) > limit:
            continue
        shown.update(dict.fromkeys(new))
        if len(shown) >= limit:
            break
    return list(shown)


def space_graph(space: RewriteSpace | TermSpace, limit: int = 30) -> graphviz.Digraph:
    """A picture of ``space``: for an e-graph, (at most ``limit``) e-classes as boxes of
    their e-nodes, each e-node pointing at its operands' classes, the start's class
    blue and the best term's e-nodes green; for a breadth-first space, its terms and
    the steps between them.
    """
    if isinstance(space, RewriteSpace):
        return _egraph_graph(space, limit)
    shown = _shown_terms(space, limit)
    ids = {t: f"t{i}" for i, t in enumerate(shown)}
    best = space.best()
    graph = graphviz.Digraph(
        graph_attr={"rankdir": "LR"}, node_attr={"shape": "box", "fontname": "monospace"}
    )
    for term in shown:
        color = BEST_COLOR if term == best else START_COLOR if term == space.start else "white"
        label = f"{brief(term, 48)}\\ncost {space.cost(term):g}"
        graph.node(ids[term], label, style="filled", fillcolor=color)
    for edge in space.edges:
        if edge.source in ids and edge.target in ids:
            mark = "" if edge.direction == "forward" else " (bw)"
            graph.edge(ids[edge.source], ids[edge.target], label=edge.relation + mark)
    return graph


def _egraph_graph(space: RewriteSpace, limit: int) -> graphviz.Digraph:
    g, chosen = space.egraph, space.chosen()
    root = g.find(space.root)
    order, seen = [root], {root}
    for cid in order:  # breadth-first from the start's class
        for key in g.nodes(cid):
            for child in () if key[0] is LEAF else key[1]:
                child = g.find(child)
                if child not in seen and len(order) < limit:
                    seen.add(child)
                    order.append(child)
    graph = graphviz.Digraph(
        graph_attr={"rankdir": "TB", "compound": "true"},
        node_attr={"shape": "box", "fontname": "monospace"},
    )
    for cid in order:
        with graph.subgraph(name=f"cluster_{cid}") as box:
            box.attr(style="filled", fillcolor=START_COLOR if cid == root else "#f4f4f4",
                     label=f"e{cid}", fontname="monospace")  # fmt: skip
            for i, key in enumerate(g.nodes(cid)[:MAX_NODES_SHOWN]):
                label = brief(key[2], 24) if key[0] is LEAF else getattr(key[0], "name", "?")
                best = chosen.get(cid) == key
                box.node(f"n{cid}_{i}", label, style="filled",
                         fillcolor=BEST_COLOR if best else "white")  # fmt: skip
    for cid in order:
        for i, key in enumerate(g.nodes(cid)[:MAX_NODES_SHOWN]):
            for child in () if key[0] is LEAF else key[1]:
                child = g.find(child)
                if child in seen:
                    graph.edge(f"n{cid}_{i}", f"n{child}_0", lhead=f"cluster_{child}")
    return graph


MAX_NODES_SHOWN = 8  # e-nodes drawn per e-class


def space_html(space: RewriteSpace | TermSpace, limit: int = 30) -> str:
    """Summary, best term, derivation, and the graph (or a table of the cheapest terms)."""
    if isinstance(space, RewriteSpace):
        return _egraph_html(space, limit)
    best = space.best()
    status = "complete" if space.complete else f"cut off by {space.stopped_by}"
    head = (
        f"<p><b>RewriteSpace</b>: {len(space)} terms, {len(space.edges)} steps, {status}, "
        f"{space.elapsed:.2f} s</p>"
        f"<p>best (cost {space.cost(best):g}, was {space.cost(space.start):g}): "
        f"<code>{html.escape(pprint(best))}</code></p>"
    )
    return head + _derivation_and_picture(space, limit, _cheapest_table)


def _cheapest_table(space: TermSpace, limit: int) -> str:
    rows = "".join(
        f"<tr><td>{space.cost(t):g}</td><td>{space.depth(t)}</td>"
        f"<td><code>{html.escape(brief(t, 120))}</code></td></tr>"
        for t in _shown_terms(space, min(limit, 10))
    )
    return _table(["cost", "depth", "term"], rows)


def _derivation_and_picture(space: Any, limit: int, table: Any) -> str:
    """The best term's derivation, then the space's graph (``table`` without dot)."""
    picture = svg(space_graph(space, limit))
    picture = _inline(picture) if picture is not None else table(space, limit)
    return derivation_html(space.explain()) + picture


def _egraph_html(space: RewriteSpace, limit: int) -> str:
    best = space.best()
    status = "saturated" if space.saturated else f"stopped by {space.stopped_by}"
    head = (
        f"<p><b>RewriteSpace</b>: {len(space)} e-nodes in {space.classes} e-classes, "
        f"{status}, {space.elapsed:.2f} s</p>"
        f"<p>best (cost {space.cost(best):g}, was {space.cost(space.start):g}): "
        f"<code>{html.escape(pprint(best))}</code></p>"
    )
    if space.views_cut:
        head += (
            f"<p>{space.views_cut} e-nodes had views the relations were not shown (at most "
            f"{MAX_VIEWS} views of an e-node, {MAX_ALTERNATIVES} e-nodes of an operand "
            "class)</p>"
        )
    if len(space) > PICTURE_MAX_NODES:  # a picture would be unreadable: the summary
        return (
            head
            + derivation_html(space.explain())
            + _classes_table(space, limit)
            + (_applied_table(space, limit))
        )
    return head + _derivation_and_picture(space, limit, _applied_table)


PICTURE_MAX_NODES = 60  # e-nodes up to which a space is drawn; above, tables


def _classes_table(space: RewriteSpace, limit: int) -> str:
    """The e-classes the best term uses, from its root: the e-node it takes in each, how
    many the class holds, and a few of the others."""
    g, chosen = space.egraph, space.chosen()
    order, seen = [g.find(space.root)], {g.find(space.root)}
    for cid in order:
        key = chosen.get(cid)
        for child in () if key is None or key[0] is LEAF else key[1]:
            child = g.find(child)
            if child not in seen and len(order) < limit:
                seen.add(child)
                order.append(child)
    rows = []
    for cid in order:
        nodes, best = g.nodes(cid), chosen.get(cid)
        others = [_enode(g, k) for k in nodes if k != best][:3]
        more = f" (+{len(nodes) - 1 - len(others)} more)" if len(nodes) - 1 > len(others) else ""
        alternatives = html.escape(", ".join(others))
        rows.append(
            f"<tr><td>e{cid}</td><td><code>{html.escape(_enode(g, best))}</code></td>"
            f"<td>{len(nodes)}</td><td><code>{alternatives}</code>{more}</td></tr>"
        )
    return _table(["class", "best e-node", "e-nodes", "others"], "".join(rows))


def _enode(g: Any, key: Any) -> str:
    """An e-node as its Op over its operand classes (``add(e3, e7)``), or its leaf."""
    if key is None:
        return "?"
    if key[0] is LEAF:
        return brief(key[2], 24)
    return f"{getattr(key[0], 'name', '?')}({', '.join(f'e{g.find(c)}' for c in key[1])})"


def _applied_table(space: RewriteSpace, limit: int) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{direction}</td><td>{n}</td></tr>"
        for (name, direction), n in space.applied.most_common(12)
    )
    return _table(["relation", "direction", "e-nodes added"], rows)


def derivation_html(derivation: Derivation) -> str:
    """A table of the steps, each with its relation, direction and position."""
    rows = "".join(
        f"<tr><td>{i}</td><td>{html.escape(s.relation)}</td><td>{s.direction}</td>"
        f"<td>{list(s.position)}{'' if s.window is None else f' args {s.window[0]}:{s.window[1]}'}"
        f"</td><td><code>{html.escape(brief(s.before, 80))}</code></td>"
        f"<td><code>{html.escape(brief(s.after, 80))}</code></td></tr>"
        for i, s in enumerate(derivation, 1)
    )
    return _table(["step", "relation", "direction", "position", "before", "after"], rows)


# -- reports -----------------------------------------------------------------------


def report_html(report: RewriteReport) -> str:
    """A rewrite report as tables: the run, its passes, its relations, its children."""
    parts = [
        f"<p><b>{html.escape(report.name)}</b>: {report.time:.4f} s, {report.passes} pass(es), "
        f"nodes {report.nodes_before} &rarr; {report.nodes_after}</p>"
    ]
    if report.rules:
        rows = "".join(
            f"<tr><td>{html.escape(r.name)}</td><td>{r.time:.4f}</td><td>{r.attempts}</td>"
            f"<td>{r.applications}</td><td>{r.nodes_created}</td></tr>"
            for r in report.rules
        )
        parts.append(_table(["relation", "time (s)", "tried", "applied", "created"], rows))
    if report.trace:
        rows = "".join(
            f"<tr><td>{a.pass_number}</td><td>{html.escape(a.relation)}</td>"
            f"<td>{'run' if a.position is None else list(a.position)}</td>"
            f"<td><code>{html.escape(brief(a.before, 80))}</code></td>"
            f"<td><code>{html.escape(brief(a.after, 80))}</code></td></tr>"
            for a in report.trace
        )
        parts.append(_table(["pass", "relation", "position", "before", "after"], rows))
    parts += [f"<div style='margin-left:2em'>{report_html(c)}</div>" for c in report.children]
    return "".join(parts)


def why_html(result: Why) -> str:
    """``rg.why``'s answer as a table: position, subterm, outcome, what failed."""
    rows = "".join(
        f"<tr><td>{list(a.position)}</td><td><code>{html.escape(brief(a.term, 80))}</code></td>"
        f"<td>{a.outcome}</td><td>{html.escape(str(a) if a.outcome == 'rewrote' else a.reason)}"
        "</td></tr>"
        for a in result.attempts
    )
    head = f"<p><b>{html.escape(result.relation)}</b> on <code>"
    head += f"{html.escape(brief(result.term, 120))}</code></p>"
    note = f"<p>{html.escape(result.note)}</p>" if result.note else ""
    return head + _table(["position", "subterm", "outcome", "why"], rows) + note


# -- jitted functions ----------------------------------------------------------------


def specialization_html(spec: Specialization) -> str:
    """One signature of a jitted function: its program traced and rewritten, the cost
    of each, where the time went, and the rewrite report."""
    names = _inputs_text(spec)
    times = ", ".join(f"{k} {v:.3f} s" for k, v in spec.seconds.items())
    source = " (rewrite read from the disk cache)" if spec.from_disk else ""
    parts = [
        f"<p><b>({html.escape(names)})</b>: cost {spec.cost_before:g} &rarr; "
        f"{spec.cost_after:g}; {times}{source}</p>",
        "<p>traced</p>",
        *map(term_html, flatten(spec.traced)),
        "<p>rewritten</p>",
        *map(term_html, flatten(spec.rewritten)),
    ]
    if spec.report is not None:
        parts.append(report_html(spec.report))
    return "".join(parts)


def jit_html(fn: JitFunction) -> str:
    """A jitted function: a table of its signatures, then the latest one in full."""
    name = html.escape(getattr(fn, "__qualname__", "function"))
    if not fn.specializations:
        return f"<p><b>rg.jit {name}</b>: not called yet</p>"
    rows = "".join(
        f"<tr><td>{html.escape(_inputs_text(sp))}</td>"
        f"<td>{sp.cost_before:g} &rarr; {sp.cost_after:g}</td>"
        f"<td><code>{html.escape(_brief(sp.rewritten))}</code></td>"
        f"<td>{_tier(sp)}</td></tr>"
        for sp in fn.specializations.values()
    )
    head = f"<p><b>rg.jit {name}</b>: {len(fn.specializations)} signature(s)</p>"
    table = _table(["inputs", "cost", "rewritten", "runs"], rows)
    return head + table + (specialization_html(fn.last) if fn.last is not None else "")


def _tier(spec: Specialization) -> str:
    """Which tier the signature's calls run now."""
    f = spec.function
    if f.ready:
        return "compiled kernel"
    if f.compile == "never":
        return "numpy (compile='never')"
    return "numpy (kernel did not compile)" if f.failed else "numpy (kernel compiling)"


def _inputs_text(spec: Specialization) -> str:
    return ", ".join(f"{s.name}: {s.type.dtype} {s.type.ndim}-d" for s in spec.inputs)


def _brief(program: Any) -> str:
    return ", ".join(brief(p, 80) for p in flatten(program))


def _inline(svg_text: str) -> str:
    """SVG for inside an HTML page: without the XML declaration and doctype."""
    return svg_text[svg_text.find("<svg") :]


def _table(columns: list[str], rows: str) -> str:
    header = "".join(f"<th>{c}</th>" for c in columns)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"


def _register() -> None:
    """Jupyter's display hooks, set on the classes from here."""
    hooks: list[tuple[type, str, Any]] = [
        (Term, "_repr_html_", term_html),
        (Term, "_repr_svg_", lambda self: svg(term_graph(self))),
        (RewriteSpace, "_repr_html_", space_html),
        (RewriteSpace, "_repr_svg_", lambda self: svg(space_graph(self))),
        (TermSpace, "_repr_html_", space_html),
        (TermSpace, "_repr_svg_", lambda self: svg(space_graph(self))),
        (Derivation, "_repr_html_", derivation_html),
        (RewriteReport, "_repr_html_", report_html),
        (Specialization, "_repr_html_", specialization_html),
        (JitFunction, "_repr_html_", jit_html),
        (Why, "_repr_html_", why_html),
    ]
    for cls, name, hook in hooks:
        setattr(cls, name, hook)


_register()
