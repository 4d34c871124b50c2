"""Every Op relgraph speaks, by name (the printer's and the parser's).

Called on concrete values an Op computes with numpy; called on terms (or logic
variables) it builds a term, type-checked when it is ground.  So
``etuple(add, 1, 2).evaled_obj == 3`` and constant folding is evaluation.  Each Op
holds its type rule, numpy reference, Numba lowering and printing (see
:class:`relgraph.ops.base.Op`); they are defined by kind in :mod:`relgraph.ops.elemwise`,
:mod:`relgraph.ops.reductions`, :mod:`relgraph.ops.shape` and :mod:`relgraph.ops.products`.
Each family registers its Ops in :data:`ALL_OPS` where it defines them, with
their algebraic facts for kanren (``associative``, ``commutative``).
"""

from __future__ import annotations

from relgraph.ops.base import ALL_OPS, Op
from relgraph.ops.elemwise import (
    Cast,
    Elemwise,
    ExpandAs,
    abs,
    add,
    astype,
    ceil,
    clip,
    cos,
    equal,
    erf,
    exp,
    exp2,
    expand_as,
    expm1,
    floor,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1mexp,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mul,
    neg,
    not_equal,
    pow,
    reciprocal,
    sigmoid,
    sign,
    sin,
    softplus,
    sqrt,
    square,
    sub,
    tanh,
    true_div,
    where,
)  # fmt: skip
from relgraph.ops.products import Dot, Matmul, dot, matmul, product_op
from relgraph.ops.reductions import Reduce, logsumexp, max, mean, min, prod, sum
from relgraph.ops.shape import (
    BroadcastTo,
    ExpandDims,
    GetItem,
    Join,
    Reshape,
    ReshapeAs,
    ScatterAs,
    Squeeze,
    Transpose,
    broadcast_to,
    concatenate,
    expand_dims,
    getitem,
    reshape,
    reshape_as,
    scatter_as,
    squeeze,
    stack,
    transpose,
)  # fmt: skip

__all__ = [
    "Op", "Elemwise", "Cast", "Dot", "Matmul", "Reduce", "Transpose", "Reshape",
    "ExpandDims", "Squeeze", "BroadcastTo", "GetItem", "Join", "product_op", "ALL_OPS",
    "add", "sub", "mul", "true_div", "neg", "pow", "exp", "log", "log1p", "expm1", "sqrt",
    "abs", "maximum", "minimum", "tanh", "sin", "cos", "sign", "square", "reciprocal", "log2",
    "log10", "exp2", "floor", "ceil", "sigmoid", "softplus", "log1mexp", "logaddexp", "erf",
    "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_not", "where", "clip", "astype", "dot", "matmul", "transpose",
    "reshape", "expand_dims", "squeeze", "broadcast_to", "getitem", "concatenate", "stack",
    "sum", "max", "min", "prod", "mean", "logsumexp", "ExpandAs", "expand_as", "ScatterAs",
    "scatter_as", "ReshapeAs", "reshape_as",
]  # fmt: skip
