"""kiln's tensor printing against PyTorch's: one table of tensors, one comparison.

Each case builds a torch tensor (and optionally print options or a default dtype);
the test hands its values to ``kiln._tensor_str.format_tensor`` and expects exactly
``repr(t)`` with ``torch.`` read as ``kiln.``. Devices other than cpu cannot be made
by the CPU build of torch, so those few cases carry their expected text.
"""

import math

import pytest
import torch

from kiln._tensor_str import format_tensor, get_printoptions, printoptions, set_printoptions

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]

nan, inf = math.nan, math.inf

# Float value lists, each named by what it exercises.
FLOAT_VALUES = {
    "int_valued": [1.0, 2.0, -3.0],
    "fractional": [1.5, -2.25, 3.0],
    "tiny": [1e-5, 2e-6, -3e-7],
    "huge": [1e10, 3e12, -2e9],
    "mixed_scale": [1e-3, 1e5, 0.5],
    "nan_inf": [nan, inf, -inf, 1.5],
    "nan_int_valued": [0.0, nan, 2.0],
    "only_nonfinite": [nan, -inf],
    "zeros": [0.0, -0.0, 0.0],
    "negative": [-1.0, -2.5, -100.125],
    "rounding_up": [9.99996, 0.5],
    "big_int_valued": [123456789.0, 1.0],
    "precision_edge": [0.1, 0.2, 0.3],
    "long_row": [i * 1.25 for i in range(30)],
}

INT_VALUES = {
    "small": [1, 2, 3],
    "negative_and_wide": [-100, 0, 127],
    "long_row": list(range(-20, 40)),
}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _seeded(seed=0):
    return torch.Generator().manual_seed(seed)


def _float_cases():
    for dtype in FLOAT_DTYPES:
        name = _dtype_name(dtype)
        for label, values in FLOAT_VALUES.items():
            yield f"{name}-{label}", (lambda v=values, d=dtype: torch.tensor(v, dtype=d)), {}
        shaped = {
            "scalar": lambda d: torch.tensor(3.5, dtype=d),
            "scalar_neg_zero": lambda d: torch.tensor(-0.0, dtype=d),
            "scalar_nan": lambda d: torch.tensor(nan, dtype=d),
            "scalar_tiny": lambda d: torch.tensor(1e-6, dtype=d),
            "empty": lambda d: torch.empty(0, dtype=d),
            "empty_0x3": lambda d: torch.empty(0, 3, dtype=d),
            "empty_2x0x4": lambda d: torch.empty(2, 0, 4, dtype=d),
            "randn_2x3": lambda d: torch.randn(2, 3, generator=_seeded()).to(d),
            "randn_2x3x4": lambda d: torch.randn(2, 3, 4, generator=_seeded()).to(d),
            "randn_4x5x6x2": lambda d: torch.randn(4, 5, 6, 2, generator=_seeded()).to(d),
            "randn_2000": lambda d: torch.randn(2000, generator=_seeded()).to(d),
            "randn_40x40": lambda d: torch.randn(40, 40, generator=_seeded()).to(d),
            "randn_40x40_x1e6": lambda d: (torch.randn(40, 40, generator=_seeded()) * 1e6).to(d),
            "arange_2000": lambda d: torch.arange(2000, dtype=d),
            "wide_2x20": lambda d: (torch.randn(2, 20, generator=_seeded()) * 1000).to(d),
            "summarised_hides_nan": lambda d: torch.cat(
                [torch.ones(3), torch.full((1994,), nan), torch.full((3,), 2.0)]
            ).to(d),
        }
        for label, make in shaped.items():
            yield f"{name}-{label}", (lambda m=make, d=dtype: m(d)), {}


def _int_cases():
    for dtype in INT_DTYPES:
        name = _dtype_name(dtype)
        for label, values in INT_VALUES.items():
            if dtype == torch.uint8:
                values = [abs(v) for v in values]
            if dtype == torch.int8:
                values = [max(-128, min(127, v)) for v in values]
            yield f"{name}-{label}", (lambda v=values, d=dtype: torch.tensor(v, dtype=d)), {}
        shaped = {
            "scalar": lambda d: torch.tensor(7, dtype=d),
            "empty": lambda d: torch.empty(0, dtype=d),
            "empty_0x3": lambda d: torch.empty(0, 3, dtype=d),
            "arange_2000": lambda d: torch.arange(2000).to(d),
            "randint_40x40": lambda d: torch.randint(0, 100, (40, 40), generator=_seeded()).to(d),
            "randint_2x3x4": lambda d: torch.randint(0, 120, (2, 3, 4), generator=_seeded()).to(d),
        }
        for label, make in shaped.items():
            yield f"{name}-{label}", (lambda m=make, d=dtype: m(d)), {}


