"""Equality saturation: relations, as they are, run on the e-graph step by step of
a schedule.  A rule of fixed arity whose root is not a sum or product runs on class
ids (:mod:`relgraph.eqsat.compiled`); any other rule is e-matched
(:mod:`relgraph.eqsat.ematch`) unless a rest part of its left-hand side sits beside
other arguments; every other relation runs on views of e-classes
(:mod:`relgraph.eqsat.views`).  Each relation is tried only on
the e-nodes whose head it tracks (one index of the e-nodes by head per search phase).

Each ground answer, holes mapped back to their classes, is added to the graph and
merged with the class.  An answer that holds its own class (``x -> x + 0``) is
dropped unless identities are asked for (:mod:`relgraph.eqsat.identities`); then it
adds one e-node, which is not searched (what a relation would find there it finds on
the class's other e-nodes).

The loop is egg's: search every relation on the graph as it is, apply what was
found, rebuild.  A view is searched once per relation (its answers are in the
graph from then on).  A relation whose matches in one iteration exceed its limit,
or that is tried on more views than its limit, is banned for a few iterations, the
limits and the ban doubling each time (egg's backoff scheduler, with views tried as
a second limit): one prolific or slow relation cannot crowd out the others.  Both
limits count work, not seconds, so a space is the same on a fast or a busy machine;
only the whole run's ``timeout`` reads the clock.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from tqdm.auto import tqdm

from relgraph.eqsat.bfs import Direction
from relgraph.eqsat.compiled import IN_CLASS, ClassMatcher, CompiledRule, Shown, compiled_rule
from relgraph.eqsat.egraph import LEAF, EGraph, Key
from relgraph.eqsat.ematch import EMatcher, matchable
from relgraph.eqsat.identities import identity_law, wraps
from relgraph.eqsat.proofs import REORDERED, term_key
from relgraph.eqsat.views import (
    ALL,
    DEFAULT_DEPTH,
    MAX_WINDOW_ARITY,
    Interned,
    Views,
    pattern_guide,
)
from relgraph.logic.search import check_cancelled
from relgraph.rewriting.patterns import PApp
from relgraph.rewriting.promotion import keeps_values, regrouping
from relgraph.rewriting.relation import (
    REJECTED,
    Matcher,
    Rule,
    directions_of,
    keeps_type,
    produced_heads,
    reverse,
)
from relgraph.terms.printing import brief
from relgraph.terms.term import Term

__all__ = [
    "Merge", "DirectedRule", "Budgets", "saturate", "directed_rules", "Step", "DEFAULT_SCHEDULE",
    "EVERYTHING",
]  # fmt: skip


@dataclass(frozen=True, repr=False)
class Merge:
    """One answer of a relation, merged into the graph.

    ``shape`` is the view of the e-node the relation ran on (``window``: on a run
    of its arguments), ``answer`` what it answered, ``result`` the new e-node's
    term (the whole node, for a window); the keys name the two e-nodes, ``ids`` the
    proof ids of ``shape`` and ``result`` (:mod:`relgraph.eqsat.proofs`).  A compiled
    rule's terms are built when first read (``terms``: a function that builds them).
    """

    rule: Rule = field(repr=False)
    direction: Direction
    window: tuple[int, int] | None
    from_key: Key = field(repr=False)
    to_key: Key = field(repr=False)
    iteration: int
    ids: tuple[int, int] = field(repr=False)
    terms: Any = field(repr=False)  # (shape, answer, result), or a function of none

    @cached_property
    def _terms(self) -> tuple[Term, Any, Any]:
        return self.terms() if callable(self.terms) else self.terms

    @property
    def shape(self) -> Term:
        return self._terms[0]

    @property
    def answer(self) -> Any:
        return self._terms[1]

    @property
    def result(self) -> Any:
        return self._terms[2]

    def __repr__(self) -> str:
        return (
            f"Merge({self.rule.name!r}, {self.direction}, iteration {self.iteration}: "
            f"{brief(self.shape, 60)} -> {brief(self.result, 60)})"
        )


@dataclass
class Budgets:
    max_nodes: int = 10_000
    max_iterations: int = 30
    timeout: float | None = None
    match_limit: int = 1_000
    #: Views a hand-written relation is tried on in one round, at most (work, not
    #: seconds: the space does not depend on how fast the machine is).
    search_tries: int = 10_000
    ban_length: int = 5
    #: Whether an answer may wrap the term it was found on (``x`` -> ``x + 0``,
    #: ``-(-x)``, ``1 / (1 / x)``: an identity run backward).  Off, such answers
    #: are dropped and counted in ``wrapped``.
    identities: bool = False
    wrapped: int = 0
    #: E-nodes some of whose views a hand-written relation was not shown (at most
    #: MAX_VIEWS views of an e-node, MAX_ALTERNATIVES e-nodes of an operand class).
    views_cut: int = 0


class DirectedRule:
    """One relation in one direction, with its matcher, its guide and its backoff."""

    def __init__(self, rule: Rule, direction: Direction, max_answers: int):
        self.rule, self.direction = rule, direction
        if direction == "forward":
            run_as = rule
        else:  # a rule reversed knows its own head (its right-hand side's)
            backward = reverse(rule)
            heads = produced_heads(rule)
            tracks = getattr(backward, "tracks", None) if heads is None else heads
            run_as = Rule(backward, rule.name, tracks=tracks)
        self.matcher = Matcher(run_as, max_answers, label=direction)
        relation: Any = run_as.relation
        self.tracks = run_as.tracks
        # A rule knows whether its own left side takes any number of arguments.
        self.windows = getattr(relation, "windows", rule.windows)
        left = getattr(relation, "left", None)
        #: The left-hand side, where the e-graph matches it itself (see ematch), and
        #: the rule run on class ids, where it can be (see compiled).
        self.pattern = left if isinstance(left, PApp) and matchable(left) else None
        self.compiled = compiled_rule(relation)
        if isinstance(left, PApp):
            self.guide: Any = pattern_guide(left)
            self.depth = relation.depth
        else:
            self.guide = getattr(relation, "guide", ALL)
            self.depth = getattr(relation, "depth", DEFAULT_DEPTH)
        self.wraps_anything: bool | None = None  # probed when saturation starts
        self.seen: set[tuple[Any, tuple[int, int] | None]] = set()
        self.times_banned = 0
        self.banned_until = 0
        self.stale = True  # every class must be searched (first time, after a ban)
        self.applied = 0

    def __repr__(self) -> str:
        return f"DirectedRule({self.rule.name!r}, {self.direction})"

    def identity_law(self) -> bool:
        """Whether this runs an identity law (``x + 0 -> x``, ``--x -> x``) or an AC
        normal form backward: it would wrap, or reorder, every term of the graph.
        Probed once, by running the relation on bare symbols."""
        if self.wraps_anything is None:
            self.wraps_anything = self.direction == "backward" and identity_law(
                self.rule.relation, self.matcher
            )
        return self.wraps_anything


def directed_rules(
    rules: tuple[Rule, ...], directions: tuple[Direction, ...], max_answers: int
) -> list[DirectedRule]:
    """A runner per relation and direction it runs in."""
    return [
        DirectedRule(rule, d, max_answers)
        for rule in rules
        for d in directions
        if d in directions_of(rule)
    ]


# -- the loop ----------------------------------------------------------------------


@dataclass
class _Found:
    """A compiled rule's match: ``b`` binds its variables to classes."""

    runner: DirectedRule
    rule: CompiledRule
    cid: int
    key: Key
    shape: Shown
    b: tuple
    below: list[int]  # the classes of the answer below its root, as found
    types: list  # the types of the answer's e-nodes


