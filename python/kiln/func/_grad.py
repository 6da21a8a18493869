"""kiln.func.grad, grad_and_value, vjp, jvp and linearize, as torch.func's.

All are built on kiln's reverse-mode autograd (see kiln.func._common for how
inputs are made differentiable and when the graph is kept). ``jvp`` and
``linearize`` use the double-vjp trick: with ``u`` a dummy cotangent that
requires grad, ``g = vjp(u)`` is linear in ``u``, and the vjp of ``g`` with the
tangents is the jvp. Values, output structures (pytrees) and errors are torch's;
unused inputs get zero gradients, as torch.func's.

Knowing difference: jvp costs a double backward instead of one forward-mode pass,
and needs the ops' backward formulas to be differentiable (kiln's are).
"""

from __future__ import annotations

from kiln import _C
from kiln import autograd
from kiln.func import _common as C
from kiln.func._pytree import tree_flatten, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize"]


# --- grad --------------------------------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func``'s gradient w.r.t. the arguments at ``argnums`` and its value:
    ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``."""

    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)

    return C.wraps(func, wrapper)


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of the scalar ``func`` w.r.t. the arguments at ``argnums``
    (same structure as those arguments); ``(grad, aux)`` with ``has_aux``."""

    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, value[1]) if has_aux else g

    return C.wraps(func, wrapper)


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    keep = C.outer_needs_graph(args, kwargs)
    with C.nested():
        diff = C.slice_argnums(args, argnums, as_tuple=False)
        flat, spec = tree_flatten(diff)
        flat = [C.make_differentiable(x, keep) for x in flat]
        output = func(*C.replace_args(args, tree_unflatten(flat, spec), argnums), **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            output, aux = output
        if not C.is_tensor(output):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        grads = C.grad_or_zeros([output], flat, create_graph=keep, retain_graph=keep)
        grads = C.detach_all(tree_unflatten(list(grads), spec), keep)
        output = C.detach_all(output, keep)
        if has_aux:
            return grads, (output, C.unwrap_aux(aux, keep))
        return grads, output


# --- vjp ---------------------------------------------------------------------------------------------------------

class Evaluation:
    """``func`` evaluated once on differentiable copies of the primals at
    ``argnums`` (all of them when None), ready for any number of vjps and jvps.

    ``inputs``/``spec``: the flat differentiable primals and their structure;
    ``flat_out``/``out_spec``: the outputs; ``output``: what the user gets back
    (detached unless the caller differentiates through it); ``aux``."""

    def __init__(self, func, primals: tuple, argnums, has_aux: bool, api: str, keep: bool,
                 floating_outputs: bool) -> None:
        self.keep = keep
        self._dummies = None
        with C.nested():
            if argnums is None:
                flat, self.spec = tree_flatten(primals)
                self.inputs = [C.make_differentiable(x, keep) for x in flat]
                primals = tree_unflatten(self.inputs, self.spec)
            else:
                diff = C.slice_argnums(primals, argnums, as_tuple=False)
                flat, self.spec = tree_flatten(diff)
                self.inputs = [C.make_differentiable(x, keep) for x in flat]
                primals = C.replace_args(primals, tree_unflatten(self.inputs, self.spec), argnums)
            out = func(*primals)
            self.aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is "
                                       "True")
                out, self.aux = out
                self.aux = C.unwrap_aux(self.aux, keep)
            self.flat_out, self.out_spec = tree_flatten(out)
            C.assert_tensor_outputs(self.flat_out, api)
            if floating_outputs:
                for o in self.flat_out:
                    if not (o.dtype.is_floating_point or o.dtype.is_complex):
                        raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                                           f"got Tensor with dtype {o.dtype}")
        self.output = C.detach_all(out, keep)

    def vjp(self, flat_cotangents, *, create_graph: bool, retain_graph: bool, outputs=None) -> list:
        """The flat vjps (zeros for inputs the outputs do not depend on); ``outputs``
        (default: all the flat outputs) are the ones the cotangents go with."""
        graph = bool(create_graph) and (self.keep or C.outer_needs_graph(flat_cotangents))
        with _grad_mode(True):
            grads = C.grad_or_zeros(self.flat_out if outputs is None else outputs, self.inputs, flat_cotangents,
                                    create_graph=graph,
                                    retain_graph=retain_graph or graph)
        return C.detach_all(list(grads), graph)

    def jvp(self, flat_tangents, *, strict: bool, retain_graph: bool) -> list:
        """The jvp of each flat output by the double-vjp trick; zeros (or, with
        ``strict``, torch's error) for an output that does not depend on the inputs."""
        diff_index = [i for i, o in enumerate(self.flat_out) if o.requires_grad]
        if self._dummies is None:
            # g(u) = u^T J, built once with its graph: linear in the dummy cotangents u.
            self._dummies = [self.flat_out[i].new_zeros(self.flat_out[i].shape).requires_grad_() for i in diff_index]
            self._vjps = [None] * len(self.inputs)
            if diff_index:
                with _grad_mode(True):
                    self._vjps = list(autograd.grad([self.flat_out[i] for i in diff_index], self.inputs,
                                                    self._dummies, create_graph=True, allow_unused=True))
        pairs = [(g, t) for g, t in zip(self._vjps, flat_tangents) if g is not None and g.requires_grad]
        graph = self.keep or C.outer_needs_graph(flat_tangents)
        per_dummy = [None] * len(self._dummies)
        if pairs and self._dummies:
            with _grad_mode(True):
                per_dummy = list(autograd.grad([g for g, _ in pairs], self._dummies, [t for _, t in pairs],
                                               create_graph=graph, retain_graph=retain_graph or graph,
                                               allow_unused=True))
        result = [None] * len(self.flat_out)
        for i, jv in zip(diff_index, per_dummy):
            result[i] = jv
        for i, o in enumerate(self.flat_out):
            if result[i] is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of "
                                       "the inputs. This is not allowed with strict=True.")
                result[i] = o.new_zeros(o.shape)
        return C.detach_all(result, graph)


