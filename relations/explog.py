"""exp/log identities.

>>> import relgraph as rg
>>> from kanren import run, var
>>> a, b = rg.vector("a"), rg.vector("b")
>>> q = var()
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, exp_addo(rg.exp(a + b), q))]
['(exp(a) * exp(b))']
>>> [rg.pprint(rg.as_term(r)) for r in run(0, q, exp_addo(q, rg.exp(a) * rg.exp(b)))]
['exp(a + b)', 'exp(b + a)']
"""

from __future__ import annotations

from etuples import etuple
from kanren import eq, lall
from unification import vars as lvars

from relations.arith import commo
from relations.databases import register, specialize_db, stabilize_db
from relations.tags import EXPAND, FAST_RUN, STABILIZE, UNSAFE
from relgraph import ops
from relgraph.ops import add, exp, log, mul
from relgraph.rewriting.rules import rule
from relgraph.terms.lvars import lvar

__all__ = ["log_expo", "exp_logo", "exp_addo", "log_mulo"]


_x = lvar("x")
log_expo = rule(log(exp(_x)), 0 + _x, name="log_expo")
log_expo.__doc__ = """``log(exp(x)) -> 0 + x``.  Exact, and stabler: ``exp(x)`` overflows for
``x > 709``.

The ``0 +`` gives 0.0 at ``x = -0.0``, as ``log(1.0)`` does; ``add_zeroo`` drops it
wherever ``x`` is never -0.0."""
register(stabilize_db, STABILIZE, FAST_RUN, position=1, tracks=(ops.log,))(log_expo)

exp_logo = rule(exp(log(_x)), _x, name="exp_logo")
exp_logo.__doc__ = """``exp(log(x)) -> x``.  Unsafe: for ``x < 0`` the left side is NaN."""
register(stabilize_db, STABILIZE, UNSAFE, position=15, tracks=(ops.exp,))(exp_logo)


@register(specialize_db, EXPAND, produces=(ops.mul,), position=12, tracks=(ops.exp,))
def exp_addo(in_lv, out_lv):
    """``exp(a + b) <-> exp(a) * exp(b)`` (reversed, two exps become one)."""
    a, b = lvars(2)
    return lall(
        eq(in_lv, etuple(exp, etuple(add, a, b))),
        commo(mul, etuple(exp, a), etuple(exp, b), out_lv),
    )


@register(
    stabilize_db, STABILIZE, UNSAFE, EXPAND, produces=(ops.add,), position=18, tracks=(ops.log,)
)
def log_mulo(in_lv, out_lv):
    """``log(a * b) <-> log(a) + log(b)``.  Unsafe: for ``a, b < 0`` only the left is a number."""
    a, b = lvars(2)
    return lall(
        eq(in_lv, etuple(log, etuple(mul, a, b))),
        commo(add, etuple(log, a), etuple(log, b), out_lv),
    )
