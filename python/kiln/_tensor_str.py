"""Tensor printing: ``repr(tensor)`` and ``str(tensor)`` exactly as PyTorch prints them.

The Tensor class hands ``format_tensor`` a numpy array of the tensor's values and
a few facts about it (dtype name, device, autograd state); this module turns them
into text. It is pure Python plus numpy and imports nothing from kiln, so it can be
tested against ``torch`` on its own.

The rules, as PyTorch applies them:

* A tensor with more than ``threshold`` elements is *summarised*: along every
  dimension longer than ``2 * edgeitems`` only the first and last ``edgeitems``
  entries are shown, with ``...`` between them.
* One formatter serves the whole tensor, chosen from the values that will be
  shown. Integer and bool tensors print ``str(value)``, right-aligned to the
  widest. Floating tensors look only at their nonzero finite values:
  - *integer mode* when all are whole numbers: ``1.``, ``-3.``;
  - *scientific mode* (unless the user forced it on or off) when
    max/min > 1000, max > 1e8 or min < 1e-4 (of absolute values):
    ``1.0000e+10``;
  - otherwise fixed point with ``precision`` decimals: ``0.5000``.
* Rows wrap so a line holds no more than ``linewidth`` characters.
* Suffixes follow the values: ``device='cuda:0'`` (not for cpu), ``size=(...)``
  for empty tensors that are not 1-D (and always when ``edgeitems`` is 0),
  ``dtype=kiln.X`` unless X is the default float dtype, int64 or bool (for empty
  tensors unless X is the default float dtype), then ``grad_fn=<Name>`` or
  ``requires_grad=True``. A suffix that would overflow the line goes on a new one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = [
    "PrintOptions",
    "PRINT_OPTS",
    "set_printoptions",
    "get_printoptions",
    "printoptions",
    "format_meta_tensor",
    "format_tensor",
]

# Floating dtypes by kiln name; every other dtype prints its values with str().
_FLOATING_DTYPE_NAMES = frozenset({"float16", "bfloat16", "float32", "float64"})

# Dtypes never named in the dtype= suffix of a non-empty tensor, besides the default float dtype.
_IMPLICIT_DTYPE_NAMES = frozenset({"int64", "bool"})
# Each complex dtype and the default float dtype under which it goes unnamed, as in PyTorch.
_COMPLEX_DTYPE_NAMES = {"complex64": "float32", "complex128": "float64"}

_TENSOR_PREFIX = "tensor("

# Note [Suffix widths as PyTorch measures them]: PyTorch decides where a suffix
# wraps from the length of "dtype=torch.float64"; kiln writes "dtype=kiln.float64",
# one character shorter. Measuring the dtype suffix as PyTorch does keeps every
# line break where PyTorch puts it, so kiln's repr is PyTorch's with "torch." read
# as "kiln.", even for a tensor whose last line ends right at the line width.
_DTYPE_SUFFIX_WIDTH_GAP = len("torch.") - len("kiln.")


@dataclasses.dataclass
class PrintOptions:
    """The knobs ``set_printoptions`` turns; defaults are PyTorch's."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = PrintOptions()

# Named bundles of options accepted as set_printoptions(profile=...).
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    r"""Set options for printing tensors (the same options as ``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point for floating point output (default 4).
        threshold: number of elements above which a tensor is summarised (default 1000).
        edgeitems: entries shown at each end of a summarised dimension (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; applied first, then the
            explicit options above override it.
        sci_mode: True or False to force scientific notation on or off; None (also
            what omitting it means) lets the values decide.
    """
    if profile is not None and profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    # Like PyTorch, every call sets sci_mode, so omitting it returns to automatic.
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs) -> Iterator[None]:
    """Context manager that sets print options and restores the old ones on exit."""
    old_options = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old_options)


