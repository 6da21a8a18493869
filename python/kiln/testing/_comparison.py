"""kiln.testing.assert_close (and the deprecated assert_allclose): torch.testing's
comparison rules and messages, written for kiln tensors.

How a comparison runs (as in torch):

1. ``actual`` and ``expected`` are walked together: sequences (not strings)
   element by element, mappings key by key; a length or key-set mismatch fails
   at once. Each leaf pair becomes a *pair* object: the first of None, bool,
   number and tensor-like that accepts the two inputs (the tensor-like pair
   takes directly related types and anything ``kiln.as_tensor`` converts).
2. Every pair is compared; the first failure is raised, its message replaced
   by ``msg`` (a string) or passed through it (a callable). Failures found
   while walking (length, keys, tolerances given by halves) ignore ``msg``,
   as torch's do.

Tensor values match where ``|actual - expected| <= atol + rtol * |expected|``
(and ``inf`` only equals ``inf``); complex tensors are compared through their
real and imaginary parts (equality and NaN, via ``kiln.view_as_real``) and
their complex modulus (the tolerance), which is what torch.isclose computes
for complex inputs.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from kiln import _C
from kiln._comparison import isclose
from kiln._complex import view_as_real
from kiln._creation import as_tensor, tensor
from kiln._dtypes import promote_types

__all__ = ["assert_close", "assert_allclose"]

MessageLike = Optional[Union[str, Callable[[str], str]]]


class _Failure(Exception):
    """A comparison failure on its way to the user: the exception type to raise,
    the generated message and where in the nested inputs it happened."""

    def __init__(self, kind: type, msg: str, *, id: tuple = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.id = kind, msg, id

    def to_error(self, msg: MessageLike = None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.msg
        if self.id:
            text += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """A pair type does not handle these inputs: the next one is tried."""


# --- tolerances -------------------------------------------------------------------------------

def _precisions() -> dict:
    """torch's default (rtol, atol) per dtype (assert_close's table); other dtypes compare exactly."""
    table = {_C.float16: (0.001, 1e-5), _C.bfloat16: (0.016, 1e-5), _C.float32: (1.3e-6, 1e-5),
             _C.float64: (1e-7, 1e-7), _C.complex64: (1.3e-6, 1e-5), _C.complex128: (1e-7, 1e-7)}
    complex32 = getattr(_C, "complex32", None)
    if complex32 is not None:
        table[complex32] = (0.001, 1e-5)
    return table


def default_tolerances(*inputs, dtype_precisions: Optional[dict] = None) -> tuple[float, float]:
    """The loosest default (rtol, atol) over the inputs' dtypes (tensors or dtypes)."""
    dtypes = []
    for item in inputs:
        if isinstance(item, _C.TensorBase):
            dtypes.append(item.dtype)
        elif isinstance(item, _C.dtype):
            dtypes.append(item)
        else:
            raise TypeError(f"Expected a kiln.Tensor or a kiln.dtype, but got {type(item)} instead.")
    table = dtype_precisions or _precisions()
    rtols, atols = zip(*[table.get(dtype, (0.0, 0.0)) for dtype in dtypes])
    return max(rtols), max(atols)


def get_tolerances(*inputs, rtol, atol, id: tuple = ()) -> tuple[float, float]:
    """``rtol`` and ``atol`` when both are given, the dtype defaults when neither is; ValueError otherwise."""
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{missing}.", id=id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


# --- messages ---------------------------------------------------------------------------------

def _mismatch_msg(*, default_identifier: str, identifier: MessageLike, extra: Optional[str], abs_diff, abs_diff_idx,
                  atol: float, rel_diff, rel_diff_idx, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def line(kind: str, diff, idx, tol) -> str:
        text = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at " \
                                                                        f"index {idx}"
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    text = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        text += f"{extra.strip()}\n"
    text += line("absolute", abs_diff, abs_diff_idx, atol)
    text += line("relative", rel_diff, rel_diff_idx, rtol)
    return text.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol: float, atol: float, identifier: MessageLike = None) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(default_identifier="Scalars", identifier=identifier,
                         extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff, abs_diff_idx=None,
                         atol=atol, rel_diff=rel_diff, rel_diff_idx=None, rtol=rtol)


def _host(tensor) -> np.ndarray:
    """A flat tensor's values in numpy (bfloat16 widened to float64, which holds it exactly)."""
    if tensor.dtype is _C.bfloat16:
        return np.array(tensor.tolist(), dtype=np.float64)
    return tensor.numpy()


