"""The standard library's relations, each with one case: an input, what it rewrites
to, and whether the relation runs backward (shared by the library's tests and
``rg.check``'s)."""

import math

import numpy as np

import relgraph as rg
from relations import canonicalize_db, linalg_db, specialize_db, stabilize_db
from relations.logsumexp import stable_log_softmax

x, y, z = rg.vector("x"), rg.vector("y"), rg.vector("z")
i, j = rg.vector("i", "int64"), rg.vector("j", "int64")
a, b = rg.scalar("a"), rg.scalar("b")
A, B = rg.matrix("A"), rg.matrix("B")
T = rg.Term
f64 = np.float64
X3, Y3 = rg.vector("x3", shape=3), rg.vector("y3", shape=3)  # sum_addo needs shapes
K = rg.matrix("k", "int64")  # indices along an axis of A

# name: (input, output, runs backward).  "Backward" means that run(q, rel(q, output))
# finds the input; forward-only relations (folding, cancelling) have no backward answer.
CASES = {
    "ac_normalo": (j * (i * j), rg.mul(i, j, j), True),  # integers: exact, flattened
    "reassociateo": (y * (x * y), rg.mul(x, y, y), True),  # floats: opt-in
    "constant_foldo": (T((rg.add, 2.0, 3.5)), f64(5.5), False),
    "add_zeroo": (i + 0, i, True),  # floats: 0.0 at x = -0.0
    "add_float_zeroo": (x + 0, x, True),
    "mul_oneo": (x * 1, x, True),
    "sub_zeroo": (x - 0, x, True),
    "div_oneo": (x / 1, x, True),
    "pow_oneo": (x**1, x, True),
    "pow_zeroo": (a**0, f64(1.0), False),
    "neg_nego": (-(-x), x, True),
    "sub_addo": (x - y, x + -y, True),
    "neg_addo": (-(i + j), -i + -j, True),  # floats: -0.0 at x = -y
    "neg_add_floato": (-(x + y), -x + -y, True),
    "neg_mulo": (-(2 * x), -2 * x, True),
    "collect_termso": (x + x, 2 * x, True),
    "pow_mulo": (x * x, x**2, True),
    "mul_nego": (x * -y, -(x * y), True),
    "abs_mulo": (abs(x) * abs(y), abs(x * y), True),
    "abs_nego": (abs(-x), abs(x), True),
    "abs_neg_sumo": (abs(-x + -y), abs(x + y), True),
    "div_consto": (2 * x / 2, x, False),
    "exp_mulo": (rg.exp(x) * rg.exp(y), rg.exp(x + y), True),
    "exp_divo": (rg.exp(x) / rg.exp(y), rg.exp(x + -y), True),
    "sign_div_consto": (rg.sign(x / 3.0), rg.sign(x), False),
    "sum_sumo": (rg.sum(rg.sum(A, axis=0)), rg.sum(A), True),
    "sum_addo": (rg.sum(X3) + rg.sum(Y3), rg.sum(X3 + Y3), True),
    "same_choiceo": (rg.maximum(x, x), x, True),
    "cancelo": ((x * y) / (x * z), y / z, False),
    "reduce_scalaro": (rg.max(a), a, False),
    "reshape_keepdimso": (
        rg.reshape(rg.max(A, axis=1), (-1, 1)),
        rg.max(A, axis=1, keepdims=True),
        False,
    ),
    "take_elementwiseo": (
        rg.take_along_axis(A - rg.max(A, axis=1, keepdims=True), K, 1),
        rg.take_along_axis(A, K, 1) - rg.max(A, axis=1, keepdims=True),
        False,
    ),
    "reciprocal_reciprocalo": (1 / (1 / x), x, True),
    "zero_divo": (0 / a, f64(0.0), False),
    "div_abso": (x / abs(x), rg.sign(x), True),
    "log_divo": (rg.log(x / 4.0), rg.log(x) - math.log(4.0), False),
    "sum_scale_anyo": (rg.sum(a * x), a * rg.sum(x), True),
    "dot_scale_anyo": ((a * A) @ x, a * (A @ x), True),
    "div_divo": ((x / y) / a, x / (y * a), True),
    "transpose_transposeo": (A.T.T, A, True),
    "transpose_lowo": (x.T, x, True),
    "sum_scaleo": (rg.sum(2 * x), 2 * rg.sum(x), True),
    "mul_zeroo": (a * 0, f64(0.0), False),
    "add_zero_termo": (0 * x + y, y, False),
    "div_selfo": (a / a, f64(1.0), False),
    "mul_div_cancelo": ((x * y) / y, x, False),
    "pow_powo": ((x**2) ** 3, x**6, False),
    "log_expo": (rg.log(rg.exp(x)), 0 + x, True),
    "log1po": (rg.log(1 + x), rg.log1p(0 + x), True),
    "logsumexpo": (rg.log(rg.sum(rg.exp(A), axis=1)), rg.logsumexp(A, axis=1), True),
    "logsumexp_shifto": (
        rg.logsumexp(A - rg.max(A, 1, True), 1, True) + rg.max(A, 1, True),
        rg.logsumexp(A, 1, True),
        True,
    ),
    "log_add_expo": (rg.log(rg.exp(x) + rg.exp(y)), rg.logaddexp(x, y), True),
    "log_diff_expo": (
        rg.log(rg.exp(x) + -rg.exp(y)),
        0 + rg.where(rg.equal(y, float("-inf")), x, x + rg.log1mexp(y - x)),
        True,
    ),
    "log1mexpo": (rg.log1p(-rg.exp(x)), rg.log1mexp(x), True),
    "log_sigmoido": (rg.log(rg.sigmoid(x)), 0 + -rg.softplus(-x), True),
    "softpluso": (rg.log1p(rg.exp(x)), rg.softplus(x), True),
    "log1m_sigmoido": (rg.log1p(-rg.sigmoid(x)), -rg.softplus(x), True),
    "log1p_expm1o": (rg.log1p(rg.expm1(x)), x, True),
    "sigmoido": (1 / (1 + rg.exp(-x)), rg.sigmoid(x), True),
    "one_minus_sigmoido": (1 + -rg.sigmoid(x), rg.sigmoid(-x), True),
    "sigmoid_quotiento": (
        rg.exp(x) / (1 + rg.exp(x)),
        rg.where(x < np.inf, rg.sigmoid(x), x - x),
        True,
    ),
    "expm1o": (rg.exp(x) + -1, rg.expm1(0 + x), True),
    "sqrt_squareo": (rg.sqrt(x**2), abs(x), True),
    "exp_logo": (rg.exp(rg.log(x)), x, True),
    "log_mulo": (rg.log(x * y), rg.log(x) + rg.log(y), True),
    "add_nego": (x + -y, x - y, True),
    "mul_invo": (x * y**-1, x / y, True),
    "mul_neg_oneo": (-1 * x, -x, True),
    "pow_twoo": (x**2, x * x, True),
    "pow_halfo": (x**0.5, rg.sqrt(x), True),
    "factoro": (x * y + x * z, x * (y + z), True),
    "cheaper_dot_ordero": ((A @ B) @ x, A @ (B @ x), True),
    "div_mul_invo": (x / y, x * y**-1, True),
    "distributeo": (x * (y + z), x * y + x * z, True),
    "exp_addo": (rg.exp(x + y), rg.exp(x) * rg.exp(y), True),
    "dot_distributeo": (A @ (x + y), A @ x + A @ y, True),
    "dot_factoro": (A @ x + A @ y, A @ (x + y), True),
    "dot_scaleo": ((2 * A) @ x, 2 * (A @ x), True),
    "transpose_doto": ((A @ B).T, B.T @ A.T, True),
    "sum_doto": (rg.sum(A @ x), rg.sum(A, 0) @ x, True),
    "log_softmaxo": (
        rg.log(rg.exp(A) / rg.sum(rg.exp(A), axis=1, keepdims=True)),
        stable_log_softmax(A, 1, True),
        False,
    ),
    "log_softmax_allo": (rg.log(rg.exp(x) / rg.sum(rg.exp(x))), stable_log_softmax(x), False),
    "one_minus_ndtro": (1 + -rg.ndtr(x), rg.ndtr(-x), True),
    "log_ndtro": (rg.log(rg.ndtr(x)), 0 + rg.log_ndtr(x), True),
    "inv_solveo": (rg.inv(A) @ x, rg.solve(A, x), True),
    "log_deto": (
        rg.log(rg.det(A)),
        rg.where(rg.less(rg.ops.det_sign(A), 0), math.nan, rg.ops.logabsdet(A)),
        True,
    ),
    "solve_choleskyo": (
        rg.solve(rg.cholesky(A @ A.T), x),  # A @ A.T: positive definite
        rg.solve_triangular(rg.cholesky(A @ A.T), x, lower=True),
        True,
    ),
    "solve_cholesky_To": (
        rg.solve(rg.cholesky(A @ A.T).T, x),
        rg.solve_triangular(rg.cholesky(A @ A.T).T, x),
        True,
    ),
}
DATABASES = (canonicalize_db, stabilize_db, specialize_db, linalg_db)
RULES = {e.name: (db, e) for db in DATABASES for e in db.entries()}