class _ElementFormatter:
    """Formats single values of one tensor to a common width.

    Built from the values that will be shown (the summarised ones when the tensor
    is summarised), so every printed value lines up with the widest.
    """

    def __init__(self, shown_values: np.ndarray, is_floating: bool):
        self.is_floating = is_floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not is_floating:
            for value in shown_values.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(str(value)))
            return

        flat = shown_values.reshape(-1).astype(np.float64)
        nonzero_finite = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero_finite.size == 0:
            return
        abs_values = np.abs(nonzero_finite)
        abs_min, abs_max = float(abs_values.min()), float(abs_values.max())
        self.int_mode = bool(np.all(nonzero_finite == np.ceil(nonzero_finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = abs_max / abs_min > 1000.0 or abs_max > 1.0e8 or abs_min < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode

        if self.sci_mode:
            spec, extra = f".{PRINT_OPTS.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "." of "3."
        else:
            spec, extra = f".{PRINT_OPTS.precision}f", 0
        for value in _widest_candidates(nonzero_finite):
            self.max_width = max(self.max_width, len(format(value, spec)) + extra)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        """One value (a Python float, int or bool), right-aligned to the common width."""
        if not self.is_floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.max_width}.{PRINT_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{PRINT_OPTS.precision}f")
        return text.rjust(self.max_width)


class _ComplexFormatter:
    """Formats complex values as PyTorch does: the real parts aligned by one formatter,
    the imaginary parts formatted by another, signed and followed by ``j`` (``1.+2.j``)."""

    def __init__(self, shown_values: np.ndarray):
        self.real = _ElementFormatter(shown_values.real, True)
        self.imag = _ElementFormatter(shown_values.imag, True)

    def width(self) -> int:
        return self.real.width() + self.imag.width() + 1  # and the "j"

    def format(self, value) -> str:
        value = complex(value)
        real_str = self.real.format(value.real)
        imag_str = (self.imag.format(value.imag) + "j").lstrip()
        return real_str + imag_str if imag_str[0] in "+-" else real_str + "+" + imag_str


def _widest_candidates(values: np.ndarray) -> list[float]:
    """The values whose printed form can be the widest, in fixed or scientific notation.

    A printed width grows with the sign and, for fixed point, with the magnitude;
    for scientific notation with the exponent's distance from zero. So for each sign
    the largest and smallest magnitudes cover every case, and the full set of
    values never needs formatting just to measure it.
    """
    candidates = []
    for same_sign in (values[values > 0], values[values < 0]):
        if same_sign.size:
            candidates += [float(same_sign.min()), float(same_sign.max())]
    return candidates


def _edge_indices(length: int) -> np.ndarray | slice:
    """Indices kept along one dimension of a summarised tensor."""
    edge = PRINT_OPTS.edgeitems
    if length > 2 * edge:
        return np.r_[0:edge, length - edge : length]
    return slice(None)


def _summarised_values(values: np.ndarray) -> np.ndarray:
    """The values a summarised tensor shows (what PyTorch's get_summarized_data keeps)."""
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        # edgeitems == 0 keeps all values here (self[-0:] is the whole tensor);
        # harmless, since such a vector prints as "[...]".
        if PRINT_OPTS.edgeitems == 0:
            return values
        return values[_edge_indices(values.shape[0])]
    if PRINT_OPTS.edgeitems == 0:
        return values[:0]
    for axis in range(values.ndim):
        index = [slice(None)] * values.ndim
        index[axis] = _edge_indices(values.shape[axis])
        values = values[tuple(index)]
    return values


def _vector_str(values: np.ndarray, indent: int, summarize: bool, formatter: _ElementFormatter) -> str:
    """A 1-D tensor's values: ``[a, b, c]``, wrapped to the line width."""
    element_length = formatter.width() + 2  # the value plus ", "
    elements_per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        elements = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        elements = (
            [formatter.format(v) for v in values[:edge].tolist()]
            + [" ..."]
            + [formatter.format(v) for v in values[-edge:].tolist()]
        )
    else:
        elements = [formatter.format(v) for v in values.tolist()]
    lines = [
        ", ".join(elements[start : start + elements_per_line])
        for start in range(0, len(elements), elements_per_line)
    ]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values: np.ndarray, indent: int, summarize: bool, formatter: _ElementFormatter) -> str:
    """Values of any rank, nested brackets with one blank line per extra dimension."""
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, formatter)
    length, edge = values.shape[0], PRINT_OPTS.edgeitems
    if summarize and length > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(length - edge, length))
    else:
        rows = list(range(length))
    slices = [
        "..." if row is None else _nested_str(values[row], indent + 1, summarize, formatter)
        for row in rows
    ]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _values_str(values: np.ndarray, indent: int, is_floating: bool) -> str:
    """The bracketed values of a non-empty tensor, summarised past the threshold."""
    summarize = values.size > PRINT_OPTS.threshold
    shown = _summarised_values(values) if summarize else values
    formatter = _ComplexFormatter(shown) if np.iscomplexobj(shown) else _ElementFormatter(shown, is_floating)
    return _nested_str(values, indent, summarize, formatter)


