"""Numerical functions as they are written in real code, each with where it comes from.

Each is plain numpy (``np``) and scipy (``special``, ``norm``, ``linalg``) code, unchanged
from the way its source writes it (variable names shortened); ``INPUTS`` gives each one's
arguments for ``n`` rows.  ``bench_corpus.py`` runs them under numpy, ``rg.jit`` and
``jax.jit`` (this module's source executed again with ``np`` bound to ``jax.numpy``).
"""

import numpy as np
import scipy.linalg as linalg
import scipy.special as special
from scipy.stats import norm

# --- scikit-learn ---------------------------------------------------------------------


def log_logistic(X):
    """sklearn.utils.extmath.log_logistic: log(1 / (1 + exp(-X)))."""
    return -np.logaddexp(0, -X)


def softmax(X):
    """sklearn.utils.extmath.softmax."""
    max_prob = np.max(X, axis=1).reshape((-1, 1))
    X = X - max_prob
    X = np.exp(X)
    sum_prob = np.sum(X, axis=1).reshape((-1, 1))
    return X / sum_prob


def logistic_loss(w, X, y):
    """sklearn.linear_model._logistic (the loss of older versions): -sum log_logistic(y z)."""
    z = X @ w
    return -np.sum(-np.logaddexp(0, -y * z))


def huber(y, p, epsilon):
    """sklearn's HuberRegressor loss, elementwise."""
    r = np.abs(y - p)
    return np.where(r <= epsilon, 0.5 * r**2, epsilon * r - 0.5 * epsilon**2)


def rbf_kernel(X, Y, gamma):
    """sklearn.metrics.pairwise.rbf_kernel through euclidean_distances."""
    XX = np.sum(X * X, axis=1)[:, np.newaxis]
    YY = np.sum(Y * Y, axis=1)[np.newaxis, :]
    K = -2 * (X @ Y.T) + XX + YY
    K = np.maximum(K, 0)
    return np.exp(-gamma * K)


def cosine_similarity(X, Y):
    """sklearn.metrics.pairwise.cosine_similarity (normalize, then a product)."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    return Xn @ Yn.T


def r2_score(y, p):
    """sklearn.metrics.r2_score for one output."""
    numerator = ((y - p) ** 2).sum(axis=0)
    denominator = ((y - np.average(y, axis=0)) ** 2).sum(axis=0)
    return 1 - numerator / denominator


def mean_squared_log_error(y, p):
    """sklearn.metrics.mean_squared_log_error."""
    return np.mean((np.log1p(y) - np.log1p(p)) ** 2)


def accuracy(logits, labels):
    """The accuracy of a classifier's scores (every training loop)."""
    return np.mean(np.argmax(logits, axis=1) == labels)


def standard_scale(X):
    """sklearn.preprocessing.StandardScaler's transform, fitted on X."""
    return (X - X.mean(axis=0)) / X.std(axis=0)


def minmax_scale(X):
    """sklearn.preprocessing.minmax_scale."""
    return (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))


def normalize_rows(X):
    """sklearn.preprocessing.normalize (l2, rows)."""
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def ridge_closed_form(X, y, alpha):
    """sklearn's _solve_cholesky path of Ridge: solve (X'X + alpha I) w = X'y."""
    n_features = X.shape[1]
    A = X.T @ X + alpha * np.eye(n_features)
    return np.linalg.solve(A, X.T @ y)


# --- scipy ----------------------------------------------------------------------------


def norm_logpdf(x, loc, scale):
    """scipy.stats.norm._logpdf after standardising."""
    y = (x - loc) / scale
    return -(y**2) / 2.0 - np.log(np.sqrt(2 * np.pi)) - np.log(scale)


def norm_cdf_ratio(x):
    """scipy.stats.norm: the Mills ratio sf / pdf through ndtr."""
    return special.ndtr(-x) / np.exp(-(x**2) / 2) * np.sqrt(2 * np.pi)


def logsumexp_rows(a):
    """scipy.special.logsumexp(a, axis=1) as it is written (shift by the maximum)."""
    a_max = np.max(a, axis=1, keepdims=True)
    tmp = np.exp(a - a_max)
    s = np.sum(tmp, axis=1, keepdims=True)
    return (np.log(s) + a_max)[:, 0]


