"""The updates of SGD, Adam and AdamW as tensor ops, for a training step that
kiln.compile captures whole (PyTorch's ``capturable`` idea): the step counter
and every scalar of the update stay tensors, nothing is read back to Python,
and the hyperparameters (lr, betas, eps, weight decay, momentum, dampening)
are 0-dim float64 tensors the compiled step takes as graph inputs, refreshed
from ``param_groups`` before each call, so an lr scheduler changing lr between
steps changes an input, not the graph. See Note [Captured optimizer steps].

Note [Captured optimizer steps]
While kiln.compile captures a function, ``capture_hook`` is set (by
kiln.compiler; kiln.optim never imports it). Every optimizer class's own
``step`` is wrapped (``wrap_step``, from Optimizer.__init_subclass__) to call
it with the optimizer and whether its class has a captured update
(``register_update``: SGD's, Adam's and AdamW's). None means run the eager
step (a function's first call only observes which optimizers it steps; an
optimizer without a captured update marks the capture broken, as its step
would record Python floats as constants); otherwise the list, per parameter
group, of the ``ScalarInputs`` tensors the capture declared as graph inputs,
and ``adam_update`` / ``sgd_update`` run: the fused kernels' arithmetic, op
for op in the same order and dtypes (scalar prefactors in float64, cast to
the parameter's dtype where
the kernels cast them; the element-wise update in the parameter's dtype), as
in-place ops on the parameters and state, which capture records out of place
with copy-backs. Results equal the eager kernels' up to the rounding of fused
multiply-adds (a few ulp per step; compiled by the default backend they are
equal bit for bit: tests/python/compiler/test_multi_tensor_optimizer.py). The
default backend runs a group's per-parameter updates, one identical fused
kernel each, as ONE multi-tensor kernel step (passes/group_multi_tensor.h,
Note [Multi-tensor kernel steps]).

What the graph's shape depends on (amsgrad, maximize, nesterov, decoupled
weight decay, whether weight_decay / momentum is zero, the groups and their
sizes) is the ``ScalarInputs.structure`` a compiled step checks per call: a
change captures again. amsgrad's running max is a copy_ kept in place (the
graph then replays through the interpreter).
"""

from __future__ import annotations

import functools

from kiln import _C

__all__ = ["capture_hook", "wrap_step", "register_update", "supports", "ScalarInputs", "adam_update",
           "sgd_update"]

# Set by kiln.compiler while it captures: hook(optimizer, capturable) -> list of {name: 0-dim tensor} per
# group (run the captured update), or None (run the eager step).
capture_hook = None

# The float hyperparameters each optimizer's update reads, as group keys ("betas" is two inputs).
_SGD_SCALARS = ("lr", "momentum", "dampening", "weight_decay")

# A class's step (as the class holds it, wrapped) -> the capturable update of its groups.
_UPDATES: dict = {}


def register_update(step, update) -> None:
    """Declares ``update(optimizer, group, params, scalars)`` the capturable form of ``step`` (adam.py, sgd.py)."""
    _UPDATES[step] = update


def _update_of(optimizer):
    return _UPDATES.get(type(optimizer).step)


def wrap_step(step):
    """What Optimizer.__init_subclass__ makes of each class's own ``step``: outside a capture, ``step`` itself;
    inside one, the capture is told (``capture_hook``) and, when it hands back scalar inputs, the captured
    update runs instead (Note [Captured optimizer steps]). A subclass overriding ``step`` has no captured
    update: the capture breaks rather than record its Python floats as constants."""

    @functools.wraps(step)
    def observed_step(self, *args, **kwargs):
        hook = capture_hook
        if hook is None:
            return step(self, *args, **kwargs)
        update = _update_of(self)
        scalars = hook(self, update is not None)
        if scalars is None:
            return step(self, *args, **kwargs)
        closure = args[0] if args else kwargs.get("closure")
        return captured_step(self, closure, scalars, update)

    return observed_step


def supports(optimizer) -> bool:
    """Whether ``optimizer.step`` has a capturable update (SGD, Adam, AdamW, and subclasses that keep their step)."""
    return _update_of(optimizer) is not None


