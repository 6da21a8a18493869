"""kiln.func.jacrev, jacfwd and hessian, as torch.func's.

The Jacobian is built row by row: one vjp per element of each output (with
the graph of ``func`` kept between them), the rows stacked and viewed as
``output.shape + input.shape``. The result's pytree is torch's: one entry per
output leaf, each shaped like the differentiated arguments (a single argument's
structure for an int ``argnums``, a tuple for a tuple).

``jacfwd`` gives the same Jacobian by the same rows (kiln has no forward-mode
AD; the values are the same, the cost is one backward per output element, not
one forward per input element). Its blocks take the output's dtype, as
forward mode's do; its errors are jvp's, as torch's. ``randomness="error"``
raises torch's vmap error if ``func`` draws random numbers; "same" and
"different" both evaluate ``func`` once (so "different" draws one set).
``chunk_size`` is validated and otherwise changes nothing.
"""

from __future__ import annotations

import kiln
from kiln import random
from kiln.func import _common as C
from kiln.func._grad import Evaluation, _JVP
from kiln.func._pytree import tree_unflatten
from kiln.func._vmap import _RANDOM_ERROR, _same_rng, check_randomness_arg

__all__ = ["jacrev", "jacfwd", "hessian"]


def _rows(ev: Evaluation) -> list[list]:
    """``jac[i][k]``: the Jacobian block of flat output i w.r.t. flat input k."""
    blocks = []
    for i, out in enumerate(ev.flat_out):
        n = out.numel() if out.requires_grad else 0  # an output that does not require grad: zero blocks
        rows = [[] for _ in ev.inputs]
        for j in range(n):
            onehot = out.new_zeros(n)
            onehot[j] = 1
            grads = ev.vjp([onehot.view(out.shape)], create_graph=True, retain_graph=True, outputs=[out])
            for k, g in enumerate(grads):
                rows[k].append(g)
        block = []
        for k, inp in enumerate(ev.inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            block.append(kiln.stack(rows[k]).view(shape) if n > 0 else inp.new_zeros(shape))
        blocks.append(block)
    return blocks


def _assemble(ev: Evaluation, blocks, argnums, cast_to_output: bool):
    per_output = []
    for out, block in zip(ev.flat_out, blocks):
        if cast_to_output:
            block = [b if b.dtype == out.dtype else b.to(out.dtype) for b in block]
        arranged = tree_unflatten(block, ev.spec)
        per_output.append(arranged[0] if isinstance(argnums, int) else arranged)
    return tree_unflatten(per_output, ev.out_spec)


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums``, by reverse mode."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args):
        C.error_if_complex("jacrev", args, is_input=True)
        keep = C.outer_needs_graph(args)
        ev = Evaluation(func, args, _as_tuple_argnums(argnums), has_aux, "vjp(f, *primals)", keep, True)
        C.error_if_complex("jacrev", ev.flat_out, is_input=False)
        jac = _assemble(ev, _rows(ev), argnums, False)
        return (jac, ev.aux) if has_aux else jac

    return C.wraps(func, wrapper)


def _as_tuple_argnums(argnums):
    """argnums as Evaluation takes them: the differentiated arguments as a tuple."""
    return (argnums,) if isinstance(argnums, int) else argnums


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums`` (see the module docstring)."""

    def wrapper(*args):
        check_randomness_arg(randomness)
        C.error_if_complex("jacfwd", args, is_input=True)
        keep = C.outer_needs_graph(args)
        before = random.get_rng_state() if randomness == "error" else None
        ev = Evaluation(func, args, _as_tuple_argnums(argnums), has_aux, _JVP, keep, False)
        if before is not None and not _same_rng(before, random.get_rng_state()):
            raise RuntimeError(_RANDOM_ERROR)
        C.error_if_complex("jacfwd", ev.flat_out, is_input=False)
        jac = _assemble(ev, _rows(ev), argnums, True)
        return (jac, ev.aux) if has_aux else jac

    return C.wraps(func, wrapper)


def hessian(func, argnums=0):
    """The Hessian of ``func`` w.r.t. the arguments at ``argnums``: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)