def kl_div(p, q):
    """scipy.special.rel_entr summed: sum p log(p / q)."""
    return np.sum(p * np.log(p / q))


def entropy(p):
    """scipy.stats.entropy of normalised probabilities."""
    p = p / np.sum(p)
    return -np.sum(np.where(p > 0, p * np.log(p), 0.0))


def trapezoid(y, dx):
    """scipy.integrate.trapezoid with a uniform step."""
    return np.sum((y[1:] + y[:-1]) * dx / 2.0)


def log_gamma_poisson(k, mu):
    """scipy.stats.poisson.logpmf: k log(mu) - mu - gammaln(k + 1)."""
    return special.xlogy(k, mu) - mu - special.gammaln(k + 1)


# --- PyMC logp functions (the expressions of pymc.distributions.continuous) ------------


def normal_logp(x, mu, sigma):
    """pymc Normal.logp."""
    return -0.5 * ((x - mu) / sigma) ** 2 - np.log(np.sqrt(2.0 * np.pi)) - np.log(sigma)


def exponential_logp(x, lam):
    """pymc Exponential.logp."""
    return np.log(lam) - lam * x


def laplace_logp(x, mu, b):
    """pymc Laplace.logp."""
    return -np.log(2 * b) - np.abs(x - mu) / b


def logistic_logp(x, mu, s):
    """pymc Logistic.logp."""
    z = (x - mu) / s
    return -z - np.log(s) - 2.0 * np.log1p(np.exp(-z))


def halfnormal_logp(x, sigma):
    """pymc HalfNormal.logp for x >= 0."""
    return 0.5 * np.log(2.0 / np.pi) - np.log(sigma) - 0.5 * (x / sigma) ** 2


def studentt_logp(x, nu, mu, sigma):
    """pymc StudentT.logp."""
    lam = 1.0 / sigma**2
    return (
        special.gammaln((nu + 1.0) / 2.0) + 0.5 * np.log(lam / (nu * np.pi))
        - special.gammaln(nu / 2.0) - (nu + 1.0) / 2.0 * np.log1p(lam * (x - mu) ** 2 / nu)
    )  # fmt: skip


def mixture_loglik(x, w, mu, sigma):
    """A Gaussian mixture's log-likelihood (sklearn GaussianMixture, diagonal, 1-d)."""
    z = (x[:, None] - mu[None, :]) / sigma[None, :]
    log_prob = -0.5 * z**2 - np.log(sigma) - 0.5 * np.log(2 * np.pi) + np.log(w)
    return np.sum(np.log(np.sum(np.exp(log_prob), axis=1)))


def mvn_logpdf(x, mean, cov):
    """scipy.stats.multivariate_normal.logpdf of one point, by hand."""
    d = x.shape[0]
    sign, logdet = np.linalg.slogdet(cov)
    dev = x - mean
    maha = dev @ np.linalg.solve(cov, dev)
    return -0.5 * (d * np.log(2 * np.pi) + logdet + maha)


def multinomial_loss(w, X, Y):
    """sklearn.linear_model._logistic._multinomial_loss (as of 1.0): logsumexp from scipy."""
    p = X @ w
    p = p - special.logsumexp(p, axis=1)[:, None]
    return -(Y * p).sum()


def gaussian_nll(y, mu, sigma):
    """A Gaussian negative log-likelihood through scipy.stats (statsmodels' and many
    notebooks' way)."""
    return -norm.logpdf(y, loc=mu, scale=sigma).sum()


def probit_loglike(params, X, y):
    """statsmodels.discrete.discrete_model.Probit.loglike (its cdf is norm.cdf)."""
    q = 2 * y - 1
    return np.sum(np.log(np.clip(norm.cdf(q * np.dot(X, params)), 1e-300, 1)))


def gp_posterior_mean(K, y, K_trans):
    """sklearn.gaussian_process.GaussianProcessRegressor: fit's Cholesky solve, predict's
    mean."""
    L = linalg.cholesky(K, lower=True)
    alpha = linalg.cho_solve((L, True), y)
    return K_trans @ alpha


