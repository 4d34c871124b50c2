"""relgraph's ``fast_run`` against PyTensor's simplifier, on graphs from PyTensor's tests.

Run from the repository root after ``pip install -e ".[bench]"``::

    python benchmarks/bench_parity.py [--markdown] [--only NAME]

Every case is an input graph of one of PyTensor 3.0.7's rewrite tests
(``tests/tensor/rewriting/test_math.py``, ``test_basic.py``), named after the test, and
written once as a Python expression evaluated twice: with relgraph's Ops and with
``pytensor.tensor``'s.  Only Ops relgraph has are used.  PyTensor rewrites it with
``rewrite_graph(include=("canonicalize", "stabilize", "specialize"))``; relgraph with
``optdb.query(include=["fast_run"])``.

Per case the script prints the op count of the input and of both results (apply
nodes; PyTensor's ``DimShuffle`` and shape bookkeeping are not counted), and checks
both results at the extreme points: every combination of -inf, values near overflow,
-1, -0.0, 0.0, subnormals, 1, +inf and NaN (and a few ordinary values).  A result is
*wrong* where it differs from the input program, unless it is closer to the exact
value, computed by ``relgraph.ops.exact`` with mpmath: a stabilisation may
return a number where the input overflowed, never the reverse.  A zero keeps its
sign (``1 / z`` tells -0.0 from 0.0): PyTensor's ``log(1 + x) -> log1p(x)`` is wrong at
``x = -0.0``, where relgraph gives ``log1p(0 + x)``.

Verdicts: ``=`` relgraph reaches PyTensor's op count, ``+`` strictly fewer ops,
``-`` more ops; ``pt-wrong`` PyTensor's result is wrong at some point (the case then
does not count against relgraph), ``rg-wrong`` relgraph's is.  The summary's reach is
over the cases where PyTensor lowers the op count and is right; a further column
gives relgraph's count with the ``unsafe`` relations too (PyTensor's ``x / x -> 1``).
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import relgraph as rg
from relations import optdb
from relgraph.ops.exact import agrees, exact_evaluate

MATH = "test_math.py"
BASIC = "test_basic.py"

# (test, expression, symbols): symbols default to float64 vectors named by one letter.
# "|x|<=": the exact value of 1 - e^-x needs ~x/2.3 digits: beyond 1000 the reference
# (1000 digits) cannot resolve it, so those cases are checked at finite |x| <= 1000.
CASES: list[tuple[str, str, dict]] = [
    (f"{MATH}::test_log1p", "log(1 + x)", {}),
    (f"{MATH}::test_log1p", "log(1 + (-x))", {}),
    (f"{MATH}::test_log1p", "-log(1 + (-x))", {}),
    (f"{MATH}::test_local_log_add_exp", "log(exp(x) + exp(y))", {}),
    (f"{MATH}::test_local_log_add_exp", "log(exp(x) + exp(y) + exp(x - y) + exp(x + y))", {}),
    (f"{MATH}::TestExpLog::test_log_exp", "log(exp(x))", {}),
    (f"{MATH}::TestExpLog::test_log1p_expm1", "log1p(expm1(x))", {"|x|<=": 1e3}),
    (f"{MATH}::TestExpLog::test_exp_log", "exp(log(x))", {}),
    (f"{MATH}::TestExpLog::test_exp_log", "expm1(log(x))", {}),
    (f"{MATH}::TestExpLog::test_exp_log1p", "exp(log1p(x))", {}),
    (f"{MATH}::TestExpLog::test_exp_log1p", "expm1(log1p(x))", {}),
    (f"{MATH}::TestExpLog::test_exp_log1mexp", "exp(log1mexp(x))", {}),
    (f"{MATH}::TestExpLog::test_exp_softplus", "exp(softplus(x))", {}),
    (f"{MATH}::test_local_mul_specialize", "x * 1", {}),
    (f"{MATH}::test_local_mul_specialize", "x * -1", {}),
    (f"{MATH}::test_local_mul_specialize", "-1 * x * -1", {}),
    (f"{MATH}::test_local_mul_specialize", "x * (-1) * (-y)", {}),
    (f"{MATH}::test_local_pow_specialize", "x ** 1", {}),
    (f"{MATH}::test_local_pow_specialize", "x ** 2", {}),
    (f"{MATH}::test_local_pow_specialize", "x ** 0.5", {}),
    (f"{MATH}::test_local_pow_specialize", "x ** -1", {}),
    (f"{MATH}::TestSqrSqrt::test_sqr_sqrt", "sqrt(x) ** 2", {}),
    (f"{MATH}::TestSqrSqrt::test_sqrt_sqr", "sqrt(x ** 2)", {}),
    (f"{MATH}::TestReduceChain::test_local_sum_sum_prod_prod", "sum(sum(X, axis=0))", {"X": 2}),
    (
        f"{MATH}::TestReduceChain::test_local_sum_sum_prod_prod",
        "sum(sum(X, axis=1), axis=0)",
        {"X": 2},
    ),  # fmt: skip
    (f"{MATH}::TestLocalSumProd::test_local_sum_prod_of_scalar_mul", "sum(2.0 * x)", {}),
    (f"{MATH}::TestLocalSumProd::test_local_sum_of_div", "sum(x / 2.0)", {}),
    (f"{MATH}::test_local_zero_div", "0 / x", {}),
    (f"{MATH}::test_local_mul_exp_to_exp_add", "exp(x) * exp(y) * exp(z) * exp(w)", {}),
    (f"{MATH}::test_local_mul_exp_to_exp_add", "exp(x) * exp(-x)", {}),
    (f"{MATH}::test_local_mul_exp_to_exp_add", "exp(x) / exp(x)", {}),
    (f"{MATH}::test_local_mul_exp_to_exp_add", "exp(x) * exp(y) / exp(z)", {}),
    (f"{MATH}::test_local_div_exp_to_mul_exp", "y / exp(x)", {}),
    (f"{MATH}::test_local_div_exp_to_mul_exp", "1.0 / exp(x)", {}),
    (f"{MATH}::test_local_mul_pow_to_pow_add", "2 ** x * 2 ** y * 2 ** z * 2 ** w", {}),
    (f"{MATH}::test_local_expm1", "exp(x) - 1.0", {}),
    (f"{MATH}::test_local_expm1", "exp(x) - 2.0", {}),
    (f"{MATH}::test_local_expm1", "exp(u) - ONES", {"u": 0}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(X), axis=1))", {"X": 2}),
    (f"{MATH}::test_local_log_sum_exp_inf", "log(sum(exp(x)))", {}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(T), axis=(0,)))", {"T": 3}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(T), axis=(2,)))", {"T": 3}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(T), axis=(0, 1)))", {"T": 3}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(T), axis=(0, 1, 2)))", {"T": 3}),
    (f"{MATH}::test_local_log_sum_exp_maximum", "log(sum(exp(T), axis=2).T)", {"T": 3}),
    (
        f"{MATH}::test_local_log_sum_exp_maximum",
        "log(sum(exp(T), axis=(0, 1), keepdims=True))",
        {"T": 3},
    ),  # fmt: skip
    (f"{MATH}::test_local_reciprocal_1_plus_exp", "reciprocal(1 + exp(x))", {}),
    (f"{MATH}::TestSigmoidRewrites::test_exp_over_1_plus_exp", "1.0 / (1 + exp(-x))", {}),
    (f"{MATH}::TestSigmoidRewrites::test_exp_over_1_plus_exp", "exp(x) / (1 + exp(x))", {}),
    (f"{MATH}::TestSigmoidRewrites::test_local_1msigmoid", "1 - sigmoid(x)", {}),
    (f"{MATH}::TestSigmoidRewrites::test_local_sigm_times_exp", "sigmoid(x) * exp(-x)", {}),
    (f"{MATH}::TestSoftplusRewrites::test_logsigm_to_softplus", "log(sigmoid(x))", {}),
    (
        f"{MATH}::TestSoftplusRewrites::test_log1msigm_to_softplus",
        "log(1 - sigmoid(x))",
        {"|x|<=": 1e3},
    ),
    (f"{MATH}::TestSoftplusRewrites::test_log1pexp_to_softplus", "log1p(exp(x))", {}),
    (f"{MATH}::TestSoftplusRewrites::test_log1pexp_to_softplus", "log(1 + exp(x))", {}),
    (
        f"{MATH}::TestSoftplusRewrites::test_log1p_neg_sigmoid_to_softpuls",
        "log1p(-sigmoid(x))",
        {"|x|<=": 1e3},
    ),  # fmt: skip
    (f"{MATH}::test_local_sub_neg_to_add", "x - (-y)", {}),
    (f"{MATH}::test_local_sub_neg_to_add_const", "x - (-1.0)", {}),
    (f"{MATH}::test_local_add_neg_to_sub", "-x + y", {}),
    (f"{MATH}::test_log1mexp_stabilization", "log(1 - exp(x))", {}),
    (f"{MATH}::test_log1mexp_stabilization", "log1p(-exp(x))", {}),
    (f"{MATH}::test_log1mexp_stabilization", "log(-expm1(x))", {}),
    (f"{MATH}::test_log1mexp_stabilization", "log(-(exp(x) - 1))", {}),
    (f"{MATH}::test_logdiffexp_stabilization", "log(exp(x) - exp(y))", {}),
    (f"{MATH}::test_log_reciprocal", "log(reciprocal(x))", {"x": 0}),
    (f"{MATH}::test_sign_reciprocal", "sign(reciprocal(x))", {"x": 0}),
    (f"{MATH}::test_log_div_positive_constant", "log(3.0 / x)", {"x": 0}),
    (f"{MATH}::test_log_div_positive_constant", "log(x / 3.0)", {"x": 0}),
    (f"{MATH}::test_log_div_positive_constant", "log(1.0 / x)", {"x": 0}),
    (f"{MATH}::test_sign_div_constant", "sign(3.0 / x)", {"x": 0}),
    (f"{MATH}::test_sign_div_constant", "sign(x / 3.0)", {"x": 0}),
    (f"{MATH}::test_sign_div_constant", "sign(x / -3.0)", {"x": 0}),
    (f"{MATH}::TestAlgebraicCanonizer::test_muldiv", "(-1 * x) / y / (-2 * z)", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "x / x", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "(x * y) / x", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "x / y / x", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "x / y / z", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "x / (y / z)", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "(x / y) * (y / z) * (z / w)", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "(2.0 * x) / (4.0 * y)", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "2 * x / 2", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_mul_div_cases", "(x / x) * (y / y)", {}),
    (f"{MATH}::TestAlgebraicCanonizer::test_abs_mul_div", "abs(x) * abs(y)", {}),
    (f"{MATH}::test_local_merge_abs", "abs(x) / abs(y)", {}),
    (f"{MATH}::test_add_canonizer_problem0", "x * 0 * y", {}),
    (f"{MATH}::TestLocalUselessElemwiseComparison::test_inequality_with_self", "x < x", {}),
    (f"{MATH}::TestLocalUselessElemwiseComparison::test_inequality_with_self", "x <= x", {}),
    (f"{BASIC}::TestUselessElemwise::test_add", "x + 0", {}),
    (f"{BASIC}::TestUselessElemwise::test_mul", "x * 1.0", {}),
    (f"{BASIC}::TestUselessElemwise::test_identity", "maximum(x, x)", {}),
    (f"{BASIC}::TestConstantFolding::test_constant_folding", "x + (2.0 * 3.0)", {}),
    (f"{BASIC}::TestLocalUselessSwitch::test_left_is_right", "where(x > 0, y, y)", {}),
    (
        f"{BASIC}::TestLocalMergeSwitchSameCond::test_elemwise_float_ops",
        "where(x > 0, y, z) + where(x > 0, w, y)",
        {},
    ),  # fmt: skip
    (f"{MATH}::test_local_pow_to_nested_squaring", "x ** 4", {}),
    (f"{MATH}::TestExpLog::test_exp_log_nested", "exp(log(exp(log(x))))", {}),
    (f"{MATH}::test_log_sqrt", "log(sqrt(x))", {}),
    (f"{MATH}::TestGreedyDistribute::test_main", "(x + y) * z + (x + y) * w", {}),
]

SPECIAL = [-np.inf, -1e308, -745.5, -30.0, -1.0, -1e-310, -0.0, 0.0, 5e-324, 1e-20, 0.5,
           1.0, 3.0, 30.0, 710.0, 1e308, np.inf, np.nan]  # fmt: skip


@dataclass
class Outcome:
    name: str
    source: str
    before: int
    pt_ops: int
    rg_ops: int
    unsafe_ops: int
    pt_wrong: list = field(default_factory=list)
    rg_wrong: list = field(default_factory=list)
    rg_text: str = ""

    @property
    def verdict(self) -> str:
        if self.rg_wrong:
            return "rg-wrong"
        if self.pt_wrong:
            return "pt-wrong"
        return "+" if self.rg_ops < self.pt_ops else "=" if self.rg_ops == self.pt_ops else "-"

    @property
    def pt_simplifies(self) -> bool:
        """PyTensor lowers the op count, and its result is right."""
        return self.pt_ops < self.before and not self.pt_wrong


def symbols(source: str, declared: dict) -> dict[str, int]:
    """Names used in ``source`` with their ndim (one-letter names; X is a matrix)."""
    import ast

    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    out = {}
    for n in sorted(names):
        if n in declared and n != "|x|<=":
            out[n] = declared[n]
        elif len(n) == 1:
            out[n] = 1
    return out


def relgraph_namespace(syms: dict[str, int]) -> dict:
    ns = {name: getattr(rg, name) for name in rg.ops.ALL_OPS}
    ns["ONES"] = rg.Constant(np.ones((4, 3)))
    ns.update({n: rg.tensor(n, "float64", (None,) * d) for n, d in syms.items()})
    return ns


def pytensor_namespace(syms: dict[str, int]) -> dict:
    import pytensor.tensor as pt

    ns = {name: getattr(pt, name) for name in dir(pt) if not name.startswith("_")}
    ns.update(true_div=pt.true_div, where=pt.switch, ONES=np.ones((4, 3)))
    ns.update({n: pt.tensor(n, dtype="float64", shape=(None,) * d) for n, d in syms.items()})
    return ns


def samples(syms: dict[str, int], source: str, declared: dict) -> list[dict[str, np.ndarray]]:
    """Input values: every combination of the special points across the symbols."""
    names = list(syms)
    points = SPECIAL if len(names) < 3 else SPECIAL[::3]
    if "|x|<=" in declared:
        points = [p for p in points if abs(p) <= declared["|x|<="] or np.isnan(p)]
    combos = np.array(list(itertools.product(points, repeat=len(names))))
    if "sum(" in source and all(syms[n] == 1 for n in names):
        # A reduction over a whole vector: each pair of points is one program run.
        return [{names[0]: np.array(p)} for p in itertools.product(points, repeat=2)]
    out = {}
    for k, n in enumerate(names):
        col = combos[:, k]
        if syms[n] == 0:
            return [dict(zip(names, map(np.float64, row))) for row in combos]
        out[n] = col if syms[n] == 1 else _spread(col, syms[n])
    if "ONES" in source:
        return [{n: np.float64(v)} for n in names for v in SPECIAL]
    return [out]


def _spread(col: np.ndarray, ndim: int) -> np.ndarray:
    """The points of ``col`` in an array of ``ndim`` dimensions (each row mixes them)."""
    rows = np.stack([col, col[::-1], np.roll(col, 1), np.roll(col, 7)], axis=1)
    return rows[:, :3] if ndim == 2 else rows.reshape((len(col),) + (2,) * (ndim - 2) + (-1,))


def pytensor_ops(var) -> int:
    from pytensor.graph.basic import ancestors
    from pytensor.tensor.elemwise import DimShuffle
    from pytensor.tensor.shape import Shape, Shape_i

    skip = (DimShuffle, Shape, Shape_i)
    nodes = {v.owner for v in ancestors([var]) if v.owner is not None}
    return sum(not isinstance(n.op, skip) for n in nodes)


def check(run, term_in, syms, values) -> list:
    """The sample points where ``run`` (the rewritten program) is not acceptable."""
    bad = []
    for sample in values:
        names = {rg.tensor(n, "float64", (None,) * syms[n]): v for n, v in sample.items()}
        before = rg.evaluate(term_in, names)
        exact = exact_evaluate(term_in, names)
        after = run(sample)
        ok = agrees(before, after, exact)
        if not np.all(ok):
            where = np.argwhere(~np.broadcast_to(ok, np.shape(before)))[0]
            point = {n: np.asarray(v)[tuple(where[: np.ndim(v)])] for n, v in sample.items()}
            bad.append((point, np.asarray(before)[tuple(where)], np.asarray(after)[tuple(where)]))
    return bad


def run_case(name: str, source: str, declared: dict, fast_run) -> tuple[Outcome, float, float]:
    import pytensor
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.utils import rewrite_graph

    syms = symbols(source, declared)
    term = eval(source, relgraph_namespace(syms))  # noqa: S307 - our own case table
    pns = pytensor_namespace(syms)
    graph = eval(source, pns)  # noqa: S307
    start = time.perf_counter()
    out = rg.rewrite(term, fast_run)
    rg_time = time.perf_counter() - start
    with_unsafe = rg.rewrite(term, optdb.query(include=["fast_run", "unsafe"]))
    start = time.perf_counter()
    pt_out = rewrite_graph(graph, include=("canonicalize", "stabilize", "specialize"))
    pt_time = time.perf_counter() - start
    inputs = [pns[n] for n in syms]
    compiled = pytensor.function(inputs, pt_out, mode=Mode(linker="py", optimizer=None),
                                 on_unused_input="ignore")  # fmt: skip
    values = samples(syms, source, declared)
    result = Outcome(name, source, rg.count_nodes(term), pytensor_ops(pt_out),
                     rg.count_nodes(out), rg.count_nodes(with_unsafe),
                     rg_text=rg.pprint(out))  # fmt: skip
    result.pt_wrong = check(lambda s: compiled(*(s[n] for n in syms)), term, syms, values)
    rg_symbols = {n: rg.tensor(n, "float64", (None,) * d) for n, d in syms.items()}
    result.rg_wrong = check(
        lambda s: rg.evaluate(out, {rg_symbols[n]: v for n, v in s.items()}), term, syms, values
    )
    return result, rg_time, pt_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--only", help="run the cases whose test name contains this")
    args = parser.parse_args()
    fast_run = optdb.query(include=["fast_run"])
    outcomes, rg_total, pt_total = [], 0.0, 0.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name, source, declared in CASES:
            if args.only and args.only not in name:
                continue
            outcome, rg_time, pt_time = run_case(name, source, declared, fast_run)
            outcomes.append(outcome)
            rg_total, pt_total = rg_total + rg_time, pt_total + pt_time
    report(outcomes, args.markdown)
    simplified = [o for o in outcomes if o.pt_simplifies]
    reached = [o for o in simplified if o.verdict in ("=", "+")]
    fewer = [o for o in outcomes if o.verdict == "+"]
    unsafe_reach = [o for o in outcomes if o.pt_ops < o.before and o.unsafe_ops <= o.pt_ops]
    wrong = [o for o in outcomes if o.rg_wrong]
    share = len(reached) / max(len(simplified), 1)
    print(
        f"\n{len(outcomes)} cases; PyTensor simplifies {len(simplified)} correctly; relgraph "
        f"reaches its op count on {len(reached)} ({share:.0%}), fewer ops on {len(fewer)}; "
        f"PyTensor wrong on {sum(bool(o.pt_wrong) for o in outcomes)}, relgraph wrong on "
        f"{len(wrong)}; with unsafe relations relgraph reaches PyTensor's count on "
        f"{len(unsafe_reach)} of the {sum(o.pt_ops < o.before for o in outcomes)} cases it "
        f"simplifies; rewrite time relgraph {rg_total * 1e3:.1f} ms vs PyTensor "
        f"{pt_total * 1e3:.1f} ms ({pt_total / max(rg_total, 1e-9):.1f}x)"
    )


def report(outcomes: list[Outcome], markdown: bool) -> None:
    if markdown:
        print(
            "| test | input | ops | PyTensor | relgraph | +unsafe | verdict | relgraph's result |"
        )
        print("|---|---|---|---|---|---|---|---|")
    for o in outcomes:
        wrong = o.rg_wrong or o.pt_wrong
        text = " ".join(o.rg_text.split())
        note = ""
        if wrong:
            point, before, after = wrong[0]
            shown = ", ".join(f"{k}={np.asarray(v).ravel().tolist()}" for k, v in point.items())
            note = f" at {shown}: {float(before):g} -> {float(after):g}"
        if markdown:
            print(f"| {o.name} | `{o.source}` | {o.before} | {o.pt_ops} | {o.rg_ops} | "
                  f"{o.unsafe_ops} | {o.verdict}{note} | `{text}` |")  # fmt: skip
        else:
            print(f"{o.verdict:8} {o.before:3} {o.pt_ops:3} {o.rg_ops:3} {o.unsafe_ops:3}  "
                  f"{o.source:45} -> {text}{note}  [{o.name}]")  # fmt: skip


if __name__ == "__main__":
    main()
