"""relgraph's standard library of relations, registered in tagged databases.

``optdb`` is the default database: a :class:`~relgraph.rewriting.db.SequenceDB` running,
in PyTensor's order, the equilibrium databases ``canonicalize``, ``stabilize``,
``specialize`` and ``linalg``, with ``canonicalize`` once more after ``stabilize``
(as the stage ``recanonicalize``).  ``optdb.query(include=["fast_run"])`` is the
default pipeline; relations tagged ``unsafe`` are selected only when a query
names ``unsafe``.

>>> import relgraph as rg
>>> from relations import optdb
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> rg.pprint(rg.rewrite(A @ (x + y), optdb.query(include=["linalg"])))
'((A @ x) + (A @ y))'
>>> rg.pprint(rg.rewrite(rg.log(1 + x * 1) + (y - y * 1), optdb.query(include=["fast_run"])))
'((0 * y) + log1p(x))'
>>> rg.pprint(rg.rewrite(y * x + x * y, optdb.query(include=["canonicalize"])))
'(2 * x * y)'
"""

from relations import arith, explog, linalg, products, reductions, stabilize
from relations.tags import (
    CANONICALIZE,
    EXPAND,
    FACTOR,
    FAST_RUN,
    LINALG,
    REASSOCIATE,
    SPECIALIZE,
    STABILIZE,
    TAGS,
    UNSAFE,
)
from relgraph import ops
from relgraph.rewriting.db import EquilibriumDB, SequenceDB
from relgraph.rewriting.library import register_library
from relgraph.rewriting.relation import reverse

__all__ = ["optdb", "canonicalize_db", "stabilize_db", "specialize_db", "linalg_db"]

C, S, SP, L, F = CANONICALIZE, STABILIZE, SPECIALIZE, LINALG, FAST_RUN
RECANONICALIZE = "recanonicalize"
REDUCTIONS = (ops.sum, ops.max, ops.min, ops.prod, ops.mean)
add, mul, sub, div, pow = ops.add, ops.mul, ops.sub, ops.true_div, ops.pow
neg, exp, log, sqrt, sum_, T, dot = (
    ops.neg,
    ops.exp,
    ops.log,
    ops.sqrt,
    ops.sum,
    ops.transpose,
    ops.dot,
)