from kiln.autograd.grad_mode import set_grad_enabled as _grad_mode  # noqa: E402


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (and ``aux``): ``vjp_fn(cotangents)`` is the
    tuple of vector-Jacobian products, one per primal. It may be called again."""
    ev = Evaluation(func, primals, None, has_aux, "vjp(f, *primals)", C.outer_needs_graph(primals), True)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph=None):
        if create_graph is None:
            create_graph = _C.is_grad_enabled()
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != ev.out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {treespec_pprint(cot_spec)}, primal output: "
                               f"{treespec_pprint(ev.out_spec)}")
        grads = ev.vjp(flat_cot, create_graph=create_graph, retain_graph=retain_graph)
        return tree_unflatten(grads, ev.spec)

    if has_aux:
        return ev.output, vjp_fn, ev.aux
    return ev.output, vjp_fn


# --- jvp ---------------------------------------------------------------------------------------------------------

_JVP = "jvp(f, primals, tangents)"


def _check_tensor_list(flat, argname: str) -> None:
    if len(flat) == 0:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for x in flat:
        if not C.is_tensor(x):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got {type(x)}")


def _check_tangent_sizes(flat_primals, flat_tangents) -> None:
    for p, t in zip(flat_primals, flat_tangents):
        if t.shape != p.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` (and ``aux``), as torch.func.jvp."""
    return jvp_with_argnums(func, primals, tangents, None, strict=strict, has_aux=has_aux)


def jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux=False):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff = primals if argnums is None else C.slice_argnums(primals, argnums)
    flat_p, p_spec = tree_flatten(diff)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    _check_tensor_list(flat_p, "primals")
    _check_tensor_list(flat_t, "tangents")
    _check_tangent_sizes(flat_p, flat_t)
    ev = Evaluation(func, primals, argnums, has_aux, _JVP, C.outer_needs_graph(primals, tangents), False)
    result = ev.output, tree_unflatten(ev.jvp(flat_t, strict=strict, retain_graph=False), ev.out_spec)
    return result + (ev.aux,) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the jvp at the primals.
    One evaluation of ``func`` is reused by every call (torch's traces a graph instead)."""
    flat_p, p_spec = tree_flatten(primals)
    ev = Evaluation(func, primals, None, False, "linearize(f, *primals)", C.outer_needs_graph(primals), False)

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}")
        for idx, (t, p) in enumerate(zip(flat_t, flat_p)):
            for what in ("shape", "device", "dtype"):
                if getattr(t, what) != getattr(p, what):
                    raise RuntimeError(f"tangent:{idx} with {what} {getattr(t, what)} in flattened pytree doesn't "
                                       f"match the {what} {getattr(p, what)} of the corresponding primal.")
        return tree_unflatten(ev.jvp(flat_t, strict=False, retain_graph=True), ev.out_spec)

    return ev.output, jvp_fn
