"""kiln.utils.checkpoint: activation checkpointing, as torch.utils.checkpoint.

``checkpoint(function, *args, use_reentrant=...)`` returns ``function(*args)``
without keeping its intermediate activations; backward runs ``function`` again
(with the default generator's state of the forward restored when
``preserve_rng_state``, so dropout draws the same mask) and backpropagates
through the recomputation. Gradients equal those without checkpointing.

As torch 2.13: not passing ``use_reentrant`` warns and means True;
``use_reentrant=True`` rejects keyword arguments, ``context_fn`` and ``debug``;
``determinism_check`` is "default" or "none".

* ``use_reentrant=True`` is torch's variant: an autograd Function whose forward
  runs under no_grad and whose backward recomputes and calls
  ``kiln.autograd.backward`` (so parameters receive ``.grad`` there). As torch,
  the output requires grad only if a tensor argument does (with the warning).
  Knowing difference: torch refuses it under ``autograd.grad``; kiln cannot tell
  and runs it, the parameters' gradients then landing in ``.grad``.
* ``use_reentrant=False`` works with ``backward`` and ``autograd.grad``, keyword
  arguments and tensors nested in the arguments. kiln has no saved-tensor hooks,
  so the forward runs with grad enabled, the leaves it reaches (parameters) are
  read off its graph, and the graph is then dropped: the outputs hang off one
  node whose backward recomputes. Peak memory is one segment's activations.
  Knowing differences: a non-leaf tensor that requires grad and is captured by
  closure (not passed as an argument) is differentiated through inside that
  node; ``debug`` prints nothing extra; ``early_stop`` is accepted and ignored;
  the determinism check compares the outputs' shapes, dtypes and devices
  (torch's compares every saved tensor).
"""

from __future__ import annotations

import contextlib
import warnings

from kiln import _C
from kiln import autograd
from kiln import random
from kiln.autograd.function import Function
from kiln.func._pytree import tree_flatten, tree_unflatten
from kiln.nn import Sequential

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop"]


