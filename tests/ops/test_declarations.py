"""Every Op in ALL_OPS declares what the rest of relgraph reads from it, and the
declarations are right: parametrised over ALL_OPS, so a new Op is checked here
without editing this file."""

import itertools

import numpy as np
import pytest

import relgraph as rg
from relgraph.backends.numba.arrays import array_code
from relgraph.backends.numba.elementwise import scalar_code
from relgraph.eqsat.cost import WEIGHTS
from relgraph.frontend.numpy_api import UFUNCS
from relgraph.ops import ALL_OPS
from relgraph.ops.base import PERFORM
from relgraph.ops.exact import exact_evaluate
from relgraph.terms.operators import OPERATORS

ELEMENTWISE = [op for op in ALL_OPS.values() if op.elementwise]
LINALG = ("cholesky", "inv", "det", "logabsdet", "det_sign")
# Ordinary points, special points and both signs; each Op gets its domain's part.
POINTS = np.array([-3.5, -1.0, -0.25, -0.0, 0.0, 0.5, 1.0, 2.0, 7.0, np.inf, -np.inf, np.nan])
INTEGERS = np.array([-7, -3, -1, 0, 1, 2, 3, 5, 9, 63, 64, -64])


def _operands(op):
    n = op.nin if op.nin is not None else 2
    if op.name == "astype":
        return [rg.vector("x")], ("float32",)
    if op.selects:
        return [rg.vector("c", "bool"), rg.vector("a"), rg.vector("b")], ()
    loops = [t.partition("->")[0] for t in getattr(op.ufunc, "types", ["d"])]
    if not any("d" in loop for loop in loops):  # bit operations: on integers
        return [rg.vector(f"v{i}", "int64") for i in range(n)], ()
    return [rg.vector(f"v{i}") for i in range(n)], ()


def _values(symbols):
    rng = np.random.default_rng(0)
    out = {}
    for k, s in enumerate(symbols):
        if s.type.dtype == np.bool_:
            out[s] = rng.random(POINTS.size) > 0.5
        elif s.type.dtype.kind == "i":
            out[s] = np.roll(INTEGERS, 5 * k)
        else:
            out[s] = np.roll(POINTS, 3 * k)
    return out


@pytest.mark.parametrize("op", list(ALL_OPS.values()), ids=list(ALL_OPS))
def test_every_op_has_an_exact_reference(op):
    assert op.exact is not None, f"{op.name}: declare exact= (rg.check judges by it)"
    assert op.exact == PERFORM or callable(op.exact)


@pytest.mark.parametrize("op", list(ALL_OPS.values()), ids=list(ALL_OPS))
def test_every_op_is_what_its_term_operator_calls(op):
    assert OPERATORS[op.name] is op
    assert getattr(rg, op.name) is op


@pytest.mark.parametrize("op", ELEMENTWISE, ids=[op.name for op in ELEMENTWISE])
def test_elementwise_ops_compile_to_numpys_values(op):
    symbols, params = _operands(op)
    term = op(*symbols, *params)
    values = _values(symbols)
    args = [values[s] for s in symbols]
    with np.errstate(all="ignore"):
        expected = rg.evaluate(term, values)
    assert scalar_code(op, rg.typeof(term).dtype, term.args) is not None
    got = rg.function(symbols, term, compile="eager")(*args)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("op", ELEMENTWISE, ids=[op.name for op in ELEMENTWISE])
def test_elementwise_exact_references_agree_with_numpy(op):
    symbols, params = _operands(op)
    term = op(*symbols, *params)
    values = _values(symbols)
    with np.errstate(all="ignore"):
        numpy_values = np.asarray(rg.evaluate(term, values), dtype=np.float64)
    exact = exact_evaluate(term, values)
    assert not np.ma.getmaskarray(exact).all()
    # Where both are numbers they agree.  (The exact value of anything with a NaN
    # operand is NaN, but for the Ops that see NaN as numpy does: the comparisons,
    # the tests of a value, fmax/fmin and pow, whose pow(nan, 0) is 1.)
    data = np.ma.getdata(exact)
    finite = np.isfinite(numpy_values) & np.isfinite(data) & ~np.ma.getmaskarray(exact)
    if op in (rg.copysign, rg.signbit):  # mpmath has no -0.0: compared away from zeros
        finite &= np.all([values[s] != 0 for s in symbols], axis=0)
    assert finite.sum() >= 3
    np.testing.assert_allclose(data[finite], numpy_values[finite], rtol=1e-13)


