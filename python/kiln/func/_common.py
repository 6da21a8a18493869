"""What the kiln.func transforms share: the nesting depth of the differentiating
transforms, argnums handling, and autograd.grad that fills in zeros.

How a transform differentiates (kiln has one autograd, reverse mode): the
differentiated inputs are replaced by fresh tensors — ``x.detach().requires_grad_()``,
or ``x.view_as(x)`` when something outside must still differentiate through ``x``
— the function runs with grad enabled, and ``kiln.autograd.grad`` gives the result.
The graph is created (``create_graph=True``) only when something outside needs it:
another differentiating transform is active (``grad(grad(f))``, ``jacfwd(jacrev(f))``),
or, with grad mode on, an input already requires grad (ordinary autograd through
``grad(f)(x)``). Otherwise results are detached, as torch's unwrapped results are.

Knowing difference from torch: a tensor that requires grad and reaches ``f`` only
through a closure (not as an argument) does not make a top-level result
differentiable; pass it as an argument (torch tracks it either way).
"""

from __future__ import annotations

import functools
import threading

from kiln import _C
from kiln import autograd
from kiln.func._pytree import tree_flatten, tree_unflatten

_state = threading.local()


def depth() -> int:
    """How many differentiating transforms (grad, vjp, jvp, jacrev, ...) are running."""
    return getattr(_state, "depth", 0)


class nested:
    """Counts one more active differentiating transform and turns grad mode on."""

    def __enter__(self):
        _state.depth = depth() + 1
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        _state.depth -= 1


def wraps(func, wrapper):
    """``functools.wraps`` where ``func`` allows it (a module instance or a partial may not)."""
    try:
        return functools.wraps(func)(wrapper)
    except (AttributeError, TypeError):
        return wrapper


def is_tensor(x) -> bool:
    return isinstance(x, _C.TensorBase)


def outer_needs_graph(*trees) -> bool:
    """Whether results must stay differentiable for whoever called the transform."""
    if depth() > 0:
        return True
    if not _C.is_grad_enabled():
        return False
    return any(is_tensor(x) and x.requires_grad for t in trees for x in tree_flatten(t)[0])


def make_differentiable(x, keep_graph: bool):
    """A fresh tensor equal to ``x`` that requires grad (see the module docstring)."""
    if not is_tensor(x):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if keep_graph and x.requires_grad:
        return x.view_as(x)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")  # torch.func's wording
    return x.detach().requires_grad_()


def detach_all(tree, keep_graph: bool):
    """Detaches the tensors of a result unless the caller differentiates through them."""
    if keep_graph:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if is_tensor(x) else x for x in leaves], spec)


def unwrap_aux(aux, keep_graph: bool):
    """``has_aux`` outputs: tensors only (torch raises the same error for anything else)."""
    leaves, spec = tree_flatten(aux)
    for x in leaves:
        if not is_tensor(x):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return detach_all(aux, keep_graph)


def grad_or_zeros(outputs, inputs, grad_outputs=None, *, create_graph: bool, retain_graph: bool):
    """``kiln.autograd.grad`` over the outputs that require grad, with zeros (not
    None) for inputs they do not depend on."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if is_tensor(o) and o.requires_grad]
    if not pairs or not inputs:
        return tuple(i.new_zeros(i.shape) for i in inputs)
    grads = autograd.grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs], retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True)
    return tuple(i.new_zeros(i.shape) if g is None else g for g, i in zip(grads, inputs))


# --- argnums, as torch.func --------------------------------------------------------------------------------------

def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def wrap_argnums(argnums, num_args: int):
    """Validates ``argnums`` (int or non-empty tuple of unique ints) and makes them non-negative."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    argnums = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return argnums


def slice_argnums(args: tuple, argnums, as_tuple: bool = True):
    """The arguments picked by ``argnums``: one argument (or a 1-tuple when
    ``as_tuple``) for an int, a tuple for a tuple."""
    argnums = wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return (args[argnums],) if as_tuple else args[argnums]
    return tuple(args[i] for i in argnums)


def replace_args(args: tuple, new, argnums) -> tuple:
    """``args`` with the ones at ``argnums`` replaced (``new`` shaped as ``slice_argnums(as_tuple=False)``)."""
    argnums = wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    by_index = dict(zip(argnums, new))
    return tuple(by_index.get(i, a) for i, a in enumerate(args))


def error_if_complex(api: str, tree, is_input: bool) -> None:
    for idx, x in enumerate(tree_flatten(tree)[0]):
        if is_tensor(x) and x.dtype.is_complex:
            which = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {which} to be real but received complex tensor at flattened "
                               f"input idx: {idx}")


def assert_tensor_outputs(flat_outputs: list, api: str) -> None:
    if len(flat_outputs) < 1 or (len(flat_outputs) == 1 and flat_outputs[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = "
                           f"{flat_outputs})")
    for o in flat_outputs:
        if not is_tensor(o):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
