"""``rg.check``: is a relation sound?  Terms it applies to, run on hard data.

For each direction the relation runs in, :func:`check` makes terms the relation
rewrites, takes the answers the driver would take, and evaluates each input
and answer with numpy on random data drawn from the values that break
rewrites: +-inf, NaN, +-0.0, subnormals, values near overflow, the points where
``exp`` overflows, integer extremes (which wrap), and ordinary ranges.

* Terms come from the relation's pattern (a rule): its variables become
  symbols of every dtype numpy has, and of 0 to 2 dimensions; for a
  hand-written relation, random programs rooted at the heads it tracks; and
  the ``terms`` you pass, with their symbols' dtypes varied.
* A rewrite holds when its dtype and shape are the input's and its values are
  the input's (NaN matches NaN, floats up to rounding, integers exactly, wrap-around
  included, and a zero only a zero of its sign: numpy's ``==`` takes -0.0 for 0.0,
  ``1 / z`` does not), or else, forward, no farther from the exact value (from
  :mod:`relgraph.ops.exact`, mpmath at 1000 digits): what the driver needs.
  Backward, floats must have the same exact value: the relation is an identity,
  though running it backward may lose accuracy (``log1p(x) -> log(1 + x)``), which
  is what exploring needs.
* The first failure found is shrunk to the smallest term and to one element
  per input, and returned as the :class:`Counterexample`.

Examples
--------
>>> import relgraph as rg
>>> x = rg.lvar("x")
>>> rg.check(rg.rule(rg.sqrt(x * x), abs(x))).ok
True
>>> bad = rg.check(rg.rule(rg.sqrt(x * x), x), seed=1)
>>> bad.ok, bad.counterexample.after.dtype == bad.counterexample.before.dtype
(False, True)
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from relgraph import ops
from relgraph.exceptions import RelationError, TypeCheckError
from relgraph.logic.search import run_deep
from relgraph.ops.exact import agrees, exact_evaluate, zero_sign_flips
from relgraph.rewriting.relation import Matcher, as_rule, directions_of, reverse
from relgraph.rewriting.rules import PatternRelation
from relgraph.terms.evaluate import evaluate
from relgraph.terms.infer import typeof
from relgraph.terms.leaves import Symbol, tensor
from relgraph.terms.lvars import is_lvar, is_rest
from relgraph.terms.printing import brief
from relgraph.terms.term import Term
from relgraph.terms.traverse import as_term, count_nodes, free_symbols, substitute, subterms

__all__ = ["check", "CheckResult", "Counterexample", "SPECIAL_FLOATS", "DTYPES"]

SPECIAL_FLOATS = (-np.inf, -1e308, -745.5, -710.0, -30.0, -1.0, -0.5, -1e-20, -5e-324, -0.0,
                  0.0, 5e-324, 2.2e-308, 1e-20, 0.5, 1.0, 2.0, 30.0, 709.0, 710.0, 1e308,
                  np.inf, np.nan)  # fmt: skip
DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint8", "bool")
SIZE = 3  # the length of every axis of the data
MAX_CANDIDATES = 20_000  # terms generated per direction before giving up
PROGRAM_OPS = ("add", "sub", "mul", "true_div", "neg", "exp", "log", "log1p", "expm1",
               "sqrt", "abs", "pow", "sum", "max", "dot", "transpose", "maximum", "sigmoid",
               "softplus", "sign", "reciprocal", "square")  # fmt: skip


@dataclass(frozen=True)
class Counterexample:
    """A term the relation rewrote into one that computes something else.

    Attributes
    ----------
    direction : str
    term, rewritten : Term
    inputs : dict of str to ndarray
    before, after : ndarray
        The values of ``term`` and ``rewritten`` on ``inputs``.
    problem : str
        What differs, in words.
    """

    direction: str
    term: Any
    rewritten: Any
    inputs: dict
    before: Any
    after: Any
    problem: str

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.inputs.items())
        step = f"{self.direction}: {brief(self.term)} -> {brief(self.rewritten)}"
        return f"{step} with {shown}: {self.problem}" if shown else f"{step}: {self.problem}"


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` found.  ``ok`` (also the truth value): no counterexample.

    ``terms`` counts the rewrites evaluated per direction; ``note`` says what
    could not be checked (a direction where no term was found to rewrite).
    """

    relation: str
    ok: bool
    counterexample: Counterexample | None
    terms: dict = field(default_factory=dict)
    note: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        counted = ", ".join(f"{n} {d}" for d, n in self.terms.items())
        head = f"{self.relation}: {'holds' if self.ok else 'does not hold'} ({counted} rewrites)"
        lines = [head]
        if self.counterexample is not None:
            lines.append(f"  {self.counterexample}")
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)


