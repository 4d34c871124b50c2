"""Logistic regression's log-likelihood, written with numpy as usual.

``np.log(1 + np.exp(z))`` overflows to inf once z passes 709; relgraph's
``fast_run`` rewrites it into the stable ``softplus(z)``.
"""

import numpy as np


def log_likelihood(X, w, y):
    z = X @ w
    return np.sum(y * z - np.log(1 + np.exp(z)))
