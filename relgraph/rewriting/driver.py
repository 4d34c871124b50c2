"""The equilibrium driver: the one fixpoint loop.

The equilibrium driver sweeps the term DAG bottom-up.  At each node it rebuilds
the node from its already-swept children and tries the relations that track the
node's head Op.  The first ground, different, type-preserving answer replaces the
node and is swept at once, so a node reaches its local normal form before its
parent is tried.  A pass that changes nothing ends the run.

What keeps it fast: terms are immutable and kept canonical (one object per
structure), so a node on which every relation failed is never tried again, a
subterm whose whole tree is irreducible is skipped without descending, and a
shared subterm is rewritten once.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from relgraph.exceptions import EquilibriumLimitError, OscillationError, RelationError
from relgraph.logic.search import check_cancelled, run_deep
from relgraph.rewriting.cycles import (
    check_relations,
    local_oscillation,
    pass_oscillation,
    rewrite_cycle,
    waiting_on,
)
from relgraph.rewriting.promotion import keeps_values, regrouping, run_starts
from relgraph.rewriting.relation import (
    Matcher,
    Plan,
    Rule,
    as_rule,
    is_associative,
    keeps_type,
    shared_test,
)
from relgraph.rewriting.report import Application, RewriteReport, RuleStats
from relgraph.terms.term import Term
from relgraph.terms.traverse import checked_term, count_nodes, first_positions

__all__ = ["EquilibriumRewriter"]


class EquilibriumRewriter:
    """Apply relations at every subterm until none applies.

    Parameters
    ----------
    relations : iterable of goal constructors or Rules
        Tried in this order at each node; the first that applies wins.
    name : str
        Shown in reports.
    max_use_ratio : float
        A relation applied more than ``max_use_ratio`` times the number of
        nodes of the input stops the run with :class:`EquilibriumLimitError`.
    max_passes : int
        Passes allowed before :class:`EquilibriumLimitError`.
    on_error : {"raise", "warn"}
        A relation that raises: re-raise wrapped in :class:`RelationError`
        naming it and the subterm, or warn and treat it as not applying.
    max_answers : int
        Answers of a relation's stream examined per subterm.
    timeout : float, optional
        Seconds a run may take; past them it stops (even inside a relation that
        never answers) and raises :class:`SearchTimeout`.

    Examples
    --------
    >>> import relgraph as rg
    >>> a, b, c = rg.lvars("a b c")
    >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
    >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    >>> gather = rg.EquilibriumRewriter([rg.reverse(dot_distributeo)])
    >>> rg.pprint(rg.rewrite(A @ x + A @ y, gather))
    '(A @ (x + y))'
    """

    query: Any = None  # the database query that built it, if one did

    def __init__(
        self,
        relations: Iterable[Rule | Any],
        *,
        name: str = "equilibrium",
        max_use_ratio: float = 10.0,
        max_passes: int = 100,
        on_error: Literal["raise", "warn"] = "raise",
        max_answers: int = 8,
        timeout: float | None = None,
    ):
        if on_error not in ("raise", "warn"):
            raise ValueError(f"on_error must be 'raise' or 'warn', got {on_error!r}")
        if max_use_ratio <= 0 or max_passes < 1 or max_answers < 1:
            raise ValueError("max_use_ratio, max_passes and max_answers must be positive")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = timeout
        self.rules: tuple[Rule, ...] = tuple(as_rule(r) for r in relations)
        self.name = name
        self.max_use_ratio = max_use_ratio
        self.max_passes = max_passes
        self.on_error = on_error
        self.max_answers = max_answers
        self._matchers: tuple[Matcher, ...] | None = None
        self._checked = False

    def __getstate__(self) -> dict:
        # The built goals stay behind (a worker builds its own): they hold generators.
        return {**self.__dict__, "_matchers": None}

    def __repr__(self) -> str:
        names = ", ".join(r.name for r in self.rules)
        return f"EquilibriumRewriter({self.name!r}: {names})"

    @property
    def matchers(self) -> tuple[Matcher, ...]:
        """The rules' goals, built on first use and reused by every run."""
        if self._matchers is None:
            self._matchers = tuple(Matcher(r, self.max_answers) for r in self.rules)
        return self._matchers

    def check(self, *, strict: bool = False) -> list:
        """Relations here that undo themselves or each other (``x*y -> y*x``, a
        relation next to its reverse): a :class:`~relgraph.rewriting.cycles.CycleWarning` for
        each, naming them and the one to drop; with ``strict``, a ``QueryError``.

        Examples
        --------
        >>> import relgraph as rg
        >>> x = rg.lvar("x")
        >>> neg = rg.rule(-x, -1.0 * x, name="neg_to_mul")
        >>> back = rg.rule(-1.0 * x, -x, name="mul_to_neg")
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):
        ...     (fight,) = rg.EquilibriumRewriter([neg, back]).check()
        >>> fight.names, fight.drop
        (('neg_to_mul', 'mul_to_neg'), "drop 'neg_to_mul' (it makes terms bigger)")
        """

        return check_relations(self.rules, name=self.name, strict=strict)

    def apply(self, term: Any, trace: bool = False) -> tuple[Any, RewriteReport]:
        """Rewrite ``term`` to a fixpoint; return it with a :class:`RewriteReport`.

        With ``trace=True`` the report's ``trace`` lists every rewrite in order
        (relation, pass, position, before, after).

        Examples
        --------
        >>> import relgraph as rg
        >>> a, b, c = rg.lvars("a b c")
        >>> dot_distributeo = rg.rule(a @ (b + c), a @ b + a @ c, name="dot_distributeo")
        >>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
        >>> out, report = rg.EquilibriumRewriter([dot_distributeo]).apply(A @ (x + y), trace=True)
        >>> print(report.trace[0])
        pass 1, at []: dot_distributeo: (A @ (x + y)) -> ((A @ x) + (A @ y))
        """
        term = checked_term(term, "rewrite")
        if not self._checked:  # rules' patterns are known: a cheap check, once
            self._checked = True
            check_relations(self.rules, name=self.name, probe=False)
        return run_deep(self._apply, term, trace, timeout=self.timeout)

    def _apply(self, term: Any, trace: bool = False) -> tuple[Any, RewriteReport]:
        start = time.perf_counter()
        run = _Run(self, term, trace)
        root = term
        seen = {root: 0}
        with regrouping(self.rules):
            for passes in range(1, self.max_passes + 1):
                run.pass_roots.append(root)
                new_root = run.sweep(root)
                if root == new_root:  # identity, except after the first pass made it canonical
                    root = new_root
                    break
                if new_root in seen:
                    cycle = pass_oscillation(self.name, run.pass_log, seen[new_root], passes)
                    raise OscillationError(*cycle)
                seen[new_root] = passes
                root = new_root
            else:
                raise EquilibriumLimitError(
                    f"{self.name}: no fixpoint after max_passes={self.max_passes} passes; "
                    f"most applied: {_top(run.counts())}",
                    run.counts(),
                )
        return root, run.report(time.perf_counter() - start, passes, root)


