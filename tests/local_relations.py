"""A small relation set for the engine's own tests, so that they test the engine and
not the standard library (``relations``), as PyTensor's ``tests/graph/utils.py``
dummy Ops do for its graph tests.

``dot_distributeo`` is the relation of the Aesara/PyTensor documentation, written as
it is there but with ``zipo`` for kanren's ``mapo`` (one conjunction once the sum's
length is known: linear in it); the rest are rules or a few lines of kanren.
``localdb`` arranges them in tagged databases as a library would.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
from etuples import etuple
from kanren import conso, eq, heado, lall, tailo
from kanren.assoccomm import assoc_flatten
from unification import reify, var, vars as lvars

import relgraph as rg
from relgraph.logic.goals import zipo
from relgraph.terms.term import Term

x_, y_, z_ = rg.lvars("x_ y_ z_")
A_ = rg.lvar("A_", ndim=2)


@rg.reassociates  # a distribution regroups float sums
def dot_distributeo(in_lv: Any, out_lv: Any) -> Callable:
    """Relate ``A @ (a + b + ...)`` and ``(A @ a) + (A @ b) + ...``."""
    A_lv, add_term_lv, add_cdr_lv, dot_cdr_lv, add_flat_lv = lvars(5)
    return lall(
        eq(in_lv, etuple(rg.dot, A_lv, add_term_lv)),
        heado(rg.add, add_term_lv),
        assoc_flatten(add_term_lv, add_flat_lv),
        tailo(add_cdr_lv, add_flat_lv),
        conso(rg.add, dot_cdr_lv, out_lv),
        zipo(lambda x, y: conso(rg.dot, etuple(A_lv, x), y), add_cdr_lv, dot_cdr_lv),
    )


@rg.forward_only
def constant_foldo(in_lv: Any, out_lv: Any) -> Callable:
    """An Op applied to numbers is its value: ``2 * 3 -> 6``."""

    def goal(state: Any) -> Any:
        t = reify(in_lv, state)
        if type(t) is not Term or not all(_is_number(a) for a in t.args):
            return iter(())
        with np.errstate(all="ignore"):
            value = t.op(*t.args)
        if not np.isfinite(value):
            return iter(())
        return eq(out_lv, value)(state)

    return goal


def _is_number(a: Any) -> bool:
    return isinstance(a, (int, float, np.number)) and not isinstance(a, bool)


log_expo = rg.rule(rg.log(rg.exp(x_)), x_, name="log_expo")
exp_logo = rg.rule(rg.exp(rg.log(x_)), x_, name="exp_logo")  # unsafe: x < 0
neg_nego = rg.rule(-(-x_), x_, name="neg_nego")
mul_oneo = rg.rule(x_ * 1.0, x_, name="mul_oneo")
add_zeroo = rg.rule(x_ + 0.0, x_, name="add_zeroo")
transpose_transposeo = rg.rule(A_.T.T, A_, name="transpose_transposeo")
transpose_doto = rg.rule((A_ @ x_).T, x_.T @ A_.T, name="transpose_doto")
mul_neg_oneo = rg.rule(x_ * -1.0, -x_, name="mul_neg_oneo")


def _local_db() -> rg.SequenceDB:
    canonicalize = rg.EquilibriumDB("canonicalize", opt_in=["unsafe"])
    canonicalize.register("constant_foldo", constant_foldo, "fast_run", tracks=None)
    for rule in (neg_nego, mul_oneo, add_zeroo, transpose_transposeo):
        canonicalize.register(rule.__name__, rule, "fast_run")
    canonicalize.register("exp_logo", exp_logo, "unsafe")
    stabilize = rg.EquilibriumDB("stabilize")
    stabilize.register("log_expo", log_expo, "fast_run")
    linalg = rg.EquilibriumDB("linalg")
    linalg.register("dot_distributeo", dot_distributeo, "expand", tracks=[rg.dot])
    linalg.register("transpose_doto", transpose_doto)
    db = rg.SequenceDB("localdb")
    for position, stage in enumerate((canonicalize, stabilize, linalg), 1):
        db.register(stage.name, stage, position=position)
    return db


#: canonicalize (folding, identities; exp_logo is unsafe), stabilize (log_expo),
#: linalg (dot_distributeo, tagged expand; transpose_doto), in that order.
localdb = _local_db()

__all__ = [
    "dot_distributeo", "constant_foldo", "log_expo", "exp_logo", "neg_nego", "mul_oneo",
    "add_zeroo", "transpose_transposeo", "transpose_doto", "mul_neg_oneo", "localdb", "var",
]  # fmt: skip