def _unravel(flat_index: int, shape) -> tuple:
    index = []
    for size in reversed(tuple(shape)):
        flat_index, rest = divmod(flat_index, size)
        index.append(rest)
    return tuple(reversed(index))


def _greatest(diff) -> tuple:
    """The greatest value of a flat difference tensor (NaN counts as greatest, first one wins) and its position."""
    values = _host(diff)
    position = int(np.argmax(values))
    return values[position].item(), position


def _tensor_mismatch_msg(actual, expected, matches, *, rtol: float, atol: float,
                         identifier: MessageLike = None) -> str:
    total = matches.numel()
    mismatched = total - int(matches.sum().item())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    actual_flat, expected_flat, matches_flat = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point and not actual.dtype.is_complex:
        actual_flat, expected_flat = actual_flat.to(_C.int64), expected_flat.to(_C.int64)
    abs_diff = (actual_flat - expected_flat).abs().masked_fill(matches_flat, 0)
    max_abs, abs_position = _greatest(abs_diff)
    rel_diff = (abs_diff / expected_flat.abs()).masked_fill(matches_flat, 0)
    max_rel, rel_position = _greatest(rel_diff)
    return _mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra, abs_diff=max_abs,
                         abs_diff_idx=_unravel(abs_position, matches.shape), atol=atol, rel_diff=max_rel,
                         rel_diff_idx=_unravel(rel_position, matches.shape), rtol=rtol)


# --- closeness ----------------------------------------------------------------------------------

def _isclose_complex(actual, expected, *, rtol: float, atol: float, equal_nan: bool):
    """torch.isclose for complex tensors: equal parts, or both NaN (with equal_nan), or a finite
    ``|actual - expected|`` within ``atol + |rtol * expected|``."""
    real_a, real_e = view_as_real(actual), view_as_real(expected)
    close = (real_a == real_e).all(-1)
    if equal_nan:
        close = close.logical_or(real_a.isnan().any(-1).logical_and(real_e.isnan().any(-1)))
    if rtol == 0 and atol == 0:
        return close
    error = (actual - expected).abs()
    allowed = (expected * rtol).abs() + atol
    return close.logical_or(error.isfinite().logical_and(error <= allowed))


def _isclose(actual, expected, *, rtol: float, atol: float, equal_nan: bool):
    if actual.dtype.is_complex:
        return _isclose_complex(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)


# --- pairs ----------------------------------------------------------------------------------------

class _Pair:
    """Two leaf inputs and the options; ``compare`` raises _Failure when they differ."""

    def __init__(self, actual, expected, *, id: tuple = (), **_options) -> None:
        self.actual, self.expected, self.id = actual, expected, id

    def _fail(self, kind: type, msg: str):
        raise _Failure(kind, msg, id=self.id)

    def compare(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, actual={self.actual}, expected={self.expected})"


