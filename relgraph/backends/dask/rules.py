"""How the Dask backend computes the Ops that are not fused into compiled kernels.

Elementwise regions and reductions run as compiled kernels per chunk
(:mod:`relgraph.backends.dask.chunked`); the rest have a lazy form here, registered
by Op class: numpy's functions hand dask arrays to dask.
"""

from __future__ import annotations

import functools
from typing import Any

from relgraph.exceptions import UnsupportedError
from relgraph.ops.base import Op
from relgraph.ops.order import OrderStatistic
from relgraph.ops.products import Dot, Matmul
from relgraph.ops.shape import GetItem, Join, ShapeOp, numpy_key

__all__ = ["lazy"]


@functools.singledispatch
def lazy(op: Op, *values: Any) -> Any:
    """``op`` computed on dask arrays, lazily.

    Examples
    --------
    >>> import relgraph as rg
    >>> lazy(rg.sum, None)
    Traceback (most recent call last):
    ...
    relgraph.exceptions.UnsupportedError: sum has no form on dask arrays
    """
    raise UnsupportedError(f"{op.name} has no form on dask arrays")


@lazy.register(ShapeOp)
@lazy.register(Join)
@lazy.register(Dot)
@lazy.register(Matmul)
def _by_numpy(op: Op, *values: Any) -> Any:
    return op.perform(*values)  # numpy's functions hand dask arrays to dask


@lazy.register
def _getitem(op: GetItem, x: Any, key: tuple = ()) -> Any:
    return x[numpy_key(key)]


@lazy.register
def _median(op: OrderStatistic, x: Any, *params: Any) -> Any:
    """dask's median and nanmedian along one axis (the axis in one chunk, then numpy's
    per block: numpy's values); no quantile, no median of everything."""
    p = op.param_values((x, *params))
    if op.name not in ("median", "nanmedian") or p["axis"] is None:
        raise UnsupportedError(
            f"{op.name} has no form on dask arrays (dask computes median and nanmedian "
            "along one axis)"
        )
    return op.reference(x, axis=p["axis"], keepdims=p["keepdims"])