def attention_weights(scores):
    """Attention weights with scipy.special.softmax over the keys."""
    return special.softmax(scores, axis=-1)


# --- deep learning -----------------------------------------------------------------------


def gelu(x):
    """GELU, tanh approximation (Hendrycks and Gimpel; BERT's code)."""
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, eps):
    """Layer normalisation over the last axis."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def mlp(X, W1, b1, W2):
    """A two-layer perceptron's forward pass."""
    return np.tanh(X @ W1 + b1) @ W2


def cross_entropy(logits, labels):
    """Softmax cross-entropy with integer labels, written the naive way."""
    n = logits.shape[0]
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(n), labels])


def leaky_relu(x, slope):
    """Leaky ReLU."""
    return np.where(x > 0, x, slope * x)


def bilinear(X, A):
    """x_i' A x_i for every row, with einsum."""
    return np.einsum("ij,jk,ik->i", X, A, X)


# --- finance and signal processing ---------------------------------------------------------


def black_scholes(S, K, T, r, sigma):
    """The Black-Scholes call price (scipy.stats.norm.cdf as ndtr)."""
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * special.ndtr(d1) - K * np.exp(-r * T) * special.ndtr(d2)


def log_returns(prices):
    """Log returns of a price series."""
    return np.diff(np.log(prices))


def cumulative_returns(r):
    """Compounded returns."""
    return np.cumprod(1 + r) - 1


def moving_average(x, w):
    """A moving average through cumsum (the numpy cookbook's)."""
    c = np.cumsum(x)
    return (c[w:] - c[:-w]) / w


def second_difference(x, h):
    """The central second difference of samples."""
    return (x[2:] - 2 * x[1:-1] + x[:-2]) / h**2


def median_filter_3(x):
    """A 3-point median filter (the signal-processing cookbook's)."""
    return np.median(np.stack([x[:-2], x[1:-1], x[2:]]), axis=0)


# --- geometry -------------------------------------------------------------------------


def haversine(lat1, lon1, lat2, lon2):
    """The haversine great-circle distance (radians)."""
    dlat, dlon = lat2 - lat1, lon2 - lon1
    a = np.sin(dlat / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2) ** 2
    return 2 * np.arcsin(np.sqrt(a))