def _bool_cases():
    yield "bool-pair", lambda: torch.tensor([True, False]), {}
    yield "bool-scalar", lambda: torch.tensor(True), {}
    yield "bool-empty", lambda: torch.empty(0, dtype=torch.bool), {}
    yield "bool-empty_0x2", lambda: torch.empty(0, 2, dtype=torch.bool), {}
    yield "bool-40x40", lambda: torch.rand(40, 40, generator=_seeded()) > 0.5, {}
    yield "bool-2x3x4", lambda: torch.rand(2, 3, 4, generator=_seeded()) > 0.5, {}


def _options_cases():
    randn = lambda *shape: torch.randn(*shape, generator=_seeded())  # noqa: E731
    cases = {
        "precision2": (lambda: randn(5), dict(precision=2)),
        "precision8": (lambda: randn(5), dict(precision=8)),
        "precision0": (lambda: randn(5), dict(precision=0)),
        "threshold5": (lambda: torch.arange(10), dict(threshold=5)),
        "threshold5_float": (lambda: randn(3, 4), dict(threshold=5)),
        "threshold0_scalar": (lambda: torch.tensor(2.5), dict(threshold=0)),
        "edgeitems1": (lambda: randn(40, 40), dict(edgeitems=1)),
        "edgeitems0_small": (lambda: randn(2, 3), dict(edgeitems=0)),
        "edgeitems0_large": (lambda: randn(40, 40), dict(edgeitems=0)),
        "edgeitems0_vector": (lambda: randn(2000), dict(edgeitems=0)),
        "linewidth40": (lambda: randn(30), dict(linewidth=40)),
        "linewidth40_2d": (lambda: randn(3, 12), dict(linewidth=40)),
        "linewidth10": (lambda: randn(4), dict(linewidth=10)),
        "linewidth200": (lambda: randn(4, 30), dict(linewidth=200)),
        "sci_on": (lambda: randn(2, 3), dict(sci_mode=True)),
        "sci_on_int_valued": (lambda: torch.tensor([1.0, 2.0]), dict(sci_mode=True)),
        "sci_off": (lambda: torch.tensor([1e-8, 1e8]), dict(sci_mode=False)),
        "sci_on_precision2": (lambda: randn(4), dict(sci_mode=True, precision=2)),
        "profile_short": (lambda: randn(40, 40), dict(profile="short")),
        "profile_full": (lambda: torch.arange(1200), dict(profile="full")),
        "profile_full_float": (lambda: randn(1100), dict(profile="full")),
        "profile_short_override": (lambda: randn(40, 40), dict(profile="short", precision=3)),
    }
    for label, (make, options) in cases.items():
        yield f"options-{label}", make, dict(options=options)


def _grad_cases():
    def leaf(*values, dtype=torch.float32):
        return torch.tensor(values, dtype=dtype, requires_grad=True)

    yield "grad-requires_grad", lambda: leaf(1.0, 2.0), {}
    yield "grad-requires_grad_float64", lambda: leaf(1.0, 2.0, dtype=torch.float64), {}
    yield "grad-scalar_requires_grad", lambda: torch.tensor(1.5, requires_grad=True), {}
    yield "grad-add_backward", lambda: leaf(1.0, 2.0) + 1, {}
    yield "grad-mul_backward_2d", lambda: torch.randn(3, 3, requires_grad=True) * 2, {}
    yield "grad-sum_backward", lambda: leaf(1.0, 2.0).sum(), {}
    yield "grad-empty", lambda: torch.empty(0, 2, dtype=torch.float64, requires_grad=True), {}
    yield "grad-suffix_wraps", lambda: leaf(*[1.125] * 9, dtype=torch.float64), {}
    yield "grad-suffix_wraps_narrow", lambda: leaf(1.5, dtype=torch.float64), dict(
        options=dict(linewidth=30)
    )
    yield "grad-multiline_suffix", lambda: torch.randn(20, 20, generator=_seeded()).double().requires_grad_(), {}


def _suffix_wrap_cases():
    # The last line leaves room for "dtype=kiln.int8" but not "dtype=torch.int8":
    # kiln must break where PyTorch breaks.
    yield "wrap-dtype_suffix_at_line_end", lambda: torch.tensor([1] * 18, dtype=torch.int8), {}
    yield "wrap-dtype_suffix_one_shorter", lambda: torch.tensor([1] * 17, dtype=torch.int8), {}


