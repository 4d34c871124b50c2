"""A compiled function's common call, as one generated Python function.

``Function.__call__`` checks each argument's dtype, rank and sizes, plans the output
shapes, decides between the serial kernel and threads, makes arrays contiguous and
allocates the outputs: about 4 us of Python around a kernel that takes 4 us on 1,000
elements, where numpy's whole expression takes 5.  A loop calls a function on
arrays of one shape; so after a call that ran the serial kernel, the function keeps
a *fast call* for exactly those argument shapes and dtypes: a function generated for
its arity that tests each argument (an ndarray, the shape, the dtype, C-contiguous),
allocates the outputs and calls the kernel.  Any other call (another shape, a list,
a view, ``out=``) returns None from it and goes the checked way.

>>> import numpy as np
>>> def kernel(a, b, out):
...     out[:] = a + b
...     return (out,)
>>> call = fast_call(kernel, [(3,), (3,)], [np.dtype("float64")] * 2, [((3,), "float64")], True)
>>> call((np.ones(3), np.ones(3)))
array([2., 2., 2.])
>>> call((np.ones(4), np.ones(4))) is None  # another shape: the checked call
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["fast_call"]


def fast_call(
    kernel: Callable,
    shapes: Sequence[tuple],
    dtypes: Sequence[np.dtype],
    outputs: Sequence[tuple[tuple, Any]],
    single: bool,
    refuse: Callable[[], None] = lambda: None,
) -> Callable[[tuple], Any]:
    """``call(args)``: the kernel's results on ``args`` if every argument is a
    C-contiguous ndarray of its shape and dtype (new output arrays of the given
    ``(shape, dtype)``; the first result alone if ``single``), else None.  A kernel
    that raises ValueError (shapes that broadcast) gives None after ``refuse()``."""
    names = [f"a{i}" for i in range(len(shapes))]
    env: dict[str, Any] = {
        "kernel": kernel, "ndarray": np.ndarray, "empty": np.empty, "refuse": refuse,
    }  # fmt: skip
    tests = []
    for i, (name, shape, dtype) in enumerate(zip(names, shapes, dtypes)):
        env[f"s{i}"], env[f"d{i}"] = tuple(shape), np.dtype(dtype)
        tests.append(
            f"type({name}) is ndarray and {name}.shape == s{i} and {name}.dtype is d{i} "
            f"and {name}.flags.c_contiguous"
        )
    allocs = []
    for j, (shape, dtype) in enumerate(outputs):
        env[f"o{j}"], env[f"t{j}"] = tuple(shape), np.dtype(dtype)
        allocs.append(f"empty(o{j}, t{j})")
    unpack = f"    {', '.join(names)}, = args\n" if names else ""
    source = (
        "def call(args):\n"
        f"    if len(args) != {len(names)}:\n"
        "        return None\n"
        f"{unpack}"
        f"    if not ({' and '.join(tests) or 'True'}):\n"
        "        return None\n"
        "    try:\n"
        f"        results = kernel({', '.join([*names, *allocs])})\n"
        "    except ValueError:\n"
        "        return None\n"
        f"    return {'results[0]' if single else 'list(results)'}\n"
    )
    exec(source, env)  # noqa: S102  (code built from counts and names only)
    return env["call"]