def angle_between(u, v):
    """The angle between the rows of u and v."""
    cos = np.sum(u * v, axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
    return np.arccos(np.clip(cos, -1.0, 1.0))


def polar(x, y):
    """Cartesian to polar coordinates."""
    return np.hypot(x, y), np.arctan2(y, x)


def horner(x):
    """A polynomial by Horner's rule (coefficients a constant list)."""
    result = np.zeros_like(x)
    for c in [1.0, -3.0, 0.5, 2.0]:
        result = result * x + c
    return result


def sort_and_rank(x):
    """Sorted values (numpy's sort)."""
    return np.sort(x)


def _rows(rng, n, d=8):
    return rng.normal(size=(n, d))


def _spd(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T + d * np.eye(d)


def _pos(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


INPUTS = {
    log_logistic: lambda r, n: (r.normal(0, 30, n),),
    softmax: lambda r, n: (r.normal(0, 3, (n // 100, 100)),),
    logistic_loss: lambda r, n: (r.normal(size=8), _rows(r, n), np.sign(r.normal(size=n))),
    huber: lambda r, n: (r.normal(size=n), r.normal(size=n), np.float64(1.35)),
    rbf_kernel: lambda r, n: (_rows(r, n // 100), _rows(r, 100), np.float64(0.1)),
    cosine_similarity: lambda r, n: (_rows(r, n // 100), _rows(r, 100)),
    r2_score: lambda r, n: (r.normal(size=n), r.normal(size=n)),
    mean_squared_log_error: lambda r, n: (_pos(r, n), _pos(r, n)),
    accuracy: lambda r, n: (r.normal(size=(n // 10, 10)), r.integers(0, 10, n // 10)),
    standard_scale: lambda r, n: (_rows(r, n // 8),),
    minmax_scale: lambda r, n: (_rows(r, n // 8),),
    normalize_rows: lambda r, n: (_rows(r, n // 8),),
    ridge_closed_form: lambda r, n: (_rows(r, n // 8), r.normal(size=n // 8), np.float64(1.0)),
    norm_logpdf: lambda r, n: (r.normal(size=n), np.float64(0.5), np.float64(2.0)),
    norm_cdf_ratio: lambda r, n: (r.uniform(-5, 5, n),),
    logsumexp_rows: lambda r, n: (r.normal(0, 30, (n // 100, 100)),),
    kl_div: lambda r, n: (_pos(r, n), _pos(r, n)),
    entropy: lambda r, n: (_pos(r, n),),
    trapezoid: lambda r, n: (r.normal(size=n), np.float64(0.01)),
    log_gamma_poisson: lambda r, n: (r.integers(0, 20, n).astype(float), _pos(r, n)),
    normal_logp: lambda r, n: (r.normal(size=n), np.float64(0.1), np.float64(1.5)),
    exponential_logp: lambda r, n: (_pos(r, n), np.float64(2.0)),
    laplace_logp: lambda r, n: (r.normal(size=n), np.float64(0.0), np.float64(2.0)),
    logistic_logp: lambda r, n: (r.normal(0, 300, n), np.float64(0.0), np.float64(1.0)),
    halfnormal_logp: lambda r, n: (_pos(r, n), np.float64(1.0)),
    studentt_logp: lambda r, n: (
        r.normal(size=n),
        np.float64(3.0),
        np.float64(0.0),
        np.float64(1.0),
    ),  # fmt: skip
    mixture_loglik: lambda r, n: (
        r.normal(0, 40, n // 4),
        np.full(4, 0.25),
        r.normal(size=4),
        _pos(r, 4),
    ),  # fmt: skip
    mvn_logpdf: lambda r, n: (r.normal(size=8), np.zeros(8), np.eye(8) * 2.0),
    multinomial_loss: lambda r, n: (
        r.normal(size=(8, 4)),
        _rows(r, n // 8),
        np.eye(4)[r.integers(0, 4, n // 8)],
    ),  # fmt: skip
    gaussian_nll: lambda r, n: (r.normal(size=n), np.float64(0.5), np.float64(2.0)),
    probit_loglike: lambda r, n: (r.normal(size=8), _rows(r, n // 8), r.integers(0, 2, n // 8)),
    gp_posterior_mean: lambda r, n: (_spd(r, 200), r.normal(size=200), _rows(r, n // 200, 200)),
    attention_weights: lambda r, n: (r.normal(0, 30, (n // 64, 64)),),
    gelu: lambda r, n: (r.normal(size=n),),
    layer_norm: lambda r, n: (r.normal(size=(n // 100, 100)), np.float64(1e-5)),
    mlp: lambda r, n: (
        _rows(r, n // 8),
        r.normal(size=(8, 16)),
        r.normal(size=16),
        r.normal(size=(16, 4)),
    ),  # fmt: skip
    cross_entropy: lambda r, n: (r.normal(0, 300, (n // 10, 10)), r.integers(0, 10, n // 10)),
    leaky_relu: lambda r, n: (r.normal(size=n), np.float64(0.01)),
    bilinear: lambda r, n: (_rows(r, n // 8), r.normal(size=(8, 8))),
    black_scholes: lambda r, n: (
        _pos(r, n) * 100,
        _pos(r, n) * 100,
        _pos(r, n),
        np.float64(0.02),
        np.float64(0.3),
    ),  # fmt: skip
    log_returns: lambda r, n: (np.exp(np.cumsum(r.normal(0, 0.01, n))),),
    cumulative_returns: lambda r, n: (r.normal(0, 0.01, n // 100),),
    moving_average: lambda r, n: (r.normal(size=n), 10),
    second_difference: lambda r, n: (np.sin(np.linspace(0, 10, n)), np.float64(10 / n)),
    median_filter_3: lambda r, n: (r.normal(size=n),),
    haversine: lambda r, n: tuple(r.uniform(-1.5, 1.5, n) for _ in range(4)),
    angle_between: lambda r, n: (_rows(r, n // 8), _rows(r, n // 8)),
    polar: lambda r, n: (r.normal(size=n), r.normal(size=n)),
    horner: lambda r, n: (r.normal(size=n),),
    sort_and_rank: lambda r, n: (r.normal(size=n),),
}
