"""kiln.func.vmap (also kiln.vmap), as torch.func.vmap.

kiln has no batching rules: vmap runs ``func`` once per batch element (the
mapped dimension of every batched input selected away) and stacks the results
along ``out_dims`` — what torch does for ops without a batching rule. The
arguments, ``in_dims``/``out_dims`` pytrees, nesting, kwargs (passed unbatched),
the error messages and the results are torch's; ``chunk_size`` is validated and
changes nothing (the loop is already one element at a time).

``randomness``: "error" raises torch's error when ``func`` draws from the
default generator (detected by its state changing); "same" replays the
generator state for every element, so each draws the same numbers; "different"
lets each element draw its own.

Knowing differences from torch: per element, ``func`` sees ordinary tensors, so
``.item()``, data-dependent control flow and in-place writes into unbatched
tensors work where torch would raise. With ``out_dims=None`` an output counts
as unbatched when every element returned the same values. For a batch of size
0, ``func`` runs once on a zero-filled element to learn the output shapes.
"""

from __future__ import annotations

import functools

import kiln
from kiln import _C
from kiln import random
from kiln.func._common import wraps
from kiln.func._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def check_randomness_arg(randomness) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Vectorizes ``func`` over the dimension ``in_dims`` of its inputs (see the module docstring)."""
    check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)

    return wraps(func, wrapped)


def _check_out_dims(out_dims, func) -> None:
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             "python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _batched_inputs(in_dims, args: tuple, func):
    """(batch size, flat in_dims, flat args, args spec), validated as torch's."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_prefix(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, _C.TensorBase):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_dims[i] = d % arg.dim()
    sizes = [arg.size(d) for arg, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


def _element(flat_args, flat_dims, index):
    return [a if d is None else a.select(d, index) for a, d in zip(flat_args, flat_dims)]


def _zero_element(flat_args, flat_dims):
    """A stand-in element for a batch of size 0 (zeros of one element's shape)."""
    out = []
    for a, d in zip(flat_args, flat_dims):
        if d is None:
            out.append(a)
        else:
            shape = list(a.shape)
            del shape[d]
            out.append(a.new_zeros(shape))
    return out


def _same_rng(a, b) -> bool:
    return bool(kiln.equal(a, b))


def _run_elements(func, flat_args, flat_dims, spec, batch_size, randomness, kwargs):
    """The flat outputs of each element's call, and the output spec."""
    start = random.get_rng_state()
    per_element, out_spec = [], None
    indices = range(batch_size) if batch_size > 0 else [None]
    for i in indices:
        if randomness == "same" and i not in (0, None):
            random.set_rng_state(start)
        before = random.get_rng_state() if randomness == "error" else None
        element = _zero_element(flat_args, flat_dims) if i is None else _element(flat_args, flat_dims, i)
        out = func(*tree_unflatten(element, spec), **kwargs)
        if before is not None and not _same_rng(before, random.get_rng_state()):
            raise RuntimeError(_RANDOM_ERROR)
        flat_out, out_spec = tree_flatten(out)
        per_element.append(flat_out)
    if batch_size == 0:
        random.set_rng_state(start)
    return per_element, out_spec


def _all_same(values) -> bool:
    first = values[0]
    for v in values[1:]:
        if v is first:
            continue
        if not isinstance(v, _C.TensorBase) or not isinstance(first, _C.TensorBase):
            if v != first:
                return False
            continue
        if v.shape != first.shape or v.dtype != first.dtype or not _same_values(v, first):
            return False
    return True


def _same_values(a, b) -> bool:
    return bool(kiln.equal(a.detach(), b.detach()))


def _unbatch(func, per_element, out_spec, out_dims, batch_size):
    name = _name(func)

    def incompatible():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {out_spec}.")

    first = per_element[0]
    if out_spec.is_leaf() and isinstance(first[0], _C.TensorBase):
        if isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            incompatible()
    else:
        flat_dims = broadcast_prefix(out_dims, out_spec)
        if flat_dims is None:
            incompatible()
    results = []
    for k, d in enumerate(flat_dims):
        values = [outs[k] for outs in per_element]
        if d is None:
            if isinstance(values[0], _C.TensorBase) and batch_size > 0 and not _all_same(values):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            results.append(values[0])
            continue
        if not isinstance(values[0], _C.TensorBase):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(values[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        if batch_size == 0:
            template = values[0]
            rank = template.dim() + 1
            if not -rank <= d < rank:
                raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but "
                                 f"got {d})")
            shape = list(template.shape)
            shape.insert(d % rank, 0)
            results.append(template.new_zeros(shape))
        else:
            results.append(kiln.stack(values, dim=d))
    return tree_unflatten(results, out_spec)


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(out_dims, func)
    batch_size, flat_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
    per_element, out_spec = _run_elements(func, flat_args, flat_dims, spec, batch_size, randomness, kwargs)
    return _unbatch(func, per_element, out_spec, out_dims, batch_size)