@pytest.mark.parametrize(
    "op", [op for op in ALL_OPS.values() if not op.elementwise], ids=lambda op: op.name
)
def test_other_ops_have_a_numba_rule(op):
    x = rg.tensor("x", ndim=3)
    examples = {
        "dot": rg.matrix("A") @ rg.vector("v"),
        "matmul": x @ x,
        "transpose": rg.transpose(x),
        "reshape": rg.reshape(rg.tensor("r", shape=(2, 3, 4)), (6, 4)),
        "expand_dims": rg.expand_dims(x, 0),
        "squeeze": rg.squeeze(rg.tensor("s", shape=(1, 3, 1)), 0),
        "broadcast_to": rg.broadcast_to(rg.vector("b"), (3, 4)),
        "getitem": x[0],
        "concatenate": rg.concatenate([x, x]),
        "stack": rg.stack([x, x]),
        "scatter_as": rg.scatter_as(x[0], x, (0,)),
        "reshape_as": rg.reshape_as(rg.vector("g"), x),
        **{
            n: getattr(rg, n)(rg.matrix("S"), rg.vector("b"))
            for n in ("solve", "solve_lower", "solve_upper")
        },  # fmt: skip
        **{name: getattr(rg, name)(rg.matrix("S")) for name in LINALG},
        "diag": rg.diag(rg.vector("d")),
        "take": rg.take(x, rg.vector("i", "int64"), 1),
        "take_along_axis": rg.take_along_axis(x, rg.tensor("j", "int64", ndim=3), 2),
        "add_at": rg.add_at(x, x, rg.vector("i", "int64"), 0),
        "add_along_axis": rg.add_along_axis(x, x, rg.tensor("j", "int64", ndim=3), 1),
    }
    node = examples[op.name] if op.name in examples else op(x)
    assert node.op is op
    assert "{0}" in array_code(op, node)


@pytest.mark.parametrize("op", list(ALL_OPS.values()), ids=list(ALL_OPS))
def test_every_op_declares_its_pullback(op):
    assert callable(op.pullback), f"{op.name}: declare its pullback (rg.grad reads it)"


def test_the_tables_are_read_from_the_declarations():
    assert WEIGHTS == {name: op.cost for name, op in ALL_OPS.items() if op.cost != 1.0}
    assert {op.name for op in ALL_OPS.values() if op.compares} == {
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    }  # fmt: skip
    ufuncs = {
        op.ufunc
        for op in ELEMENTWISE
        if isinstance(getattr(op, "ufunc", None), np.ufunc) and not op.scipy
    }
    assert ufuncs <= set(UFUNCS), ufuncs - set(UFUNCS)


def test_an_op_without_an_exact_reference_is_refused_by_name():
    from relgraph.ops import Elemwise

    cube = Elemwise("cube", lambda v: np.power(v, 3), 1)
    x = rg.vector("x")
    with pytest.raises(rg.UnsupportedError, match="cube has no exact reference"):
        exact_evaluate(cube(x), {x: np.ones(2)})


def test_the_exact_value_of_where_ignores_the_branch_it_does_not_take():
    """``where(c, a, b)`` is exactly ``a`` where ``c`` holds, whatever ``b`` is there
    (NaN, log of a negative number); ``rg.check`` judged ``log_deto`` backward wrong
    at an overflowing determinant for this."""
    x, A = rg.vector("x"), rg.matrix("A")
    v = np.array([-1.0, 2.0])
    got = exact_evaluate(rg.where(x > 0, rg.log(x), 0.0), {x: v})
    np.testing.assert_array_equal(got.astype(float), np.where(v > 0, np.log(np.abs(v)), 0.0))
    big = np.diag([1e308, 10.0, 1.0])  # det overflows; its log does not
    stable = rg.where(rg.less(rg.det_sign(A), 0), np.nan, rg.logabsdet(A))
    assert float(exact_evaluate(stable, {A: big})) == pytest.approx(np.log(1e308) + np.log(10))


@pytest.mark.parametrize("op", [rg.pow, rg.float_power], ids=lambda op: op.name)
def test_the_exact_power_is_numpys_at_nan_infinities_and_negative_bases(op):
    """C99's ``pow``, as numpy computes it: ``nan ** 0`` and ``1 ** nan`` are 1,
    ``(-1) ** inf`` is 1, ``(-2) ** inf`` is inf, ``(-inf) ** 0.5`` is inf.  The exact
    value was NaN at each, and ``rg.check`` took a rewrite that gives NaN there for
    one that is undefined where the program is."""
    specials = [np.nan, np.inf, -np.inf, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0]
    a, b = (np.array(v) for v in zip(*itertools.product(specials, repeat=2)))
    x, y = rg.vector("x"), rg.vector("y")
    with np.errstate(all="ignore"):
        expected = op.ufunc(a, b)
    got = exact_evaluate(op(x, y), {x: a, y: b}).astype(float)
    np.testing.assert_array_equal(np.abs(got), np.abs(expected))  # mpmath has no -0.0


def test_a_rewrite_that_makes_nan_of_one_to_an_infinite_power_is_refused():
    """``1 ** inf`` is 1 in numpy; ``exp(inf * 0)`` is NaN.  With NaN for the exact
    value of ``1 ** inf``, rg.check took the NaN for as good as numpy's 1."""
    y = rg.lvar("y")
    report = rg.check(rg.rule(1.0**y, rg.exp(y * 0.0), name="one_to_the_yo"), seed=0)
    assert not report.ok
    assert report.counterexample.before == 1.0 and np.isnan(report.counterexample.after)
