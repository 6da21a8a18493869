"""kiln.optim.swa_utils: stochastic weight averaging and EMA with torch's API.

AveragedModel keeps a deep copy of a model whose parameters (and, with
use_buffers=True, buffers) are a running average of the model's: the equal
average of SWA by default, or what ``avg_fn`` (one tensor at a time) /
``multi_avg_fn`` (lists of tensors of one device and dtype) computes.
update_bn recomputes BatchNorm running statistics with one pass over a
loader; SWALR anneals each group's lr to its swa_lr.

torch uses its foreach kernels for the default average only on accelerators;
on CPU it averages one tensor at a time, which is what kiln does everywhere
(the values agree)."""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy
from typing import Any, Callable, Iterable

from kiln import _C
from kiln.autograd import grad_mode
from kiln.nn.modules.module import Module
from kiln.nn.modules.normalization import _BatchNorm
from kiln.optim.lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA over lists of tensors: ema <- decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with grad_mode.no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In-place equal average over lists of tensors, given how many were averaged so far."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with grad_mode.no_grad():
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                if isinstance(num_averaged, _C.TensorBase):
                    # torch's 1 / tensor is tensor.reciprocal(): in the default float dtype for a count.
                    weight = (num_averaged + 1).to(_C.get_default_dtype()).reciprocal().item()
                else:
                    weight = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model.sub(p_avg)
                    if isinstance(num_averaged, _C.TensorBase):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """One-tensor EMA: returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with grad_mode.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """One-tensor equal average: returns avg + (current - avg) / (num_averaged + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with grad_mode.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(avg_list, model_list):
    groups: dict = {}
    for a, m in zip(avg_list, model_list):
        key = (a.device, a.dtype)
        pair = groups.setdefault(key, ([], []))
        pair[0].append(a)
        pair[1].append(m)
    return groups


class AveragedModel(Module):
    """A running average of ``model``'s parameters in a deep copy (``self.module``)."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = _C._functions.zeros((), dtype=_C.int64)
        self.register_buffer("n_averaged", n_averaged if device is None else n_averaged.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold model's current parameters into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        avg_list, model_list = [], []
        first = bool(self.n_averaged == 0)
        for p_avg, p_model in zip(mine, theirs):
            current = p_model.detach().to(p_avg.device)
            avg_list.append(p_avg.detach())
            model_list.append(current)
            if first:
                p_avg.detach().copy_(current)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None:
                for (device, _), (avgs, currents) in _group_by_device_and_dtype(avg_list, model_list).items():
                    self.multi_avg_fn(avgs, currents, self.n_averaged.to(device))
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for p_avg, current in zip(avg_list, model_list):
                    p_avg.copy_(avg_fn(p_avg, current, self.n_averaged.to(p_avg.device)))
        if not self.use_buffers:
            # Buffers (e.g. BatchNorm statistics) are copied, not averaged.
            for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the running statistics of model's BatchNorm layers with one
    pass over loader (the cumulative average: momentum None during the pass).
    A (input, target, ...) list or tuple batch uses its first element."""
    with grad_mode.no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr from its value to swa_lr over anneal_epochs
    (cosine or linear), then holds it."""

    def __init__(self, optimizer, swa_lr: float, anneal_epochs=10, anneal_strategy: str = "cos",
                 last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # Recover the lr before annealing from the current one, then anneal one step further.
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