class CheckpointError(RuntimeError):
    """Raised when the recomputation does not match the forward."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


_debug_enabled = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides ``debug`` for checkpoints run inside (kiln's debug adds nothing to errors)."""
    global _debug_enabled
    prev, _debug_enabled = _debug_enabled, enabled
    try:
        yield
    finally:
        _debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for torch compatibility; kiln always recomputes the whole function."""
    yield


def detach_variable(inputs):
    """The tuple with each tensor detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, _C.TensorBase):
            d = x.detach()
            d.requires_grad_(x.requires_grad)
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(x.requires_grad for x in inputs if isinstance(x, _C.TensorBase)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class _restored_rng:
    """Runs the block with the forward's generator state, then puts the current one back."""

    def __init__(self, state, enabled: bool) -> None:
        self.state, self.enabled = state, enabled

    def __enter__(self):
        if self.enabled:
            self.outer = random.get_rng_state()
            random.set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.enabled:
            random.set_rng_state(self.outer)


from kiln.autograd.grad_mode import set_grad_enabled as _grad_mode  # noqa: E402


# --- use_reentrant=True ------------------------------------------------------------------------------------------

class CheckpointFunction(Function):
    """torch's reentrant checkpoint: ``apply(run_function, preserve_rng_state, *args)``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = random.get_rng_state()
        ctx.inputs = [None if isinstance(a, _C.TensorBase) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, _C.TensorBase)])
        with _grad_mode(False):
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _restored_rng(getattr(ctx, "fwd_cpu_state", None), ctx.preserve_rng_state):
            detached = detach_variable(tuple(inputs))
            with _grad_mode(True):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, _C.TensorBase):
            outputs = (outputs,)
        # the grads come for the outputs autograd tracks: the floating-point tensors, in order
        tensor_outputs = [o for o in outputs if isinstance(o, _C.TensorBase) and o.dtype.is_floating_point]
        pairs = [(o, g) for o, g in zip(tensor_outputs, grads) if o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, _C.TensorBase) else None for x in detached)


# --- use_reentrant=False -----------------------------------------------------------------------------------------

def _leaves_reached(outputs, skip_ids: set) -> list:
    """The leaf tensors requiring grad that the outputs' graph reaches, in a fixed order."""
    found, seen_ids = [], set()
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    visited = set()
    while stack:
        node = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        variable = getattr(node, "variable", None) if node.name().endswith("AccumulateGrad") else None
        if variable is not None:
            if id(variable) not in skip_ids and id(variable) not in seen_ids:
                seen_ids.add(id(variable))
                found.append(variable)
            continue
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return found


def _metadata(t) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs):
    if _debug_enabled if _debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    state = random.get_rng_state() if preserve else None
    if not _C.is_grad_enabled():
        return function(*args, **kwargs)

    flat_in, in_spec = tree_flatten((args, kwargs))
    tracked = [i for i, x in enumerate(flat_in) if isinstance(x, _C.TensorBase) and x.requires_grad]

    def stand_ins(connected: bool = False):
        """The arguments with fresh tensors for those requiring grad; ``connected``
        (double backward) keeps them differentiable w.r.t. the real arguments."""
        flat = list(flat_in)
        for i in tracked:
            flat[i] = flat_in[i].view_as(flat_in[i]) if connected else flat_in[i].detach().requires_grad_()
        return flat

    # The forward, with a graph only long enough to find the leaves it reaches.
    flat = stand_ins()
    with forward_context:
        out = function(*tree_unflatten(flat, in_spec)[0], **tree_unflatten(flat, in_spec)[1])
    flat_out, out_spec = tree_flatten(out)
    diff = [i for i, o in enumerate(flat_out) if isinstance(o, _C.TensorBase) and o.requires_grad]
    if not diff:
        return out
    stand_in_ids = {id(flat[i]) for i in tracked}
    leaves = _leaves_reached([flat_out[i] for i in diff], stand_in_ids)
    saved_meta = [_metadata(flat_out[i]) for i in diff]
    results = list(flat_out)
    for i in diff:
        results[i] = flat_out[i].detach()
    del out, flat_out, flat
    held = {"alive": True}

    def backward(*grads):
        if not held["alive"]:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved tensors "
                               "after they have already been freed). Specify retain_graph=True if you need to "
                               "backward through the graph a second time.")
        create_graph = _C.is_grad_enabled()
        with _grad_mode(True):
            fresh = stand_ins(connected=create_graph)
        with _restored_rng(state, preserve), _grad_mode(True), recompute_context:
            again = function(*tree_unflatten(fresh, in_spec)[0], **tree_unflatten(fresh, in_spec)[1])
        flat_again = tree_flatten(again)[0]
        recomputed = [flat_again[i] if i < len(flat_again) else None for i in diff]
        if determinism_check == "default":
            _check_same_metadata(saved_meta, recomputed)
        pairs = [(o, g) for o, g in zip(recomputed, grads)
                 if isinstance(o, _C.TensorBase) and o.requires_grad and g is not None]
        targets = [fresh[i] for i in tracked] + leaves
        if not pairs or not targets:
            return (None,) * len(targets)
        with _grad_mode(create_graph):
            return tuple(autograd.grad([o for o, _ in pairs], targets, [g for _, g in pairs], allow_unused=True,
                                       retain_graph=True, create_graph=create_graph))

    def release():
        held["alive"] = False

    node = _C._make_function_node("CheckpointBackward", backward, release, [flat_in[i] for i in tracked] + leaves)
    for i in diff:
        _C._set_history(results[i], node)
    return tree_unflatten(results, out_spec)


def _check_same_metadata(saved, recomputed) -> None:
    mismatched = ""
    for idx, (meta, t) in enumerate(zip(saved, recomputed)):
        now = _metadata(t) if isinstance(t, _C.TensorBase) else None
        if now != meta:
            mismatched += f"tensor at position {idx}:\nsaved metadata: {meta}\nrecomputed metadata: {now}\n"
    if mismatched:
        raise CheckpointError("kiln.utils.checkpoint: Recomputed values for the following tensors have different "
                              f"metadata than during the forward pass.\n{mismatched}.\n")


# --- the API -----------------------------------------------------------------------------------------------------

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its
    activations (see the module docstring). ``preserve_rng_state`` (default True)
    is a keyword argument."""
    if use_reentrant is None:
        warnings.warn("kiln.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs ``functions`` (a Sequential or a list) in ``segments`` chunks, each but
    the last checkpointed, as torch.utils.checkpoint.checkpoint_sequential."""
    if use_reentrant is None:
        warnings.warn("kiln.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    def run(start, end, fns):
        def forward(x):
            for j in range(start, end + 1):
                x = fns[j](x)
            return x

        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1, functions)(input)
