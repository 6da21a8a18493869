"""The one table of comparison tolerances the tests take per dtype.

The defaults are torch.testing.assert_close's own per dtype (integers and bool
compare exactly). An op widens them only through WIDENED, each entry with the
reason written beside it: a tolerance that lets a wrong answer pass (a product
of 0, a dropped factor) is a hole in the suite, not a convenience. An op that
holds to tighter than the defaults keeps its tighter bound through NARROWED.
"""

from __future__ import annotations

# dtype name -> (rtol, atol): torch.testing.assert_close's defaults.
DEFAULT = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}

# (op, dtype name) -> ((rtol, atol), reason). Nothing else widens a tolerance.
_PROD_REASON = ("torch's CPU prod rounds every partial product to the 16-bit dtype, kiln keeps them in float32: over "
                "test_reductions' 120 factors torch lands up to 3.2e-3 (float16) / 1.5e-2 (bfloat16) from the float64 "
                "product, kiln within 4e-4 / 3.5e-3")
WIDENED = {
    ("prod", "float16"): ((5e-3, 1e-5), _PROD_REASON),
    ("prod", "bfloat16"): ((3e-2, 1e-5), _PROD_REASON),
}


_FFT_REASON = ("kiln's FFTW transforms and torch's agree to 1e-10 in double on test_fft's sizes: DEFAULT (1e-7) "
               "would let a lost term pass")
# (op, dtype name) -> ((rtol, atol), reason): where an op holds to tighter than DEFAULT, it keeps that.
NARROWED = {
    ("fft", "float64"): ((1e-10, 1e-10), _FFT_REASON),
    ("fft", "complex128"): ((1e-10, 1e-10), _FFT_REASON),
}


def tolerance(dtype: str, op: str | None = None) -> dict:
    """rtol/atol for comparing a ``dtype`` result of ``op`` (keyword arguments for assert_close / allclose);
    zero for integer and bool dtypes."""
    dtype = dtype.removeprefix("torch.").removeprefix("kiln.")
    if op is not None and (op, dtype) in WIDENED:
        rtol, atol = WIDENED[op, dtype][0]
    elif op is not None and (op, dtype) in NARROWED:
        rtol, atol = NARROWED[op, dtype][0]
    else:
        rtol, atol = DEFAULT.get(dtype, (0.0, 0.0))
    return {"rtol": rtol, "atol": atol}


# The random-case runner (random_cases.py) compares drawn composites (norms, convolutions, interpolation,
# grid_sample, batched products) over drawn sizes: (rtol, atol) per dtype, gradients ten times that. Wider than
# DEFAULT in the 16-bit dtypes (and float32's atol) because torch and kiln sum in different orders and round 16-bit
# intermediates at different steps, and drawn values land near zero where only an atol holds: with DEFAULT, 19 of
# the 1,092 drawn cases differ (a 20th was a kiln bug, pow's exponent gradient, fixed), float32: a one-element
# layer_norm's rounding-level mean difference times 1/sqrt(eps), 1.5e-5;
# float16 up to 1.5e-3 and bfloat16 up to 8e-3 absolute in batch_norm, bicubic, conv_transpose, baddbmm, linear;
# bfloat16 grid_sample up to 4.3e-2, where kiln and torch are each 2.6e-2 from the float64 result: the tanh'd
# bfloat16 grid moves the sampling points). float64 is tighter than DEFAULT.
DRAWN_COMPOSITE_TOLERANCE = {"float64": (1e-9, 1e-9), "float32": (1.3e-6, 5e-5), "bfloat16": (4e-2, 4e-2),
                             "float16": (5e-3, 5e-3), "int64": (0, 0), "int32": (0, 0), "bool": (0, 0)}