@dataclass
class _Match:
    runner: DirectedRule
    cid: int
    key: Key
    shape: Term
    window: tuple[int, int] | None
    before: Term
    answers: tuple
    written: Term | None = None  # the e-node as held, where ``shape`` reorders it


class Stop(Exception):
    """A budget ran out: ``reason`` names it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


#: One step of a schedule: which runners ("forward" ones, or "both" directions) and
#: for how many rounds (None: until they change nothing).
Step = tuple[str, "int | None"]
#: Simplify first, then explore both ways for a few rounds, then simplify what that
#: found (egglog's ``(seq (saturate simplify) (run 3) (saturate simplify))``).
DEFAULT_SCHEDULE: tuple[Step, ...] = (("forward", None), ("both", 3), ("forward", None))
EVERYTHING: tuple[Step, ...] = (("both", None),)  # egg's loop: all relations, to saturation


def saturate(
    egraph: EGraph,
    runners: list[DirectedRule],
    budgets: Budgets,
    applications: list[Merge],
    progress: bool | None = None,
    schedule: tuple[Step, ...] = EVERYTHING,
) -> str | None:
    """Run ``runners`` on ``egraph`` step by step of ``schedule``: None when the graph
    is saturated (a round of every runner changed nothing), ``"schedule"`` when the
    schedule ended first, else the budget that ran out.

    Without ``budgets.identities``, the runners of identity laws and AC normal forms
    run backward are removed from ``runners`` first (the probe runs the relations,
    so it is bounded like the search)."""
    if not budgets.identities:
        runners[:] = [r for r in runners if not r.identity_law()]
    steps = iter(schedule)
    deadline = None if budgets.timeout is None else time.perf_counter() + budgets.timeout
    interned = Interned()
    try:
        with regrouping(r.matcher.rule for r in runners):
            return _rounds(egraph, runners, budgets, applications, progress, steps, deadline,
                           interned)  # fmt: skip
    finally:
        budgets.views_cut = len(interned.cut)


def _rounds(egraph, runners, budgets, applications, progress, steps, deadline, interned):
    """The loop of :func:`saturate`."""
    active, rounds = _step(next(steps), runners, [])
    delay = 1.0 if progress is None else 0.0
    with tqdm(
        total=budgets.max_iterations, unit="iter", desc="saturate", delay=delay,
        disable=progress is False,
    ) as bar:  # fmt: skip
        for iteration in range(1, budgets.max_iterations + 1):
            changed = egraph.changed(max((r.depth for r in active), default=1))
            try:
                matches = _search(egraph, active, iteration, budgets, deadline, changed, interned)
                before = egraph.version
                _apply(egraph, matches, iteration, budgets, applications)
            except Stop as stop:
                egraph.rebuild()
                return stop.reason
            egraph.rebuild()
            bar.update(1)
            bar.set_postfix(nodes=len(egraph.memo), classes=egraph.class_count, refresh=False)
            if egraph.version == before:
                banned = [r for r in active if r.banned_until > iteration]
                for r in banned:  # nothing else changes: give them their turn now
                    r.banned_until = iteration
                if banned:
                    continue
                if len(active) == len(runners):
                    return None  # every relation ran on the graph as it is: saturated
            elif rounds is None or rounds > 1:
                rounds = None if rounds is None else rounds - 1
                continue
            step = next(steps, None)
            if step is None:
                return "schedule"
            active, rounds = _step(step, runners, active)
        return "max_iterations"


def _step(
    step: Step, runners: list[DirectedRule], before: list[DirectedRule]
) -> tuple[list[DirectedRule], int | None]:
    """The runners a step runs, and its rounds.  A runner that was not in the step
    ``before`` searches every class once: it has not seen the graph as that step
    left it."""
    which, rounds = step
    active = [r for r in runners if which == "both" or r.direction == which]
    for r in active:
        if r not in before:
            r.stale = True
    return active, rounds


def _search(egraph, runners, iteration, budgets, deadline, changed, interned) -> list:
    """Every runner's matches on the classes whose views changed (all, for a runner
    that has not seen the graph as it is)."""
    views, ematcher = Views(egraph, interned), EMatcher(egraph, interned)
    matchers = (views, ematcher, ClassMatcher(egraph))
    found: list[_Match | _Found] = []
    everything = list(egraph.classes)
    indexes: dict[bool, _HeadIndex] = {}  # stale runners search every class
    for runner in runners:
        if runner.banned_until > iteration:
            runner.stale = True
            continue
        index = indexes.get(runner.stale)
        if index is None:
            classes = everything if runner.stale else [c for c in everything if c in changed]
            index = indexes[runner.stale] = _HeadIndex(egraph, classes)
        nodes = index.nodes(runner.tracks)
        runner.stale = False
        scale = 1 << runner.times_banned
        limits = (budgets.match_limit * scale, budgets.search_tries * scale)
        search = _search_one if runner.compiled is None else _search_compiled
        mine, over = search(runner, matchers, nodes, limits, deadline)
        if over:  # egg's backoff: banned for a while, the limits doubled after
            runner.banned_until = iteration + budgets.ban_length * scale
            runner.times_banned += 1
            if over == "matches":
                continue  # too many to apply: none are (egg's rule)
        found.extend(mine)
    return found


class _HeadIndex:
    """The e-nodes of some classes by head Op, in the order of the classes (an e-node
    holding its own class, ``x + 0`` in the class of ``x``, is left out: it is not
    searched)."""

    def __init__(self, egraph: EGraph, classes: Iterable[int]):
        self.by_op: dict[Any, list[tuple[int, int, Key]]] = {}
        seq = 0
        for cid in classes:
            for key in egraph.classes[cid].nodes:
                if key[0] is not LEAF and cid not in key[1]:
                    self.by_op.setdefault(key[0], []).append((seq, cid, key))
                    seq += 1
        self.everything: list[tuple[int, int, Key]] | None = None

    def nodes(self, tracks: frozenset | None) -> list[tuple[int, int, Key]]:
        """The e-nodes whose head is in ``tracks`` (every e-node for None)."""
        if tracks is None:
            if self.everything is None:
                self.everything = list(heapq.merge(*self.by_op.values()))
            return self.everything
        lists = [self.by_op[op] for op in tracks if op in self.by_op]
        return lists[0] if len(lists) == 1 else list(heapq.merge(*lists))


def _search_compiled(runner, matchers, nodes, limits, deadline) -> tuple[list, str | None]:
    """:func:`_search_one` for a compiled rule: matches on class ids."""
    mine: list[_Found] = []
    max_matches, m = limits[0], matchers[2]
    rule, seen = runner.compiled, runner.seen
    dropped = runner.matcher.dropped
    for n, (_, cid, key) in enumerate(nodes):
        _look_up(n, deadline)
        for b, shape in rule.matches(m, key):
            if shape in seen:
                continue
            if not rule.holds(m, b):
                seen.add(shape)
                continue
            reason, found = rule.check(m, b, cid, shape)
            if reason is None:
                below, types = found
                mine.append(_Found(runner, rule, cid, key, shape, b, below, types))
                if len(mine) > max_matches:
                    return mine, "matches"
                continue
            if reason is not IN_CLASS:
                dropped[reason] += 1
            seen.add(shape)
    return mine, None


def _search_one(runner, matchers, nodes, limits, deadline) -> tuple[list, str | None]:
    """What ``runner`` finds on ``nodes``, and whether it went over its limit of
    matches or of views tried."""
    views, ematcher, _ = matchers
    mine: list[_Match] = []
    count, tries, (max_matches, max_tries) = 0, 0, limits
    egraph = views.egraph
    known, find = egraph.known, egraph.find
    needs = runner.matcher.needs if runner.matcher.direct is None else None

    def in_class(answer: Any) -> bool:  # of the class being searched (the loop's cid)
        if type(answer) is not Term:
            return False
        found = known.get(answer)
        if found is None:  # not as a view or an answer seen before: in the graph?
            found = egraph.lookup(answer)
        return found is not None and find(found) == cid

    for n, (_, cid, key) in enumerate(nodes):
        _look_up(n, deadline)
        if needs is not None and not all(egraph.has_operand_in(key, h) for h in needs):
            continue  # no view of it shows what the relation needs
        for view, window, candidate, results, written in _candidates(
            runner, views, ematcher, cid, key
        ):
            seen_key = (term_key(candidate), window)
            if seen_key in runner.seen:
                continue
            tries += 1
            if tries > max_tries:
                return mine, "tries"
            if results is None:  # a goal on a view: its own test first
                results = runner.matcher.shortcut(candidate)
                if results is REJECTED:
                    runner.seen.add(seen_key)
                    continue
            found = runner.matcher.answers(candidate, in_class, results)
            answers = tuple(dict.fromkeys(found))
            if answers:
                mine.append(_Match(runner, cid, key, view, window, candidate, answers, written))
                count += len(answers)
                if count > max_matches:
                    return mine, "matches"
            else:
                runner.seen.add(seen_key)
    return mine, None


def _candidates(runner, views, ematcher, cid, key) -> Iterator[tuple]:
    """What ``runner`` is tried on at e-node ``key``: ``(view, window, candidate,
    results, written)``, ``results`` None (run the relation on the candidate) or the
    answers, lazily, of the bindings the e-graph's matcher found; ``written`` the
    e-node as the graph holds it where ``view`` has its operands in another order."""
    if runner.pattern is not None:
        relation = runner.matcher.rule.relation
        for view, window, candidate, bindings, written in ematcher.matches(
            runner.pattern, key, runner.windows
        ):
            if written is None:  # a reordered view is not in the graph yet
                views.interned.record(views.egraph.known, view, cid)
            yield view, window, candidate, relation.built(bindings), written
        return
    for view in views.of_root(cid, key, runner):
        for candidate, window in _places(view, runner, views.interned):
            yield view, window, candidate, None, None


def _places(view: Any, runner: DirectedRule, interned: Interned) -> Iterable[tuple[Any, Any]]:
    if type(view) is not Term or not runner.windows or len(view._tuple) > MAX_WINDOW_ARITY + 1:
        return ((view, None),)
    return interned.places(view)


def _reorder(egraph: EGraph, m: _Match) -> None:
    """Add the e-node ``m.shape`` (``m.written``'s operands in another order: an
    integer or bool sum or product) to ``m``'s class, proven by :func:`reordero`."""
    new, _, moved = egraph.insert(m.shape)
    if egraph.find(new) != egraph.find(m.cid):  # else one proof tree holds both already
        egraph.merge(m.cid, new, (egraph.view_id(m.written), moved, REORDERED))