def _scale_sweep_cases():
    """Random values across many magnitudes and signs, to stress width selection."""
    for exponent in (-12, -6, -4, -3, 0, 2, 4, 7, 8, 9, 30, 200):
        for dtype in (torch.float32, torch.float64):
            make = lambda e=exponent, d=dtype: (  # noqa: E731
                torch.randn(7, 5, generator=_seeded(e + 50), dtype=torch.float64) * 10.0**e
            ).to(d)
            yield f"sweep-{_dtype_name(dtype)}-1e{exponent}", make, {}


def _default_dtype_cases():
    yield "default64-float32", lambda: torch.tensor([1.5, 2.0], dtype=torch.float32), dict(default=torch.float64)
    yield "default64-float64", lambda: torch.tensor([1.5, 2.0], dtype=torch.float64), dict(default=torch.float64)
    yield "default64-empty32", lambda: torch.empty(0, dtype=torch.float32), dict(default=torch.float64)
    yield "default64-empty64", lambda: torch.empty(0, dtype=torch.float64), dict(default=torch.float64)
    yield "default64-int64", lambda: torch.tensor([1, 2]), dict(default=torch.float64)


CASES = [
    *_float_cases(),
    *_int_cases(),
    *_bool_cases(),
    *_options_cases(),
    *_grad_cases(),
    *_suffix_wrap_cases(),
    *_scale_sweep_cases(),
    *_default_dtype_cases(),
]


def _format_like_kiln(t: torch.Tensor, default_dtype: torch.dtype) -> str:
    """What kiln prints for ``t``: its values as numpy, its facts as arguments."""
    plain = t.detach()
    if plain.dtype in (torch.float16, torch.bfloat16):
        plain = plain.float()
    return format_tensor(
        plain.numpy(),
        dtype_name=_dtype_name(t.dtype),
        default_dtype_name=_dtype_name(default_dtype),
        requires_grad=t.requires_grad,
        grad_fn_name=None if t.grad_fn is None else type(t.grad_fn).__name__,
    )


@pytest.fixture
def restore_print_state():
    """Put print options and the default dtype back however the test ends."""
    yield
    set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("make, extras", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_repr_matches_torch(make, extras, restore_print_state):
    options = extras.get("options", {})
    default_dtype = extras.get("default", torch.float32)
    torch.set_printoptions(**options)
    set_printoptions(**options)
    t = make()
    torch.set_default_dtype(default_dtype)
    expected = repr(t).replace("torch.", "kiln.")
    assert _format_like_kiln(t, default_dtype) == expected


DEVICE_CASES = [
    (dict(values=[1.0, 2.0], dtype_name="float32", device="cuda:0"), "tensor([1., 2.], device='cuda:0')"),
    (dict(values=[1.0, 2.0], dtype_name="float32", device="cpu"), "tensor([1., 2.])"),
    (
        dict(values=[1, 2], dtype_name="int32", device="cuda:1", requires_grad=False),
        "tensor([1, 2], device='cuda:1', dtype=kiln.int32)",
    ),
    (
        dict(values=[1.5], dtype_name="float32", device="cuda:0", grad_fn_name="AddBackward0"),
        "tensor([1.5000], device='cuda:0', grad_fn=<AddBackward0>)",
    ),
    (
        dict(values=[], dtype_name="float64", device="cuda:0", size=(0, 2)),
        "tensor([], device='cuda:0', size=(0, 2), dtype=kiln.float64)",
    ),
    (
        dict(values=[1.0] * 12, dtype_name="float64", device="cuda:0", requires_grad=True),
        "tensor([1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.], device='cuda:0',\n"
        "       dtype=kiln.float64, requires_grad=True)",
    ),
]


@pytest.mark.parametrize("arguments, expected", DEVICE_CASES)
def test_device_suffix(arguments, expected):
    import numpy as np

    arguments = dict(arguments)
    values = np.array(arguments.pop("values"), dtype=np.float64 if "float" in arguments["dtype_name"] else np.int64)
    if "size" in arguments:
        values = values.reshape(arguments["size"])
    assert format_tensor(values, **arguments) == expected


def test_printoptions_context_restores(restore_print_state):
    before = get_printoptions()
    with printoptions(precision=1, sci_mode=True):
        assert get_printoptions()["precision"] == 1
    assert get_printoptions() == before


def test_set_printoptions_signature_matches_torch():
    import inspect

    assert inspect.signature(set_printoptions) == inspect.signature(torch.set_printoptions)