# name, relation, tags, head Ops it rewrites (None: any).  Order matters: at a
# node, the first relation that applies wins.
CANONICALIZE_RELATIONS = [
    ("reassociateo", arith.reassociateo, (C, REASSOCIATE), (add, mul)),
    ("ac_normalo", arith.ac_normalo, (C, F), (add, mul)),
    ("constant_foldo", arith.constant_foldo, (C, F), None),
    ("add_zeroo", arith.add_zeroo, (C, F), (add,)),
    ("mul_oneo", arith.mul_oneo, (C, F), (mul,)),
    ("sub_zeroo", arith.sub_zeroo, (C, F), (sub,)),
    ("div_oneo", arith.div_oneo, (C, F), (div,)),
    ("pow_oneo", arith.pow_oneo, (C, F), (pow,)),
    ("pow_zeroo", arith.pow_zeroo, (C, F), (pow,)),
    ("neg_nego", arith.neg_nego, (C, F), (neg,)),
    ("sub_addo", arith.sub_addo, (C, F), (sub,)),
    ("neg_addo", arith.neg_addo, (C, F), (neg,)),
    ("neg_mulo", arith.neg_mulo, (C, F), (neg,)),
    ("collect_termso", arith.collect_termso, (C, F), (add,)),
    ("pow_mulo", arith.pow_mulo, (C, F), (mul,)),
    ("mul_nego", products.mul_nego, (C, F), (mul,)),
    ("abs_mulo", products.abs_mulo, (C, F), (mul, div)),
    ("abs_nego", products.abs_nego, (C,), (ops.abs,)),
    ("div_consto", products.div_consto, (C, F), (div,)),
    ("exp_mulo", products.exp_mulo, (C, F), (mul,)),
    ("exp_divo", products.exp_divo, (C, F), (div,)),
    ("sign_div_consto", products.sign_div_consto, (C, F), (ops.sign,)),
    ("sum_sumo", reductions.sum_sumo, (C, F), (sum_,)),
    ("sum_addo", reductions.sum_addo, (C,), (add,)),
    ("same_choiceo", reductions.same_choiceo, (C, F), (ops.maximum, ops.minimum, ops.where)),
    ("reduce_scalaro", reductions.reduce_scalaro, (C, F), REDUCTIONS),
    ("reciprocal_reciprocalo", products.reciprocal_reciprocalo, (C, F), (div, ops.reciprocal)),
    ("transpose_transposeo", linalg.transpose_transposeo, (C, L, F), (T,)),
    ("transpose_lowo", linalg.transpose_lowo, (C, L, F), (T,)),
    ("sum_scaleo", linalg.sum_scaleo, (C, F), (sum_,)),
    ("mul_zeroo", arith.mul_zeroo, (C, UNSAFE), (mul,)),
    ("add_zero_termo", arith.add_zero_termo, (C, UNSAFE), (add,)),
    ("div_selfo", arith.div_selfo, (C, UNSAFE), (div,)),
    ("mul_div_cancelo", arith.mul_div_cancelo, (C, UNSAFE), (div,)),
    ("pow_powo", arith.pow_powo, (C, UNSAFE), (pow,)),
    ("div_divo", arith.div_divo, (C, UNSAFE), (div,)),
    ("cancelo", products.cancelo, (C, UNSAFE), (mul, div)),
    ("zero_divo", products.zero_divo, (C, UNSAFE), (div,)),
    ("div_abso", products.div_abso, (C, UNSAFE), (div,)),
    ("sum_scale_anyo", linalg.sum_scale_anyo, (C, UNSAFE), (sum_,)),
]
STABILIZE_RELATIONS = [
    ("log_expo", explog.log_expo, (S, F), (log,)),
    ("logsumexpo", stabilize.logsumexpo, (S, F), (log,)),
    ("log_add_expo", stabilize.log_add_expo, (S, F), (log,)),
    ("log_diff_expo", stabilize.log_diff_expo, (S, F), (log,)),
    ("log1mexpo", stabilize.log1mexpo, (S, F), (log, ops.log1p)),
    ("log_sigmoido", stabilize.log_sigmoido, (S, F), (log,)),
    ("log1po", stabilize.log1po, (S, F), (log,)),
    ("softpluso", stabilize.softpluso, (S, F), (ops.log1p,)),
    ("log1m_sigmoido", stabilize.log1m_sigmoido, (S, F), (ops.log1p,)),
    ("log1p_expm1o", stabilize.log1p_expm1o, (S, F), (ops.log1p,)),
    ("sigmoido", stabilize.sigmoido, (S, F), (div, ops.reciprocal)),
    ("one_minus_sigmoido", stabilize.one_minus_sigmoido, (S, F), (add,)),
    ("expm1o", stabilize.expm1o, (S, F), (sub, add)),
    ("sqrt_squareo", stabilize.sqrt_squareo, (S, F), (sqrt,)),
    ("exp_logo", explog.exp_logo, (S, UNSAFE), (exp,)),
    ("log_divo", stabilize.log_divo, (S, UNSAFE), (log,)),
    ("logsumexp_shifto", stabilize.logsumexp_shifto, (S, UNSAFE), (add,)),
    ("log_mulo", explog.log_mulo, (S, UNSAFE, EXPAND), (log,)),
]
# Specialize replaces subterms of sorted sums and products: it keeps the AC normal form.
SPECIALIZE_RELATIONS = [
    ("ac_normalo", arith.ac_normalo, (SP, F), (add, mul)),
    ("add_nego", reverse(arith.sub_addo), (SP, F), (add,)),
    ("mul_invo", reverse(arith.div_mul_invo), (SP, F), (mul,)),
    ("mul_neg_oneo", arith.mul_neg_oneo, (SP, F), (mul,)),
    ("pow_twoo", reverse(arith.mul_selfo), (SP, F), (pow,)),
    ("pow_halfo", arith.pow_halfo, (SP, UNSAFE), (pow,)),
    ("factoro", reverse(arith.distributeo), (SP, FACTOR, UNSAFE), (add,)),
    ("dot_factoro", reverse(linalg.dot_distribute_sameo), (SP, FACTOR, UNSAFE), (add,)),
    ("cheaper_dot_ordero", linalg.cheaper_dot_ordero, (SP, L, F), (dot,)),
    ("div_mul_invo", arith.div_mul_invo, (EXPAND,), (div,)),
    ("distributeo", arith.distributeo, (EXPAND,), (mul,)),
    ("exp_addo", explog.exp_addo, (EXPAND,), (exp,)),
]
LINALG_RELATIONS = [
    ("dot_distributeo", linalg.dot_distribute_sameo, (L, EXPAND), (dot,)),
    ("dot_scaleo", linalg.dot_scaleo, (L, F), (dot,)),
    ("dot_scale_anyo", linalg.dot_scale_anyo, (L, UNSAFE), (dot,)),
    ("transpose_doto", linalg.transpose_doto, (L,), (T,)),
    ("sum_doto", linalg.sum_doto, (L,), (sum_,)),
]


# Relations that handle sums and products of any length themselves: not tried on
# runs of arguments (the driver's windows).
WHOLE = {
    "ac_normalo", "reassociateo", "constant_foldo", "add_zeroo", "mul_oneo", "mul_zeroo",
    "mul_div_cancelo", "add_zero_termo", "mul_neg_oneo", "collect_termso", "pow_mulo",
    "mul_nego", "abs_mulo", "cancelo", "exp_mulo", "expm1o",
}  # fmt: skip


def _equilibrium(name: str, relations: list) -> EquilibriumDB:
    db = EquilibriumDB(name, opt_in=[UNSAFE, REASSOCIATE])
    for rel_name, relation, tags, tracks in relations:
        db.register(
            rel_name,
            relation,
            *tags,
            tracks=tracks,
            windows=rel_name not in WHOLE,
            # A relation that does not carry its stage's tag (the expanding twin of a
            # specialize relation) is selected by its own tags only.
            use_db_name_as_tag=name in tags,
        )
    return db


canonicalize_db = _equilibrium(CANONICALIZE, CANONICALIZE_RELATIONS)
stabilize_db = _equilibrium(STABILIZE, STABILIZE_RELATIONS)
specialize_db = _equilibrium(SPECIALIZE, SPECIALIZE_RELATIONS)
linalg_db = _equilibrium(LINALG, LINALG_RELATIONS)

optdb = SequenceDB("optdb")
for _position, _db in enumerate((canonicalize_db, stabilize_db, specialize_db, linalg_db), 1):
    # The query is applied again within each stage; a stage's name selects all of it.
    optdb.register(_db.name, _db, position=_position)
# Stabilisations leave terms canonicalize would normalise further (log(exp(-z)) is -z
# inside a product): canonicalize runs again before specialize, so the pipeline's
# output is its own fixpoint.
optdb.register(RECANONICALIZE, canonicalize_db, position=2.5)

# The engine's front end (rg.jit, the command line) finds its default query here.
register_library("relations", optdb, TAGS)