#: E-nodes a relation is tried on between two looks at Ctrl-C.
CHECK_EVERY = 16


def _look_up(n: int, deadline: float | None) -> None:
    """At a relation's search's ``n``-th e-node: Ctrl-C (every ``CHECK_EVERY``), and
    Stop past the whole run's deadline."""
    if not n % CHECK_EVERY:
        check_cancelled()
    if deadline is not None and time.perf_counter() > deadline:
        raise Stop("timeout")


def _apply(egraph, matches, iteration, budgets, applications) -> None:
    for m in matches:
        if type(m) is _Match and m.written is not None:
            _reorder(egraph, m)
    # the proof ids of the views, taken before anything is merged (a compiled rule's
    # shape is read from e-node keys, which stay until the rebuild)
    sources = {i: egraph.view_id(m.shape) for i, m in enumerate(matches) if type(m) is _Match}
    for i, m in enumerate(matches):
        if type(m) is _Found:
            _apply_compiled(egraph, m, iteration, budgets, applications)
            continue
        source = sources[i]
        m.runner.seen.add((term_key(m.before), m.window))
        for answer in m.answers:
            result = answer
            if m.window is not None:
                i, j = m.window
                args = m.shape._tuple[1:]
                result = Term((m.shape._tuple[0], *args[:i], answer, *args[j:]))
                if not (keeps_type(m.shape, result) and keeps_values(m.shape, result)):
                    continue
            if not budgets.identities and wraps(egraph, result, m.cid):
                budgets.wrapped += 1
                continue
            new, to_key, written = egraph.insert(result)
            if egraph.find(new) == egraph.find(m.cid):
                continue  # the class holds it already
            merge = Merge(
                m.runner.rule, m.runner.direction, m.window, m.key, to_key, iteration,
                (source, written), (m.shape, answer, result),
            )  # fmt: skip
            egraph.merge(m.cid, new, (*merge.ids, merge))
            m.runner.applied += 1
            applications.append(merge)
            if len(egraph.memo) > budgets.max_nodes:
                raise Stop("max_nodes")


def _apply_compiled(egraph, m: _Found, iteration, budgets, applications) -> None:
    """:func:`_apply` for a compiled rule's match: its answer added on class ids."""
    runner, rule = m.runner, m.rule
    runner.seen.add(m.shape)
    if not budgets.identities and egraph.find(m.cid) in {egraph.find(c) for c in m.below}:
        budgets.wrapped += 1
        return
    new, to_key, written = rule.add(egraph, m.b, m.types)
    if egraph.find(new) == egraph.find(m.cid):
        return  # the class holds it already

    ids = (rule.shown_id(egraph, m.shape), written)
    terms = partial(rule.terms, egraph, m.b, m.shape)  # built when a derivation reads them
    merge = Merge(runner.rule, runner.direction, None, m.key, to_key, iteration, ids, terms)
    egraph.merge(m.cid, new, (*merge.ids, merge))
    runner.applied += 1
    applications.append(merge)
    if len(egraph.memo) > budgets.max_nodes:
        raise Stop("max_nodes")
