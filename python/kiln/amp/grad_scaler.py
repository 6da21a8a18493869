"""kiln.amp.GradScaler: torch.amp.GradScaler's dynamic loss scaling, step for step.

``scale(loss)`` multiplies by the current scale (a float32 0-dim tensor made on
first use, ``init_scale``); ``unscale_(optimizer)`` multiplies every gradient by
the float32 reciprocal of the scale and records whether any was inf/NaN;
``step(optimizer)`` unscales (unless done already) and runs ``optimizer.step()``
only when no inf/NaN was found; ``update()`` multiplies the scale by
``backoff_factor`` after a skipped step, or by ``growth_factor`` after
``growth_interval`` consecutive good ones. The two kernels torch runs for this
(``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``) are
written below with the CPU kernels' arithmetic: the scale is held in float32
and each new scale is the float32 rounding of the float64 product.

As in torch, ``GradScaler("cuda")`` (the default device) warns and disables
itself where CUDA is not available, which in kiln is always; use
``GradScaler("cpu")``. Sparse gradients are unscaled through their values,
where kiln has them.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from kiln import _C, cuda
from kiln.autograd.grad_mode import no_grad

__all__ = ["OptState", "GradScaler"]

_F = _C._functions


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """A tensor and its copies on the devices asked for, each made once."""

    def __init__(self, master) -> None:
        self.master = master
        self._per_device_tensors: dict = {}

    def get(self, device):
        copy = self._per_device_tensors.get(device)
        if copy is None:
            copy = self.master.to(device=device, copy=True)
            self._per_device_tensors[device] = copy
        return copy


def _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale) -> None:
    """torch._amp_foreach_non_finite_check_and_unscale_: sets ``found_inf`` to 1 when any of
    ``grads`` holds an inf or NaN, and multiplies every one by ``inv_scale`` in place (skipped
    when it is 1)."""
    inv = inv_scale.item()
    for grad in grads:
        if not bool(grad.isfinite().all()):
            found_inf.fill_(1.0)
        if inv != 1.0:
            grad.mul_(inv)


def _float32(value: float) -> float:
    """``value`` rounded to float32 (overflowing to inf), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _amp_update_scale_(scale, growth_tracker, found_inf, growth_factor: float, backoff_factor: float,
                       growth_interval: int) -> None:
    """torch._amp_update_scale_ on the CPU: backs the scale off after an inf/NaN, else counts the
    good step and grows the scale (when finite in float32) every ``growth_interval`` of them."""
    current = scale.item()
    if found_inf.item():
        scale.fill_(_float32(current * backoff_factor))
        growth_tracker.fill_(0)
        return
    successful = growth_tracker.item() + 1
    if successful == growth_interval:
        grown = _float32(current * growth_factor)
        if np.isfinite(grown):
            scale.fill_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True). Disabled, ``step`` just calls ``optimizer.step()`` and the
    other methods do nothing."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not cuda.is_available():
            warnings.warn("kiln.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # --- the scale ----------------------------------------------------------------------------

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = _F.full((), self._init_scale, dtype=_C.float32, device=device)
        self._growth_tracker = _F.full((), self._init_growth_tracker, dtype=_C.int32, device=device)

    def scale(self, outputs):
        """``outputs`` (a tensor, or tensors nested in iterables) multiplied by the scale; as given when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.TensorBase):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        stash: list = []

        def apply_scale(value):
            if isinstance(value, _C.TensorBase):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(value.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return value * stash[0].get(value.device)
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    # --- unscaling and stepping -----------------------------------------------------------------

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grouped: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, _C.TensorBase):
                        raise AssertionError(f"expected param to be kiln.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == _C.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if getattr(param.grad, "is_sparse", False):
                        if param.grad.dtype is _C.float16:
                            param.grad = param.grad.coalesce()
                        to_unscale = param.grad._values()
                    else:
                        to_unscale = param.grad
                    grouped[to_unscale.device][to_unscale.dtype].append(to_unscale)
            for device, per_dtype in grouped.items():
                for grads in per_dtype.values():
                    _amp_foreach_non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                               per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divides ``optimizer``'s gradients by the scale in place, recording any inf/NaN; once per step."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        current = self._scale.item()
        inverse = 1.0 / current if current != 0 else math.copysign(math.inf, current)  # float64, as torch's
        inv_scale = _F.full((), _float32(inverse), dtype=_C.float32, device=self._scale.device)
        found_inf = _F.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales (unless unscale_ ran) and runs ``optimizer.step(*args, **kwargs)`` when no gradient was
        inf/NaN, returning what it returns (None for a skipped step). Closures are refused."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_scaling_optimizer(optimizer, optimizer_state, *args, **kwargs)
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_scaling_optimizer(self, optimizer, optimizer_state, *args, **kwargs):
        """An optimizer that unscales itself (``_step_supports_amp_scaling``): it is handed
        ``grad_scale`` and ``found_inf`` attributes for its step (or, if its step takes a
        ``grad_scaler`` argument, this scaler, with torch's FutureWarning)."""
        has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if has_grad_scaler_kwarg:
            warnings.warn("GradScaler is going to stop passing itself as a keyword argument to the passed optimizer. "
                          "In the near future GradScaler registers `grad_scale: Tensor` and `found_inf: Tensor` to "
                          "the passed optimizer and let the optimizer use them directly.", FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
        else:
            if optimizer_state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scaler = self._get_scale_async()
            found_inf = sum(t.to(scaler.device) for t in optimizer_state["found_inf_per_device"].values())
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if optimizer_state["stage"] == OptState.UNSCALED
                                    else scaler * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if not has_grad_scaler_kwarg:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    # --- updating the scale ---------------------------------------------------------------------

    def update(self, new_scale=None) -> None:
        """Backs the scale off if any optimizer step this iteration was skipped, else counts toward growth;
        ``new_scale`` (a float, or a 1-element float tensor without grad) sets it instead."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element kiln.cuda.FloatTensor or kiln.FloatTensor "
                          "with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device) for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for extra in found_infs[1:]:
                combined += extra
            _amp_update_scale_(scale, growth_tracker, combined, self._growth_factor, self._backoff_factor,
                               self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # --- accessors and state ------------------------------------------------------------------

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (``init_scale`` before the first ``scale``; 1.0 when disabled)."""
        if self._enabled:
            scale = self._get_scale_async()
            return self._init_scale if scale is None else scale.item()
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, or "
                                     "at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = _F.full((), 1.0, dtype=_C.float32, device=scale.device)
        found_inf = _F.full((), 0.0, dtype=_C.float32, device=scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
