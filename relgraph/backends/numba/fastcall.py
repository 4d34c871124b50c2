"""A compiled function's common call, as one generated Python function.

``Function.__call__`` checks each argument's dtype, rank and sizes, plans the output
shapes, decides between the serial kernel and threads, makes arrays contiguous and
allocates the outputs: about 4 us of Python around a kernel that takes 4 us on 1,000
elements, where numpy's whole expression takes 5.  A loop calls a function on
arrays of one shape; so after a call that ran the serial kernel, the function keeps
a *fast call* for exactly those argument shapes and dtypes: a function generated for
its arity that tests each argument (an ndarray, the shape, the dtype, C-contiguous;
a numpy scalar of its dtype where the input is a scalar),
allocates the outputs and calls the kernel.  Any other call (another shape, a list,
a view, an ``out=`` array that is not a new-output lookalike) returns None from it
and goes the checked way.

>>> import numpy as np
>>> def kernel(a, b, out):
...     out[:] = a + b
...     return (out,)
>>> call = fast_call(kernel, [(3,), (3,)], [np.dtype("float64")] * 2, [((3,), "float64")], True)
>>> call((np.ones(3), np.ones(3)))
array([2., 2., 2.])
>>> call((np.ones(4), np.ones(4))) is None  # another shape: the checked call
True
>>> out = np.empty(3)
>>> call((np.ones(3), np.ones(3)), out) is out
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["entry_point", "fast_call"]


def fast_call(
    kernel: Callable,
    shapes: Sequence[tuple],
    dtypes: Sequence[np.dtype],
    outputs: Sequence[tuple[tuple, Any]],
    single: bool,
    refuse: Callable[[], None] = lambda: None,
    takes_out: bool = True,
    scalars: Sequence[Any] = (),
) -> Callable[..., Any]:
    """``call(args, out=None)``: the kernel's results on ``args`` if every argument
    is a C-contiguous ndarray of its shape and dtype, or for the shape ``()`` a numpy
    scalar of the dtype (``np.float64(2.0)``; a 0-d array or a Python number is
    another call's) (new output arrays of the given
    ``(shape, dtype)``, or ``out`` for a single output where it is one of them and
    shares no argument's memory, unless not ``takes_out``; the first result alone if
    ``single``), else None.  ``scalars`` gives, per result, the dtype of a 0-d array
    to return a scalar result as (None: the result as it is).
    A kernel that raises ValueError (shapes that broadcast) gives None after
    ``refuse()``."""
    names = [f"a{i}" for i in range(len(shapes))]
    env: dict[str, Any] = {
        "__name__": __name__, "kernel": kernel, "refuse": refuse,
        "ndarray": np.ndarray, "empty": np.empty,
        "shares": np.may_share_memory, "copyto": np.copyto, "asarray": np.asarray,
    }  # fmt: skip
    tests = []
    for i, (name, shape, dtype) in enumerate(zip(names, shapes, dtypes)):
        env[f"s{i}"], env[f"d{i}"] = tuple(shape), np.dtype(dtype)
        if shape == ():  # a 0-d input: a numpy scalar of its dtype, as the kernel had
            env[f"c{i}"] = np.dtype(dtype).type
            tests.append(f"type({name}) is c{i}")
            continue
        tests.append(
            f"type({name}) is ndarray and {name}.shape == s{i} and {name}.dtype is d{i} "
            f"and (f := {name}.flags).c_contiguous and f.aligned"  # the entry's type
        )
    allocs = []
    for j, (shape, dtype) in enumerate(outputs):
        env[f"o{j}"], env[f"t{j}"] = tuple(shape), np.dtype(dtype)
        allocs.append(f"empty(o{j}, t{j})")
    # out=: one output, of its shape and dtype, writeable, sharing no input's memory
    takes_out = takes_out and single and len(outputs) == 1
    out_ok = " and ".join([
        "type(out) is ndarray and out.shape == o0 and out.dtype is t0",
        "(f := out.flags).c_contiguous and f.writeable and f.aligned",
        *(f"not shares(out, {name})" for name in names),
    ])  # fmt: skip
    lines = [
        "def call(args, out=None):",
        f"    if len(args) != {len(names)}:",
        "        return None",
        f"    {', '.join(names)}, = args" if names else "    pass",
        f"    if not ({' and '.join(tests) or 'True'}):",
        "        return None",
        "    if out is None:",
        f"        buffers = ({''.join(a + ', ' for a in allocs)})",
        f"    elif {out_ok if takes_out else 'False'}:",
        "        buffers = (out,)",
        "    else:",
        "        return None",
        "    try:",
        f"        results = kernel({', '.join(names)}{', ' if names else ''}*buffers)",
        "    except ValueError:",
        "        refuse()",
        "        return None",
        "    if out is not None and results[0] is not out:",
        "        copyto(out, results[0])",
        "        return out",
        f"    return {_returned(single, scalars, env)}",
    ]
    source = "\n".join(lines) + "\n"
    exec(source, env)  # noqa: S102  (code built from counts and names only)
    return env["call"]


def entry_point(kernel: Any, args: Sequence[Any]) -> Callable:
    """The compiled kernel's own entry for arguments of the Numba types of ``args``
    (which it ran on), or ``kernel`` where it has none.

    Numba's dispatcher types each argument on every call to pick this entry (about
    0.2 us a call of three arguments here); a fast call has tested its arguments
    already: C-contiguous arrays of one shape and dtype, which the entry reads the
    same whether they are writeable or not (a kernel writes only its outputs).
    """
    try:
        given = [kernel.typeof_pyval(a) for a in args]
        overloads = kernel.overloads.items()
    except AttributeError:  # not a Numba dispatcher
        return kernel
    for compiled, overload in overloads:
        if len(compiled) == len(given) and all(map(_reads_as, given, compiled)):
            return overload.entry_point
    return kernel


def _reads_as(given: Any, compiled: Any) -> bool:
    """Whether an argument of Numba type ``given`` passes as one of type ``compiled``:
    the same type, or the same array type read-only (as kernels take their inputs).
    Numba's types are read by their attributes: importing Numba here, with relgraph,
    would come before :mod:`~relgraph.backends.numba.kernel_cache` imports it quietly."""
    return given == compiled or (
        getattr(given, "mutable", False) and given.copy(readonly=True) == compiled
    )


def _returned(single: bool, scalars: Sequence[Any], env: dict[str, Any]) -> str:
    """The expression a fast call returns: the results, a scalar one as a 0-d array of
    its dtype (``scalars[k]``, set in ``env``)."""
    shown = []
    for k, dtype in enumerate(scalars):
        if dtype is not None:
            env[f"r{k}"] = np.dtype(dtype)
        shown.append(f"results[{k}]" if dtype is None else f"asarray(results[{k}], r{k})")
    if single:
        return shown[0] if shown else "results[0]"
    return f"[{', '.join(shown)}]" if shown else "list(results)"