def check(
    relation: Any,
    *,
    examples: int = 100,
    seed: int = 0,
    terms: Iterable[Any] = (),
    timeout: float = 60.0,
) -> CheckResult:
    """Check that ``relation`` keeps values, in each direction it runs in.

    Parameters
    ----------
    relation : goal constructor, rule or Rule
    examples : int
        Candidate terms tried per direction (each on fresh random data).
    seed : int
        The random seed: the same seed checks the same terms on the same data.
    terms : iterable of Term
        Terms to try besides the generated ones (for a hand-written relation, the
        terms it is meant for); their symbols' dtypes are varied too.
    timeout : float
        Seconds for the whole check.

    Examples
    --------
    >>> import relgraph as rg
    >>> x, y = rg.lvars("x y")
    >>> A = rg.lvar("A", ndim=2)
    >>> result = rg.check(rg.rule(rg.sum(A + x), rg.sum(A) + rg.sum(x)))
    >>> result.ok
    False
    >>> print(result.counterexample.problem)  # doctest: +ELLIPSIS
    values differ...
    """
    rule = as_rule(relation)
    seeds = [as_term(t) for t in terms]
    if any(type(t) not in (Term, Symbol) for t in seeds):
        raise TypeError("terms= must be terms (built from symbols), such as rg.exp(x)")
    return run_deep(_check, rule, examples, seed, seeds, timeout=timeout)


def _check(rule: Any, examples: int, seed: int, seeds: list) -> CheckResult:
    rng = np.random.default_rng(seed)
    counted: dict[str, int] = {}
    notes, found = [], None
    for direction in directions_of(rule):
        rel = rule if direction == "forward" else as_rule(reverse(rule))
        sources = _sources(rel, direction, seeds, rng)
        pairs = list(islice(_rewrites(rel, sources, rng), examples))
        counted[direction] = len(pairs)
        if not pairs:
            notes.append(f"no term found that the {direction} direction rewrites")
        failures = [f for f in (_compare(t, u, rng, direction) for t, u in pairs) if f]
        failures += [_raised(t, u, direction) for t, u in pairs if isinstance(u, RelationError)]
        if failures:
            found = _shrink(min(failures, key=lambda f: count_nodes(f.term)))
            break
    return CheckResult(rule.name, found is None, found, counted, "; ".join(notes))


# -- terms the relation applies to ------------------------------------------------------


def _sources(rel: Any, direction: str, seeds: list, rng: Any) -> Iterator[Any]:
    """Candidate terms, endlessly varied: from the rule's pattern, or random programs
    rooted at the relation's heads; and the given terms (for the backward direction,
    their rewrites)."""
    pattern = rel.relation.lhs if isinstance(rel.relation, PatternRelation) else None
    given = list(seeds)
    if direction == "backward":
        forward = Matcher(as_rule(reverse(rel)))
        given = [out for t in seeds for s in _all(t) for out in islice(forward.answers(s), 2)]
    for _ in range(MAX_CANDIDATES):
        if given and rng.random() < 0.5:
            t = _vary(given[rng.integers(len(given))], rng)
        elif pattern is not None:
            t = _instantiate(pattern, rng)
        else:
            t = _typed(_program(rng, rel.tracks, 3))
        if t is not None:
            yield t


def _all(t: Any) -> list:
    return list(subterms(t)) if type(t) is Term else [t]


def _program(rng: Any, heads: Any, depth: int) -> Any:
    """A random program of up to ``depth`` levels, its root one of ``heads`` if known."""

    if depth == 0 or (heads is None and rng.random() < 0.25):
        return _constant(rng) if rng.random() < 0.15 else _leaf("x", rng)
    names = sorted(getattr(h, "name", "") for h in heads) if heads else PROGRAM_OPS
    op = getattr(ops, names[rng.integers(len(names))], None)
    if op is None or not hasattr(op, "nin"):
        return _leaf("x", rng)
    n = op.nin if op.nin is not None else int(rng.integers(2, 4))
    args = [_program(rng, None, depth - 1) for _ in range(n)]
    return Term((op, *args))


def _leaf(name: str, rng: Any, ndim: int | None = None, dtype: Any = None) -> Any:
    if dtype is None:
        dtype = DTYPES[rng.choice(len(DTYPES), p=[0.4, 0.15, 0.1, 0.1, 0.1, 0.1, 0.05])]
    ndim = int(rng.integers(0, 3)) if ndim is None else ndim
    return tensor(f"{name}_{dtype}_{ndim}", dtype, ndim=ndim)