class _NonePair(_Pair):
    def __init__(self, actual, expected, **options) -> None:
        if actual is not None and expected is not None:
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, **options) -> None:
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(*(bool(x) for x in (actual, expected)), **options)

    def compare(self) -> None:
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    """Python ints, floats and complexes (and numpy numbers, as their Python values), whose
    tolerances are those of int64, float64 and complex128."""

    def __init__(self, actual, expected, *, id: tuple = (), rtol=None, atol=None, equal_nan: bool = False,
                 check_dtype: bool = False, **options) -> None:
        if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        super().__init__(actual, expected, id=id, **options)
        dtypes = {int: _C.int64, float: _C.float64, complex: _C.complex128}
        self.rtol, self.atol = get_tolerances(*[dtypes[type(x)] for x in (actual, expected)], rtol=rtol, atol=atol,
                                              id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            self._fail(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        self._fail(AssertionError, _scalar_mismatch_msg(actual, expected, rtol=self.rtol, atol=self.atol))


class _TensorLikePair(_Pair):
    """kiln tensors, and pairs of one type that kiln.as_tensor converts (numpy arrays ...)."""

    def __init__(self, actual, expected, *, id: tuple = (), allow_subclasses: bool = True, rtol=None, atol=None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, **options) -> None:
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id=id, **options)
        self.rtol, self.atol = get_tolerances(actual, expected, rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(tensor_like):
        if isinstance(tensor_like, _C.TensorBase):
            return tensor_like
        try:
            return as_tensor(tensor_like)
        except Exception:  # noqa: BLE001 - anything as_tensor refuses is simply not a tensor-like
            raise _Unsupported from None

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        actual, expected = self._equalize(actual.detach(), expected.detach())
        self._compare_values(actual, expected, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)

    def _compare_attributes(self, actual, expected) -> None:
        def mismatch(name, a, e):
            self._fail(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.")

        if actual.shape != expected.shape:
            mismatch("shape", actual.shape, expected.shape)
        if actual.layout != expected.layout:
            if self.check_layout:
                mismatch("layout", actual.layout, expected.layout)
        elif self.check_stride and actual.stride() != expected.stride():
            mismatch("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            mismatch("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            mismatch("dtype", actual.dtype, expected.dtype)

    @staticmethod
    def _equalize(actual, expected):
        """On one device and in one (promoted) dtype, as torch compares tensors whose checks were switched off."""
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype != expected.dtype:
            dtype = promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(dtype), expected.to(dtype)
        return actual, expected

    def _compare_values(self, actual, expected, *, rtol, atol, equal_nan, identifier: MessageLike = None) -> None:
        matches = _isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if bool(matches.all()):
            return
        if actual.dim() == 0:
            msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol, identifier=identifier)
        else:
            msg = _tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol, identifier=identifier)
        self._fail(AssertionError, msg)


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate_pairs(actual, expected, *, id: tuple = (), **options) -> list:
    """The leaf pairs of two (possibly nested) inputs; raises _Failure on a structure mismatch."""
    def is_sequence(x):
        return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)

    if is_sequence(actual) and is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           id=id)
        pairs = []
        for index in range(len(actual)):
            pairs.extend(_originate_pairs(actual[index], expected[index], id=(*id, index), **options))
        return pairs
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, additional = sorted(expected_keys - actual_keys), sorted(actual_keys - expected_keys)
            raise _Failure(AssertionError, f"The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {missing}\n"
                                           f"Additional keys in the actual mapping: {additional}", id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):  # sorted when the keys sort, for a deterministic first failure
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_originate_pairs(actual[key], expected[key], id=(*id, key), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
        except _Failure:
            raise
        except Exception as error:
            raise RuntimeError(f"Originating a {pair_type.__name__.lstrip('_')}() at item "
                               f"{''.join(str([item]) for item in id)} with\n\n{type(actual).__name__}(): {actual}\n\n"
                               f"and\n\n{type(expected).__name__}(): {expected}\n\nresulted in the unexpected "
                               f"exception above.") from error
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", id=id)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: Optional[float] = None,
                 atol: Optional[float] = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: MessageLike = None) -> None:
    """torch.testing.assert_close: AssertionError unless ``actual`` and ``expected`` are close.

    Tensors match in shape, and (per the ``check_*`` flags) device, dtype, layout and stride;
    their values where ``|actual - expected| <= atol + rtol * |expected|``, the default
    tolerances being torch's per dtype (float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 and
    complex64 1.3e-6/1e-5, float64 and complex128 1e-7/1e-7, others exact); with mismatched
    dtypes, the looser. Sequences and mappings compare element-wise; Python scalars compare as
    int64/float64/complex128 values. ``msg`` replaces (str) or rewrites (callable) the message.
    """
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                                 equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                                 check_layout=check_layout, check_stride=check_stride)
    except _Failure as failure:
        raise failure.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None
        except Exception as error:
            raise RuntimeError(f"Comparing\n\n{pair}\n\nresulted in the unexpected exception above.") from error


_ALLCLOSE_PRECISIONS = {_C.float16: (1e-3, 1e-3), _C.float32: (1e-4, 1e-5), _C.float64: (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: Optional[float] = None, atol: Optional[float] = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """torch.testing.assert_allclose (deprecated since torch 1.12; FutureWarning): assert_close with the
    old looser defaults (float16 1e-3/1e-3, float32 1e-4/1e-5, float64 1e-5/1e-8), NaN equal to NaN,
    dtypes not checked, and non-tensor inputs made tensors (``expected`` in ``actual``'s dtype)."""
    warnings.warn("`kiln.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `kiln.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, _C.TensorBase):
        actual = tensor(actual)
    if not isinstance(expected, _C.TensorBase):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = default_tolerances(actual, expected, dtype_precisions=_ALLCLOSE_PRECISIONS)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)