def _measured_width(suffix: str) -> int:
    """A suffix's width as PyTorch counts it. See Note [Suffix widths as PyTorch measures them]."""
    if suffix.startswith("dtype=kiln."):
        return len(suffix) + _DTYPE_SUFFIX_WIDTH_GAP
    return len(suffix)


def _add_suffixes(tensor_str: str, suffixes: Sequence[str], indent: int) -> str:
    """Append ``, suffix`` items and the closing parenthesis, wrapping long lines."""
    parts = [tensor_str]
    # PyTorch's measure of the last line (two more than its length when there is
    # no newline); kept as is so lines break where PyTorch breaks them.
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        width = _measured_width(suffix)
        if last_line_len + width + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + width
        else:
            parts.append(", " + suffix)
            last_line_len += width + 2
    parts.append(")")
    return "".join(parts)


def _shows_device(device) -> bool:
    """Whether the device is printed: every device but the cpu."""
    return device is not None and str(device).split(":")[0] != "cpu"


def format_meta_tensor(
    *,
    dtype_name: str,
    default_dtype_name: str = "float32",
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    size: Sequence[int],
) -> str:
    """The ``repr`` of a meta tensor, which has no values: ``tensor(..., device='meta', size=(2, 3))``,
    then the dtype unless it is the default float dtype, as PyTorch writes it."""
    suffixes = ["device='meta'", f"size={tuple(int(s) for s in size)}"]
    if dtype_name != default_dtype_name:
        suffixes.append(f"dtype=kiln.{dtype_name}")
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(_TENSOR_PREFIX + "...", suffixes, len(_TENSOR_PREFIX))


def format_tensor(
    values: np.ndarray,
    *,
    dtype_name: str,
    default_dtype_name: str = "float32",
    device=None,
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    size: Sequence[int] | None = None,
) -> str:
    """The ``repr`` of a tensor, as PyTorch writes it with ``torch.`` read as ``kiln.``.

    Args:
        values: the tensor's values with the tensor's shape (float16 and bfloat16
            values as float32, bool as bool, integers as their numpy type).
        dtype_name: the kiln dtype's name, e.g. ``"float32"``, ``"int64"``.
        default_dtype_name: the name of ``kiln.get_default_dtype()``.
        device: the tensor's device, or its string (``"cuda:0"``); None means cpu.
        requires_grad: whether the tensor requires grad (shown for leaves).
        grad_fn_name: the class name of the tensor's grad_fn, e.g. ``"AddBackward0"``.
        size: the tensor's shape, if it is not ``values.shape``.

    Example::

        >>> format_tensor(np.array([1.0, 2.5], np.float32), dtype_name="float32")
        'tensor([1.0000, 2.5000])'
    """
    values = np.asarray(values)
    shape = tuple(int(s) for s in (values.shape if size is None else size))
    is_floating = dtype_name in _FLOATING_DTYPE_NAMES
    if is_floating:
        values = values.astype(np.float64, copy=False)  # exact for every float format
    elif dtype_name in _COMPLEX_DTYPE_NAMES:
        values = values.astype(np.complex128, copy=False)
    indent = len(_TENSOR_PREFIX)
    dtype_suffix = f"dtype=kiln.{dtype_name}"

    suffixes = []
    if _shows_device(device):
        suffixes.append(f"device='{device}'")
    if values.size == 0:
        # An empty tensor has no values to hint at its dtype, so only the default
        # float dtype goes unnamed; a shape other than (0,) is spelled out, as numpy does.
        if len(shape) != 1:
            suffixes.append(f"size={shape}")
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={shape}")
        implicit_complex = _COMPLEX_DTYPE_NAMES.get(dtype_name) == default_dtype_name
        if dtype_name != default_dtype_name and dtype_name not in _IMPLICIT_DTYPE_NAMES and not implicit_complex:
            suffixes.append(dtype_suffix)
        tensor_str = _values_str(values, indent, is_floating)

    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(_TENSOR_PREFIX + tensor_str, suffixes, indent)