def _var_leaf(v: Any, rng: Any, k: int) -> Any:
    """A value for pattern variable ``v`` satisfying its constraint."""
    for _ in range(20):
        if v.constant or (v.constant is None and rng.random() < 0.15):
            value = _constant(rng)
        else:
            value = _leaf(f"{v.name}{k}" if k else v.name, rng, ndim=v.ndim)
        if v.admits(value):
            return value
    return None


def _constant(rng: Any) -> Any:
    pool = [0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 3, 2, 0, -1]
    return pool[rng.integers(len(pool))]


def _instantiate(pattern: Any, rng: Any) -> Any:
    """``pattern`` with its variables replaced by random leaves (rest variables by 1-3)."""
    bound: dict = {}

    def leaf_for(v: Any, k: int = 0) -> Any:
        key = (v, k)
        if key not in bound:
            bound[key] = _var_leaf(v, rng, k)
        return bound[key]

    def build(p: Any, k: int) -> Any:
        if is_lvar(p):
            return leaf_for(p, k if is_rest(p) else 0)
        if type(p) is not Term or p._ground:
            return p
        args: list = []
        variadic = getattr(p._tuple[0], "nin", 0) is None
        for a in p._tuple[1:]:
            if variadic and (is_rest(a) or (type(a) is Term and _rest_outside_variadic(a))):
                n = lengths.setdefault(id(a), int(rng.integers(1, 4)))
                args.extend(build(a, i + 1) for i in range(n))
            else:
                args.append(build(a, k))
        if len(args) == 1 and getattr(p._tuple[0], "nin", 0) is None:
            return args[0]
        return Term((p._tuple[0], *args))

    lengths: dict = {}
    out = build(pattern, 0)
    if as_term(out) is None or any(v is None for v in bound.values()):
        return None
    return _typed(as_term(out))


def _rest_outside_variadic(t: Any) -> bool:
    """Whether ``t`` holds a rest variable no variadic Op inside it takes as its own."""
    if getattr(t._tuple[0], "nin", 0) is None:
        return False
    return any(is_rest(a) or (type(a) is Term and _rest_outside_variadic(a)) for a in t._tuple[1:])


def _vary(term: Any, rng: Any) -> Any:
    """``term`` with each symbol given a random dtype (half the time; same ndim)."""
    if rng.random() < 0.5:
        return term
    names: dict = {}

    def swap(x: Any) -> Any:
        if type(x) is Symbol:
            if x not in names:
                names[x] = _leaf(x.name, rng, ndim=x.type.ndim)
            return names[x]
        return x

    out = substitute(term, lambda n: Term(tuple(swap(a) for a in n._tuple)))
    return _typed(out)


def _typed(term: Any) -> Any:
    """``term`` if it is well typed (numpy would run it), else None."""
    try:
        typeof(term)
    except (TypeCheckError, TypeError, ValueError):
        return None
    return term


def _rewrites(rel: Any, sources: Iterator[Any], rng: Any) -> Iterator[tuple[Any, Any]]:
    """(term, rewritten) pairs: each candidate rewritten as the driver would."""
    matcher = Matcher(rel)
    seen: set = set()
    stale = 0  # candidates in a row already seen: the space is exhausted
    for term in sources:
        if type(term) is not Term or term in seen:
            stale += 1
            if stale > 2_000:
                return
            continue
        seen.add(term)
        stale = 0
        try:
            answer = next(matcher.answers(term), None)
        except RelationError as exc:  # the relation's own code raised: a defect
            yield term, exc
            continue
        except Exception:
            continue
        if answer is not None:
            yield term, answer


# -- evaluation ---------------------------------------------------------------------------


def _data(sym: Symbol, rng: Any, shape: tuple | None = None) -> np.ndarray:
    dtype = sym.type.dtype
    shape = (SIZE,) * sym.type.ndim if shape is None else shape
    n = int(np.prod(shape))
    if dtype.kind == "b":
        flat = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, 2, -1, 3, -2, 7], dtype=np.int64)
        pool = pool[(pool >= info.min) & (pool <= info.max)]
        flat = np.where(rng.random(n) < 0.5, rng.choice(pool, n), rng.integers(-5, 6, n))
        flat = np.clip(flat, info.min, info.max)
    else:
        special = rng.choice(np.array(SPECIAL_FLOATS), n)
        flat = np.where(rng.random(n) < 0.6, special, rng.uniform(-3, 3, n))
    with np.errstate(all="ignore"):
        return flat.astype(dtype).reshape(shape)


