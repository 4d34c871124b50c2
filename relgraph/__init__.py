"""relgraph: relational (miniKanren) term rewriting for array programs.

Every public name is re-exported here from the layer that defines it (the
contributor page of the docs shows the layers), so modules can move without
breaking ``import relgraph as rg``.

Examples
--------
>>> import relgraph as rg
>>> A, x, y = rg.matrix("A"), rg.vector("x"), rg.vector("y")
>>> rg.pprint(A @ (x + y))
'(A @ (x + y))'
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled, version as _version

# Modules that register themselves where they hook in: the Dask backend (Functions
# called with dask arrays) and the Jupyter display of terms, spaces and reports.
from relgraph.backends.dask import chunked as _chunked  # noqa: F401
from relgraph.backends.numba.function import (
    Function as Function,
    function as function,
)
from relgraph.eqsat.bfs import (
    Derivation as Derivation,
    Edge as Edge,
    TermSpace as TermSpace,
)
from relgraph.eqsat.cost import (
    op_cost as op_cost,
    per_node as per_node,
    shape_cost as shape_cost,
    weighted as weighted,
)
from relgraph.eqsat.explore import (
    RewriteSpace as RewriteSpace,
    explore as explore,
)
from relgraph.exceptions import (
    DerivationError as DerivationError,
    EquilibriumLimitError as EquilibriumLimitError,
    GradientError as GradientError,
    LoweringError as LoweringError,
    OscillationError as OscillationError,
    ParseError as ParseError,
    PatternError as PatternError,
    ProgramError as ProgramError,
    QueryError as QueryError,
    RegistrationError as RegistrationError,
    RelationError as RelationError,
    RelgraphError as RelgraphError,
    SearchTimeout as SearchTimeout,
    TraceError as TraceError,
    TypeCheckError as TypeCheckError,
    UnsupportedError as UnsupportedError,
)
from relgraph.frontend.fleet import (
    Batch as Batch,
    compile_many as compile_many,
    rewrite_many as rewrite_many,
)
from relgraph.frontend.gradients import (
    grad as grad,
    value_and_grad as value_and_grad,
    vjp as vjp,
)
from relgraph.frontend.jit import (
    JitFunction as JitFunction,
    Specialization as Specialization,
    jit as jit,
)
from relgraph.frontend.parse import (
    parse as parse,
)
from relgraph.frontend.tracing import (
    Traced as Traced,
    trace as trace,
)
from relgraph.ops import (
    Op as Op,
    abs as abs,
    add as add,
    arccos as arccos,
    arccosh as arccosh,
    arcsin as arcsin,
    arcsinh as arcsinh,
    arctan as arctan,
    arctan2 as arctan2,
    arctanh as arctanh,
    argmax as argmax,
    argmin as argmin,
    astype as astype,
    broadcast_to as broadcast_to,
    ceil as ceil,
    clip as clip,
    concatenate as concatenate,
    cos as cos,
    cosh as cosh,
    cumprod as cumprod,
    cumsum as cumsum,
    diff as diff,
    dot as dot,
    equal as equal,
    erf as erf,
    exp as exp,
    exp2 as exp2,
    expand_as as expand_as,
    expand_dims as expand_dims,
    expm1 as expm1,
    floor as floor,
    full_like as full_like,
    getitem as getitem,
    greater as greater,
    greater_equal as greater_equal,
    hypot as hypot,
    isfinite as isfinite,
    isinf as isinf,
    isnan as isnan,
    less as less,
    less_equal as less_equal,
    log as log,
    log1mexp as log1mexp,
    log1p as log1p,
    log2 as log2,
    log10 as log10,
    log_ndtr as log_ndtr,
    logaddexp as logaddexp,
    logical_and as logical_and,
    logical_not as logical_not,
    logical_or as logical_or,
    logsumexp as logsumexp,
    matmul as matmul,
    max as max,
    maximum as maximum,
    mean as mean,
    min as min,
    minimum as minimum,
    mul as mul,
    ndtr as ndtr,
    neg as neg,
    not_equal as not_equal,
    ones_like as ones_like,
    pow as pow,
    prod as prod,
    reciprocal as reciprocal,
    reshape as reshape,
    reshape_as as reshape_as,
    scatter_as as scatter_as,
    sigmoid as sigmoid,
    sign as sign,
    sin as sin,
    sinh as sinh,
    softplus as softplus,
    sqrt as sqrt,
    square as square,
    squeeze as squeeze,
    stack as stack,
    sub as sub,
    sum as sum,
    tan as tan,
    tanh as tanh,
    transpose as transpose,
    true_div as true_div,
    where as where,
    zeros_like as zeros_like,
)
from relgraph.rewriting.check import (
    CheckResult as CheckResult,
    Counterexample as Counterexample,
    check as check,
)
from relgraph.rewriting.db import (
    EquilibriumDB as EquilibriumDB,
    Query as Query,
    RelationDB as RelationDB,
    SequenceDB as SequenceDB,
)
from relgraph.rewriting.driver import (
    EquilibriumRewriter as EquilibriumRewriter,
)
from relgraph.rewriting.relation import (
    Rule as Rule,
    directions_of as directions_of,
    forward_only as forward_only,
    produces as produces,
    reverse as reverse,
    rewrites as rewrites,
)
from relgraph.rewriting.report import (
    RewriteReport as RewriteReport,
    RuleStats as RuleStats,
)
from relgraph.rewriting.rules import (
    PatternRelation as PatternRelation,
    rule as rule,
)
from relgraph.rewriting.sequence import (
    SequenceRewriter as SequenceRewriter,
    rewrite as rewrite,
)
from relgraph.rewriting.why import (
    Why as Why,
    why as why,
)
from relgraph.terms.evaluate import (
    evaluate as evaluate,
)
from relgraph.terms.infer import (
    typeof as typeof,
)
from relgraph.terms.leaves import (
    Constant as Constant,
    Symbol as Symbol,
    matrix as matrix,
    scalar as scalar,
    tensor as tensor,
    vector as vector,
)
from relgraph.terms.lvars import (
    LVar as LVar,
    Rest as Rest,
    lvar as lvar,
    lvars as lvars,
    rest as rest,
)
from relgraph.terms.printing import (
    pprint as pprint,
)
from relgraph.terms.term import (
    Term as Term,
)
from relgraph.terms.traverse import (
    as_term as as_term,
    count_nodes as count_nodes,
)
from relgraph.terms.types import (
    TensorType as TensorType,
)
from relgraph.ui import display as _display  # noqa: F401

try:
    __version__: str = _version("relgraph")
except _NotInstalled:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Batch",
    "CheckResult",
    "Constant",
    "Counterexample",
    "Derivation",
    "DerivationError",
    "Edge",
    "EquilibriumDB",
    "EquilibriumLimitError",
    "EquilibriumRewriter",
    "Function",
    "GradientError",
    "JitFunction",
    "LVar",
    "LoweringError",
    "Op",
    "OscillationError",
    "ParseError",
    "PatternError",
    "PatternRelation",
    "ProgramError",
    "Query",
    "QueryError",
    "RegistrationError",
    "RelationDB",
    "RelationError",
    "RelgraphError",
    "Rest",
    "RewriteReport",
    "RewriteSpace",
    "Rule",
    "RuleStats",
    "SearchTimeout",
    "SequenceDB",
    "SequenceRewriter",
    "Specialization",
    "Symbol",
    "TensorType",
    "Term",
    "TermSpace",
    "TraceError",
    "Traced",
    "TypeCheckError",
    "UnsupportedError",
    "Why",
    "__version__",
    "abs",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "as_term",
    "astype",
    "broadcast_to",
    "ceil",
    "check",
    "clip",
    "compile_many",
    "concatenate",
    "cos",
    "cosh",
    "count_nodes",
    "cumprod",
    "cumsum",
    "diff",
    "directions_of",
    "dot",
    "equal",
    "erf",
    "evaluate",
    "exp",
    "exp2",
    "expand_as",
    "expand_dims",
    "explore",
    "expm1",
    "floor",
    "forward_only",
    "full_like",
    "function",
    "getitem",
    "grad",
    "greater",
    "greater_equal",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "jit",
    "less",
    "less_equal",
    "log",
    "log10",
    "log1mexp",
    "log1p",
    "log2",
    "log_ndtr",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "lvar",
    "lvars",
    "matmul",
    "matrix",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mul",
    "ndtr",
    "neg",
    "not_equal",
    "ones_like",
    "op_cost",
    "parse",
    "per_node",
    "pow",
    "pprint",
    "prod",
    "produces",
    "reciprocal",
    "reshape",
    "reshape_as",
    "rest",
    "reverse",
    "rewrite",
    "rewrite_many",
    "rewrites",
    "rule",
    "scalar",
    "scatter_as",
    "shape_cost",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softplus",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "tan",
    "tanh",
    "tensor",
    "trace",
    "transpose",
    "true_div",
    "typeof",
    "value_and_grad",
    "vector",
    "vjp",
    "weighted",
    "where",
    "why",
    "zeros_like",
]
