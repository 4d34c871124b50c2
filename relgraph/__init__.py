"""relgraph: relational (miniKanren) term rewriting for array programs.

Examples
--------
>>> import relgraph as rg
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> rg.pprint(A @ (x + y))
'(A @ (x + y))'
"""

from relgraph import display as _display  # noqa: F401  (Jupyter display hooks)
from relgraph.bfs import Derivation, Edge, TermSpace
from relgraph.compiler import Function, function
from relgraph.cost import op_cost, per_node, shape_cost, weighted
from relgraph.db import EquilibriumDB, Query, RelationDB, SequenceDB
from relgraph.evaluate import evaluate
from relgraph.exceptions import (
    EquilibriumLimitError,
    OscillationError,
    ParseError,
    ProgramError,
    QueryError,
    RegistrationError,
    RelationError,
    RelgraphError,
    SearchTimeout,
    TraceError,
    TypeCheckError,
    UnsupportedError,
)
from relgraph.explore import RewriteSpace, explore
from relgraph.fleet import Batch, compile_many, rewrite_many
from relgraph.infer import typeof
from relgraph.jit import JitFunction, Specialization, jit
from relgraph.leaves import Constant, Symbol, matrix, scalar, tensor, vector
from relgraph.lvars import LVar, Rest, lvar, lvars, rest
from relgraph.ops import (
    Op,
    abs,
    add,
    astype,
    broadcast_to,
    ceil,
    clip,
    concatenate,
    cos,
    dot,
    equal,
    erf,
    exp,
    exp2,
    expand_dims,
    expm1,
    floor,
    getitem,
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
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mul,
    neg,
    not_equal,
    pow,
    prod,
    reciprocal,
    reshape,
    sigmoid,
    sign,
    sin,
    softplus,
    sqrt,
    square,
    squeeze,
    stack,
    sub,
    sum,
    tanh,
    transpose,
    true_div,
    where,
)
from relgraph.parse import parse
from relgraph.printing import pprint
from relgraph.relation import Rule, directions_of, forward_only, reverse, rewrites
from relgraph.report import RewriteReport, RuleStats
from relgraph.rewriter import EquilibriumRewriter
from relgraph.rules import PatternRelation, rule
from relgraph.sequence import SequenceRewriter, rewrite
from relgraph.soundness import CheckResult, Counterexample, check
from relgraph.term import Term
from relgraph.tracing import Traced, trace
from relgraph.traverse import as_term, count_nodes
from relgraph.types import TensorType
from relgraph.why import Why, why

__all__ = [
    "Derivation", "Edge", "EquilibriumDB", "EquilibriumRewriter", "Function", "function",
    "Query", "RelationDB", "RewriteReport", "RewriteSpace", "Rule", "explore", "op_cost",
    "weighted", "shape_cost", "per_node", "TermSpace",
    "RuleStats", "SequenceDB", "SequenceRewriter", "parse", "reverse", "rewrite", "rewrites",
    "forward_only", "directions_of", "trace", "Traced", "jit", "JitFunction", "Specialization",
    "TraceError", "UnsupportedError", "LVar", "Rest", "lvar", "lvars", "rest", "rule",
    "PatternRelation", "why", "Why", "check", "CheckResult", "Counterexample",
    "Constant", "EquilibriumLimitError", "Op", "OscillationError", "ParseError",
    "QueryError", "RegistrationError", "RelationError", "RelgraphError", "SearchTimeout", "Symbol",
    "TensorType", "Term", "TypeCheckError", "abs", "add", "as_term", "count_nodes", "dot",
    "evaluate", "exp", "expm1", "log", "log1p", "matrix", "max", "maximum", "mul", "neg",
    "minimum", "tanh", "sin", "cos", "sign", "square", "reciprocal", "log2", "log10",
    "exp2", "floor", "ceil", "sigmoid", "softplus", "log1mexp", "logaddexp", "erf",
    "less", "less_equal",
    "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
    "logical_not", "where", "clip", "min", "prod", "mean",
    "pow", "pprint", "scalar", "sqrt", "sub", "sum", "tensor", "transpose", "true_div",
    "typeof", "vector", "astype", "matmul", "reshape", "expand_dims", "squeeze",
    "broadcast_to", "getitem", "concatenate", "stack", "logsumexp",
    "rewrite_many", "compile_many", "Batch", "ProgramError",
]  # fmt: skip
