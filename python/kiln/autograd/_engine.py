"""backward and grad: the Python entry points to kiln's C++ autograd engine
(eager/autograd), with torch.autograd's signatures and checks."""

from __future__ import annotations

from kiln import _C


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, _C.TensorBase):
            raise TypeError(f"outputs must be Tensors, but element {i} is {type(out).__name__}")
        if g is not None and not isinstance(g, _C.TensorBase):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g is None:
            if out.requires_grad and out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.requires_grad:
                raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
            if not out.dtype.is_floating_point:
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {out.dtype}"
                )
            g = _C._functions.ones(out.shape, dtype=out.dtype, device=out.device)
        elif g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a shape of "
                f"{out.shape}."
            )
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Computes the sum of gradients of ``tensors`` w.r.t. graph leaves and
    accumulates them into the leaves' ``.grad`` (like ``torch.autograd.backward``)."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None and grad_variables is not None:
        grad_tensors = grad_variables
    grad_tensors = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"grad_tensors has {len(grad_tensors)} elements but tensors has {len(tensors)}")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0 and isinstance(inputs, tuple) and inputs != ():
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(tensors, grad_tensors)
    _C._run_backward(tensors, grads, retain_graph, create_graph, inputs, True, True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned instead of accumulated
    into ``.grad`` (like ``torch.autograd.grad``)."""
    outputs = _as_tuple(outputs)
    inputs_tuple = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    grad_outputs = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    result = _C._run_backward(outputs, grads, retain_graph, create_graph, inputs_tuple, allow_unused, False)
    if materialize_grads:
        result = tuple(
            r if r is not None else _C._functions.zeros(i.shape, dtype=i.dtype) for r, i in zip(result, inputs_tuple)
        )
    return result