def _values(term: Any, after: Any, rng: Any) -> dict:
    symbols = free_symbols([term, after])
    return {s: _data(s, rng) for s in sorted(symbols, key=lambda s: s.name)}


def _run(term: Any, values: dict) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(evaluate(term, values))


def _raised(term: Any, exc: RelationError, direction: str) -> Counterexample:
    return Counterexample(direction, term, term, {}, None, None, f"the relation raised: {exc}")


def _compare(term: Any, after: Any, rng: Any, direction: str, values=None):
    if isinstance(after, RelationError):
        return None  # reported by _raised
    values = _values(term, after, rng) if values is None else values
    try:
        before = _run(term, values)
    except Exception:
        return None  # numpy refuses the input on this data: nothing to compare
    named = {s.name: v for s, v in values.items()}
    try:
        got = _run(after, values)
    except Exception as exc:
        raised = f"the rewrite raises {type(exc).__name__}: {exc}"
        return Counterexample(direction, term, after, named, before, None, raised)
    problem = _difference((term, after), before, got, values, direction)
    if problem is None:
        return None
    return Counterexample(direction, term, after, named, before, got, problem)


def _difference(
    terms: tuple, before: np.ndarray, after: np.ndarray, values: dict, direction: str
) -> str | None:
    if before.dtype != after.dtype:
        return f"dtype {before.dtype} became {after.dtype}"
    if before.shape != after.shape:
        return f"shape {before.shape} became {after.shape}"
    if before.dtype.kind in "biu":
        bad = before != after
    else:
        bad = ~_close(before, after)
        if bad.any():
            judge = _no_farther if direction == "forward" else _same_exactly
            bad &= ~judge(terms, before, after, values)
    if not bad.any():
        return None
    i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
    how = "farther from the exact value" if direction == "forward" else "another exact value"
    return f"values differ at {list(i)}: {before[i]!r} became {after[i]!r} ({how})"


def _close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN matches NaN, a zero only a zero of its sign, finite values up to a few
    roundings in their dtype."""
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return a == b  # booleans and integers: exactly
    eps = np.finfo(a.dtype).eps
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b)
        near = np.abs(a - b) <= 8 * eps * np.maximum(np.abs(a), np.abs(b))
    return (same | (finite & near)) & ~zero_sign_flips(a, b)


def _exact(term: Any, values: dict) -> Any:
    try:
        return exact_evaluate(term, values)
    except ImportError:
        raise
    except Exception:  # an Op the exact evaluator does not know: numpy's word stands
        return None


def _no_farther(terms: tuple, before: Any, after: Any, values: dict) -> np.ndarray:
    """Forward: where ``after`` is no farther than ``before`` from the exact value."""

    exact = _exact(terms[0], values)
    if exact is None:
        return np.zeros(np.shape(before), bool)
    return np.broadcast_to(agrees(before, after, exact), np.shape(before))


def _same_exactly(terms: tuple, before: Any, after: Any, values: dict) -> np.ndarray:
    """Backward: where both terms have one exact value (a rewrite run backward may
    lose accuracy, as ``log1p(x) -> log(1 + x)`` does, but not change the value)."""
    a, b = _exact(terms[0], values), _exact(terms[1], values)
    if a is None or b is None:
        return np.zeros(np.shape(before), bool)
    unresolved = np.ma.getmaskarray(a) | np.ma.getmaskarray(b)
    a, b = np.ma.getdata(a), np.ma.getdata(b)
    return np.broadcast_to(unresolved | _close(a, b), np.shape(before))


def _shrink(found: Counterexample) -> Counterexample:
    """The same failure with every input cut to one element per axis, if it still fails."""
    if found.after is None or not np.ndim(found.before):
        return found
    bad = np.argwhere(~np.broadcast_to(_close(found.before, found.after), found.before.shape))
    if not len(bad):
        return found
    i = tuple(bad[0])
    small = {}
    for sym in free_symbols([found.term, found.rewritten]):
        value = np.asarray(found.inputs[sym.name])
        if value.ndim > len(i):  # reduced over: keep it whole
            small[sym] = value
            continue
        index = tuple(min(j, d - 1) for j, d in zip(i[len(i) - value.ndim :], value.shape))
        small[sym] = value[index].reshape((1,) * value.ndim) if value.ndim else value
    again = _compare(found.term, found.rewritten, None, found.direction, small)
    return again or found


def _short(v: Any) -> str:
    a = np.asarray(v)
    return repr(a.ravel()[0]) if a.size == 1 else np.array2string(a, threshold=6)
