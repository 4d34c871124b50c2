import pytest

import relgraph as rg

SYMS = dict(A=rg.matrix, B=rg.matrix, x=rg.vector, y=rg.vector, s=rg.scalar)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A @ (x + y)", "(A @ (x + y))"),
        ("2.0 * x - y / 3", "((2.0 * x) - (y / 3))"),
        ("-x + +y", "(-x + y)"),
        ("x ** 2", "(x ** 2)"),
        ("A.T @ x", "(A.T @ x)"),
        ("exp(log1p(x)) + sqrt(abs(y))", "(exp(log1p(x)) + sqrt(abs(y)))"),
        ("sum(A, axis=0) + max(x)", "(sum(A, axis=0) + max(x))"),
        ("maximum(x, 0.0)", "maximum(x, 0.0)"),
        ("dot(A, x)", "(A @ x)"),
        ("-2", "-2"),
        ("x // y % 2.0 + fmod(x, y)", "(((x // y) % 2.0) + fmod(x, y))"),
    ],
)
def test_accepted(text, expected):
    assert rg.pprint(rg.parse(text, **SYMS)) == expected


def test_bit_operations_parse_as_python_reads_them():
    i = rg.vector("i", "int64")
    assert rg.parse("~i << 2 | i & 1 ^ i >> 1", i=i) == ((~i) << 2) | ((i & 1) ^ (i >> 1))


def test_parsed_terms_equal_built_terms():
    A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
    assert rg.parse("A @ (x + y)", A=A, x=x, y=y) == A @ (x + y)


@pytest.mark.parametrize(
    "text, message",
    [
        ("x.__class__", "attribute '__class__' is not allowed"),
        ("__import__('os').system('true')", "'system' is not a known function"),
        ("__import__('os')", "'__import__' is not a known function"),
        ("open('f')", "'open' is not a known function"),
        ("(lambda: 1)()", "lambda"),
        ("z + x", "unknown name 'z'"),
        ("x + 'a'", "literal 'a' is not a number"),
        ("x + 1e400", "too large"),
        ("x + 123456789012345678901234567890", "too large"),
        ("x[y]", "an index must be an integer"),
        ("[x for x in y]", "ListComp is not allowed"),
        ("x if y else s", "IfExp is not allowed"),
        ("x < y < s", "chained comparisons are not allowed"),
        ("x is y", "Is is not allowed"),
        ("not x", "operator Not is not allowed"),
        ("exp(x, y)", "exp takes 1"),
        ("sum(x, axis=y)", "the axis of sum must be an integer"),
        ("exp(x, out=y)", "keyword 'out'"),
        ("x +", "invalid syntax"),
        ("A @ s", "ndim 0"),
        ("True + x", "not a number"),
    ],
)
def test_rejected_with_a_clear_message(text, message):
    with pytest.raises(rg.ParseError, match=message):
        rg.parse(text, **SYMS)


def test_nothing_is_evaluated():
    # a huge power is built as a term, never computed
    t = rg.parse("10 ** 10 ** 10 + s", s=rg.scalar)
    assert rg.pprint(t) == "((10 ** (10 ** 10)) + s)"


def test_too_long_or_too_deep():
    with pytest.raises(rg.ParseError, match="limit"):
        rg.parse("x" + " + x" * 30_000, x=rg.vector)
    with pytest.raises(rg.ParseError, match="nested"):
        rg.parse("(" * 5000 + "x" + ")" * 5000, x=rg.vector)
    with pytest.raises(rg.ParseError, match="nested too deeply"):
        rg.parse("-" * 50_000 + "x", x=rg.vector)


def test_symbols_given_as_objects_must_match_their_names():
    with pytest.raises(rg.ParseError, match="named 'y'"):
        rg.parse("x", x=rg.vector("y"))