def _kind(optimizer) -> str | None:
    update = _update_of(optimizer)
    return None if update is None else ("adam" if update is adam_update else "sgd")


# The scalar inputs' names, in the order _values gives them.
_NAMES = {"adam": ("lr", "beta1", "beta2", "eps", "weight_decay"), "sgd": _SGD_SCALARS}


def _values(kind: str, group: dict) -> tuple:
    """The group's hyperparameters in _NAMES[kind] order (a tuple: compared once per compiled call)."""
    if kind == "adam":
        beta1, beta2 = group["betas"]
        return group["lr"], beta1, beta2, group["eps"], group["weight_decay"]
    return group["lr"], group["momentum"], group["dampening"], group["weight_decay"]


def _structure(kind: str, group: dict) -> tuple:
    if kind == "adam":
        return (bool(group["amsgrad"]), bool(group["maximize"]), bool(group.get("decoupled_weight_decay", False)),
                group["weight_decay"] != 0, len(group["params"]))
    return (bool(group["nesterov"]), bool(group["maximize"]), group["momentum"] != 0, group["weight_decay"] != 0,
            len(group["params"]))


class ScalarInputs:
    """One optimizer's hyperparameters as 0-dim float64 tensors, one dict per parameter group
    (``per_group``), for a captured step to take as graph inputs; ``refresh()`` copies the groups'
    current values in (only those that changed) and says whether the graph's structure still holds."""

    __slots__ = ("optimizer", "kind", "per_group", "structure", "_last", "_groups")

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.kind = _kind(optimizer)
        self._groups = list(optimizer.param_groups)
        self.per_group = []
        self._last = []
        for group in self._groups:
            values = _values(self.kind, group)
            tensors = {}
            for name, value in zip(_NAMES[self.kind], values):
                if isinstance(value, _C.TensorBase):
                    value = float(value.item())  # a tensor lr: its value now (read outside any capture)
                tensors[name] = _C._functions.full((), float(value), dtype=_C.float64)
            self.per_group.append(tensors)
            self._last.append(values)
        self.structure = self._structure_now()

    def _structure_now(self) -> tuple:
        return tuple(_structure(self.kind, g) for g in self.optimizer.param_groups)

    def tensors(self) -> list:
        return [t for tensors in self.per_group for t in tensors.values()]

    def refresh(self) -> bool:
        """Copies changed hyperparameters into the tensors; False when the groups changed in a way the
        captured graph depends on (then nothing is trusted: recapture)."""
        groups = self.optimizer.param_groups
        known = self._groups
        if len(groups) != len(known):
            return False
        for i, group in enumerate(groups):  # (a loop, not any(...): this runs on every compiled call)
            if group is not known[i]:
                return False
            values = _values(self.kind, group)
            last = self._last[i]
            if values != last:
                if _structure(self.kind, group) != self.structure[i]:
                    return False
                tensors = self.per_group[i]
                for name, value, before in zip(_NAMES[self.kind], values, last):
                    if value != before:
                        tensors[name].fill_(float(value))
                self._last[i] = values
        return True

    def unchanged_since_refresh(self) -> bool:
        """Whether every group still holds the values last copied in (a scheduler stepping inside a
        captured function changes them mid-call, which a replay cannot repeat)."""
        return all(_values(self.kind, g) == last for g, last in zip(self.optimizer.param_groups, self._last))


def _scalar(t, dtype):
    return t if t.dtype == dtype else t.to(dtype)


def _one_minus(t):
    """1 - t, as -t + 1 (the same rounding): rsub has no fused-kernel math, neg and add do."""
    return t.neg().add(1)