# On the sweep's stack: the node below it is tried next (its children are done).
_AFTER_KIDS = object()

# Rewrites in a row at one node within a pass, before the rest waits for the next
# pass (which bounds a pass even if relations cycle at a node).
LOCAL_STEPS = 64


def _finish(done: dict[int, Any], waiting: dict[int, list[int]], key: int, value: Any) -> None:
    """Record ``value`` for node ``key`` and for every node waiting on ``key``."""
    done[key] = value
    keys = waiting.pop(key, None) if waiting else None
    while keys:
        k = keys.pop()
        done[k] = value
        keys.extend(waiting.pop(k, ()))


def _top(counts: dict[str, int], k: int = 3) -> str:
    items = sorted(counts.items(), key=lambda kv: -kv[1])[:k]
    return ", ".join(f"{name} ({n}x)" for name, n in items) or "none"


class _Run:
    """The state of one equilibrium run over one term.

    Every node the run holds is canonical: ``canon`` maps a structure to its one
    object, so the sets below can hold node ids (cheap to hash) instead of
    nodes, and ``canon`` keeps those ids alive and unique for the whole run.
    """

    def __init__(self, rewriter: EquilibriumRewriter, term: Any, trace: bool = False):
        self.rewriter = rewriter
        # With a trace: (relation, pass, before, after) per rewrite, and each pass's input.
        self.trace: list[tuple[str, int, Term, Term, Any]] | None = [] if trace else None
        self.pass_roots: list[Any] = []
        self.stands_for: dict[int, Term] = {}  # a node built in a pass -> the one it replaces
        self.matchers = rewriter.matchers
        self.canon: dict[Term, Term] = {}
        self.normal: set[int] = set()  # irreducible, and so is every subterm
        self.failed: set[int] = set()  # every candidate relation failed at this node
        self.rewritten: dict[int, tuple[int, Any]] = {}  # (relation, result) once applied
        self.plans: dict[Any, Plan] = {}  # by head: see plan_for
        self.failed_windows: set[tuple[Any, int, int]] = set()
        n = len(self.matchers)
        self.dropped_before = [Counter(m.dropped) for m in self.matchers]
        self.attempts, self.applications = [0] * n, [0] * n
        self.times, self.created = [0.0] * n, [0] * n
        self.pass_log: list[dict[str, int]] = []
        self.nodes_before: int | None = None  # known after the first sweep
        self.rebuilt = False  # whether canonical() ever made a node the input lacked
        self.applied: list[str] = []  # relations applied at the node being tried
        self.ticks = 0  # attempts in this run (a cancelled run stops within 64)

    # -- the sweep ---------------------------------------------------------------

    def sweep(self, root: Any) -> Any:
        """One bottom-up pass; returns the new root (the same object if unchanged).

        A node's replacement is swept at once, in the same pass, so a node
        reaches its local normal form before its parent is tried (at most
        ``LOCAL_STEPS`` rewrites in a row; the rest waits for the next pass).
        The first pass also makes the input canonical as it goes.
        """
        check_cancelled()
        self.pass_log.append({})
        if type(root) is not Term:
            self.nodes_before = self.nodes_before or 0
            return root
        first = len(self.pass_log) == 1
        normal, failed, canon, plans = self.normal, self.failed, self.canon, self.plans
        done: dict[Any, Any] = {}
        expanded: set[int] = set()
        waiting: dict[int, list[int]] = {}  # replacement -> the nodes it replaces
        steps: dict[int, int] = {}  # replacement -> rewrites in a row that made it
        made_by: dict[int, tuple[str, ...]] = {}  # replacement -> the relations that made it
        # Until a node is replaced (by a rewrite, or by its canonical twin), every node
        # of the first pass is normal and is its own value: nothing to look up.
        clean = first
        stack: list[Any] = [root]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            if node is _AFTER_KIDS:  # the node below it has its children done
                node = pop()
                key = id(node)
            else:
                key = id(node)
                if key in expanded and key in done:
                    continue
                if not clean and key in normal:
                    _finish(done, waiting, key, node)
                    continue
                if key not in expanded:
                    # Children first.  A child already expanded is done, or pending: an
                    # ancestor, or a node whose replacement contains it; a pending
                    # child is used as is.
                    expanded.add(key)
                    push(node)
                    push(_AFTER_KIDS)
                    below = len(stack)
                    for a in node._tuple:
                        if type(a) is Term and id(a) not in expanded:
                            push(a)
                    if len(stack) > below:
                        continue
                    del stack[-2:]
            args = node._tuple
            changed, kids_normal = False, True
            for a in () if clean else args:
                if type(a) is Term:
                    b = done.get(id(a), a)
                    changed = changed or b is not a
                    kids_normal = kids_normal and id(b) in normal
            if changed:
                new_args = [done.get(id(a), a) if type(a) is Term else a for a in args]
                original, node = node, self.canonical(Term(new_args))
                if self.trace is not None:
                    self.stands_for[id(node)] = original
            elif first:
                node = canon.setdefault(node, node)
                clean = clean and id(node) == key
            node_key = id(node)
            result = None
            if clean or node_key not in normal:
                if clean or node_key not in failed:
                    head = node._tuple[0]
                    plan = plans.get(head) or self.plan_for(head)
                    if not plan.candidates:  # no rule tracks the head: nothing to try
                        pass
                    elif plan.passes is not None and len(args) <= 3 and not plan.passes(node):
                        plan.rejected += 1  # each would reject it; it has no runs of arguments
                    else:
                        self.applied = []
                        result = self.try_node(node, plan)
                if result is None:  # normal, with its subterms, or else failed
                    (normal if kids_normal else failed).add(node_key)
            if result is None:
                if waiting:
                    _finish(done, waiting, key, node)
                else:
                    done[key] = node
                continue
            clean = False
            n = steps.get(key, 0) + 1
            pending = id(result) in expanded and id(result) not in done
            if pending and id(result) in waiting_on(waiting, key):
                cycle = rewrite_cycle(waiting, made_by, key, id(result)) + self.applied
                message = local_oscillation(self.rewriter.name, node, result, cycle)
                raise OscillationError(*message)
            if type(result) is not Term or n > LOCAL_STEPS or id(result) in done or pending:
                _finish(done, waiting, key, done.get(id(result), result))
                continue
            # Sweep the replacement now; this node takes its value when it is done.
            steps[id(result)] = n
            made_by[id(result)] = tuple(self.applied)
            if self.trace is not None:
                self.stands_for[id(result)] = node
            waiting.setdefault(id(result), []).append(key)
            push(result)
        if first and self.nodes_before is None:  # if nothing was rewritten, canon is the input
            self.nodes_before = count_nodes(root) if self.rebuilt else len(canon)
        return done[id(root)]

    def try_node(self, node: Term, plan: Plan) -> Any:
        """The node rewritten by the first candidate relation that applies, or None."""
        op = node._tuple[0]
        if plan.passes is None or plan.passes(node):
            result = self.try_candidates(node, plan.candidates)
        else:  # each would reject the node (runs of its arguments may pass)
            plan.rejected += 1
            result = None
        if result is not None or len(node._tuple) <= 3 or not is_associative(op):
            return result
        # A run of arguments is a part of the fold in one dtype, in floats a leading one.
        starts = run_starts(node)
        if not starts:
            return None
        # For an associative head, runs of arguments are subterms too: in
        # B@z + B@w + x the gather applies to the run (B@z, B@w).  Every
        # disjoint run that rewrites is rewritten in this one pass.
        windows = plan.windows
        if not windows:
            return None
        args, new_args = node._tuple[1:], []
        i = 0
        while i < len(args):
            run = self.try_run(op, args, i, windows) if i < starts else None
            if run is None:
                new_args.append(args[i])
                i += 1
            else:
                result, i = run
                new_args.append(result)
        if len(new_args) == len(args):
            return None
        result = new_args[0] if len(new_args) == 1 else Term((op, *new_args))
        # Each window kept its own type; the node may not (n-ary dtype promotion).
        if keeps_type(node, result) and keeps_values(node, result):
            return self.canonical(result)
        return None

    def try_run(self, op: Any, args: tuple, i: int, candidates: tuple[int, ...]) -> Any:
        """The longest run ``args[i:end]`` (two or more) that rewrites: (result, end)."""
        pair = (op, id(args[i]), id(args[i + 1])) if i + 1 < len(args) else None
        if pair is None or pair in self.failed_windows:  # arguments are canonical: ids stay
            return None
        window = self.canonical(Term((op, args[i], args[i + 1])))
        result = self.try_candidates(window, candidates)
        if result is None:
            self.failed_windows.add(pair)
            return None
        end = i + 2
        while end < len(args):
            longer = self.try_candidates(Term((op, *args[i : end + 1])), candidates)
            if longer is None:
                break
            result, end = longer, end + 1
        return result, end

    def try_candidates(self, node: Term, candidates: tuple[int, ...]) -> Any:
        # Relations are deterministic in their first answer: a canonical node
        # (often a window rebuilt into a new parent) is rewritten once per run.
        key = id(node)
        if key in self.rewritten:
            index, result = self.rewritten[key]
            self.record(index, self.matchers[index].rule.name, node, result)
            return result
        # A rule's filter on fixed heads and arities first; rules of one shape share
        # it, so it runs once per node for all of them.
        verdicts: dict[Any, bool] = {}
        matchers = self.matchers
        for index in candidates:
            quick = matchers[index].quick
            if quick is None:  # a goal: its own test first, as a rule's filter
                passed = not matchers[index].rejects(node)
            elif quick in verdicts:
                passed = verdicts[quick]
            else:
                passed = verdicts[quick] = quick(node)
            if not passed:
                self.attempts[index] += 1
                continue
            result = self.attempt(index, node)
            if result is not None:
                if self.canon.get(node) is node:
                    self.rewritten[key] = (index, result)
                return result
        return None

    def plan_for(self, op: Any) -> Plan:
        """What a node with head ``op`` is tried with (rules that track nothing admit
        every head)."""
        found = tuple(
            i for i, m in enumerate(self.matchers) if m.rule.tracks is None or op in m.rule.tracks
        )
        windows = tuple(i for i in found if self.matchers[i].rule.windows)
        plan = self.plans[op] = Plan(found, windows, shared_test(self.matchers[i] for i in found))
        return plan

    # -- one relation on one node ------------------------------------------------

    def attempt(self, index: int, node: Term) -> Any:
        matcher = self.matchers[index]
        self.attempts[index] += 1
        self.ticks += 1
        if not self.ticks & 63:  # a thread-local lookup: not on every attempt
            check_cancelled()
        start = time.perf_counter()
        try:
            result = matcher.first(node)
        except RelationError as exc:
            self.relation_failed(exc)
            result = None
        finally:
            self.times[index] += time.perf_counter() - start
        if result is None:
            return None
        before = len(self.canon)
        result = self.canonical(result)
        self.created[index] += len(self.canon) - before
        self.record(index, matcher.rule.name, node, result)
        return result

    def relation_failed(self, exc: RelationError) -> None:
        if self.rewriter.on_error == "raise":
            raise exc
        warnings.warn(str(exc), RuntimeWarning, stacklevel=4)
        return None

    def record(self, index: int, name: str, before: Term, after: Any) -> None:
        if self.trace is not None:
            origin = before
            while id(origin) in self.stands_for:
                origin = self.stands_for[id(origin)]
            self.trace.append((name, len(self.pass_log), origin, before, after))
        self.applications[index] += 1
        self.applied.append(name)
        log = self.pass_log[-1]
        log[name] = log.get(name, 0) + 1
        limit, size = self.rewriter.max_use_ratio, self.nodes_before or 1
        if self.nodes_before is None and self.applications[index] > limit:  # the first pass
            size = self.nodes_before = count_nodes(self.pass_roots[0])  # counted when needed
        if self.applications[index] > limit * max(size, 1):
            raise EquilibriumLimitError(
                f"{self.rewriter.name}: {name!r} applied more than max_use_ratio="
                f"{self.rewriter.max_use_ratio} x {size} nodes; "
                f"most applied: {_top(self.counts())}",
                self.counts(),
            )

    # -- canonical terms ---------------------------------------------------------

    def canonical(self, term: Any) -> Any:
        """The one object this run uses for ``term``'s structure."""
        if type(term) is not Term:
            return term
        canon = self.canon
        found = canon.get(term)
        if found is term:
            return term
        self.rebuilt = True
        if found is not None:  # an equal term's object (the canon's hold canonical parts)
            return found
        if all(canon.get(a) is a for a in term._tuple if type(a) is Term):
            return canon.setdefault(term, term)  # new over canonical parts (most are)
        done: dict[int, Term] = {}
        stack = [(term, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if not expanded:
                if self.canon.get(node) is node:
                    done[id(node)] = node
                    continue
                stack.append((node, True))
                stack.extend((a, False) for a in node._tuple if type(a) is Term)
                continue
            args = tuple(done[id(a)] if type(a) is Term else a for a in node._tuple)
            rebuilt = node if all(n is o for n, o in zip(args, node._tuple)) else Term(args)
            done[id(node)] = self.canon.setdefault(rebuilt, rebuilt)
        return done[id(term)]

    # -- reporting ---------------------------------------------------------------

    def nodes_after(self, root: Any) -> int:
        if not self.rebuilt:
            # Nothing but the input was made canonical: canon is exactly its nodes.
            return len(self.canon)
        return _count_canonical(root)

    def counts(self) -> dict[str, int]:
        return {m.rule.name: n for m, n in zip(self.matchers, self.applications) if n}

    def report(self, elapsed: float, passes: int, root: Any) -> RewriteReport:
        attempts = list(self.attempts)
        for plan in self.plans.values():  # a node a plan's test rejected: one each
            for index in plan.candidates if plan.rejected else ():
                attempts[index] += plan.rejected
        columns = (self.matchers, attempts, self.applications, self.times, self.created)
        stats = sorted(
            (
                RuleStats(m.rule.name, a, n, t, c, tuple(sorted((m.dropped - d).items())))
                for m, a, n, t, c, d in zip(*columns, self.dropped_before)
            ),
            key=lambda s: -s.time,
        )
        return RewriteReport(
            name=self.rewriter.name,
            passes=passes,
            time=elapsed,
            nodes_before=self.nodes_before or 0,
            nodes_after=self.nodes_after(root),
            rules=tuple(stats),
            pass_log=tuple(tuple(log.items()) for log in self.pass_log),
            trace=self.applications_in_order(),
        )

    def applications_in_order(self) -> tuple[Application, ...]:
        if not self.trace:
            return ()
        where: dict[int, dict[Term, tuple[int, ...]]] = {}
        out = []
        for name, number, origin, before, after in self.trace:
            if number not in where:
                where[number] = first_positions(self.pass_roots[number - 1])
            out.append(Application(name, number, where[number].get(origin), before, after))
        return tuple(out)


def _count_canonical(root: Any) -> int:
    # Every node of a run's result is canonical, so identity is structure.
    seen: set[int] = set()
    stack = [root] if type(root) is Term else []
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(a for a in node._tuple if type(a) is Term)
    return len(seen)