def adam_update(optimizer, group: dict, params: list, s: dict) -> None:
    """Adam/AdamW's update of ``params`` (those of ``group`` with a gradient) as tensor ops; ``s`` holds
    the group's scalar inputs. Mirrors kiln's _fused_adam_ kernel (Note [Captured optimizer steps])."""
    F = _C._functions
    state = optimizer.state
    for p in params:
        st = state[p]
        if len(st) == 0:
            st["step"] = F.zeros((), dtype=_C.float32)
            st["exp_avg"] = F.zeros(tuple(p.shape), dtype=p.dtype)
            st["exp_avg_sq"] = F.zeros(tuple(p.shape), dtype=p.dtype)
            if group["amsgrad"]:
                st["max_exp_avg_sq"] = F.zeros(tuple(p.shape), dtype=p.dtype)
        st["step"].add_(1)
    # Every parameter of a group shares its step count, as the eager path reads it.
    step = state[params[0]]["step"].to(_C.float64)
    lr, beta1, beta2 = s["lr"], s["beta1"], s["beta2"]
    bias_correction1 = _one_minus(beta1.pow(step))
    bias_correction2_sqrt = _one_minus(beta2.pow(step)).sqrt()
    decoupled = bool(group.get("decoupled_weight_decay", False))
    weight_decay_on = group["weight_decay"] != 0
    for dtype in dict.fromkeys(p.dtype for p in params):
        step_size = _scalar(lr / bias_correction1, dtype)
        inv_bias_correction2_sqrt = _scalar(bias_correction2_sqrt.reciprocal(), dtype)
        b1, b2 = _scalar(beta1, dtype), _scalar(beta2, dtype)
        one_minus_b1, one_minus_b2 = _one_minus(b1), _one_minus(b2)
        eps = _scalar(s["eps"], dtype)
        decay = _scalar(_one_minus(lr * s["weight_decay"]), dtype) if decoupled else None
        wd = _scalar(s["weight_decay"], dtype)
        for p in params:
            if p.dtype != dtype:
                continue
            st = state[p]
            g = p.grad
            if group["maximize"]:
                g = -g
            if decoupled:
                p.mul_(decay)
            elif weight_decay_on:
                g = g + wd * p
            m, v = st["exp_avg"], st["exp_avg_sq"]
            m.add_((g - m) * one_minus_b1)
            v.mul_(b2).add_(one_minus_b2 * g * g)
            second = v
            if group["amsgrad"]:
                st["max_exp_avg_sq"].copy_(F.maximum(st["max_exp_avg_sq"], v))
                second = st["max_exp_avg_sq"]
            denom = second.sqrt() * inv_bias_correction2_sqrt + eps
            p.sub_(step_size * m / denom)


def sgd_update(optimizer, group: dict, params: list, s: dict) -> None:
    """SGD's update (momentum, dampening, Nesterov, weight decay, maximize) of ``params`` as tensor ops.
    Mirrors kiln's _fused_sgd_ kernel; a parameter's first momentum step starts its buffer at the update
    direction, as there."""
    state = optimizer.state
    momentum_on = group["momentum"] != 0
    weight_decay_on = group["weight_decay"] != 0
    for dtype in dict.fromkeys(p.dtype for p in params):
        lr, wd = _scalar(s["lr"], dtype), _scalar(s["weight_decay"], dtype)
        mu = _scalar(s["momentum"], dtype)
        one_minus_dampening = _one_minus(_scalar(s["dampening"], dtype))
        for p in params:
            if p.dtype != dtype:
                continue
            d = p.grad
            if group["maximize"]:
                d = -d
            if weight_decay_on:
                d = d + wd * p
            if momentum_on:
                buf = state[p].get("momentum_buffer")
                if buf is None:
                    buf = state[p]["momentum_buffer"] = d.clone()
                else:
                    buf.mul_(mu).add_(one_minus_dampening * d)
                d = d + mu * buf if group["nesterov"] else buf
            p.sub_(lr * d)


def captured_step(optimizer, closure, scalars: list, update):
    """``step(closure)`` inside a captured training step: the closure with grad enabled, then ``update``
    (adam_update or sgd_update) on each group's parameters with a gradient, under no_grad."""
    from kiln.autograd import grad_mode  # noqa: PLC0415

    loss = None
    if closure is not None:
        with grad_mode.enable_grad():
            loss = closure()
    with grad_mode.no_grad():
        for group, s in zip(optimizer.param_groups, scalars):
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                update(optimizer, group, params, s)
    return loss
