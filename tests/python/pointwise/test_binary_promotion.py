"""Broadcasting and type promotion of the binary ops against torch, by
hypothesis: random shapes of up to 4 dims (sizes 0, 1 and more), random dtype
pairs, 0-dim tensors and Python numbers on either side; the result dtype, shape
and values (or the error) must be torch's. Also: results do not depend on the
thread count, and every CPU capability's build of the loops agrees.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiln
from cpu_capabilities import run_under
from pointwise_cases import make_pair, python_scalar, sample
from tolerant_compare import assert_same_outcome, to_torch
from torch_compare import DTYPE_NAMES, raised

OPS = {
    "add": lambda m, a, b: m.add(a, b),
    "sub": lambda m, a, b: m.sub(a, b),
    "mul": lambda m, a, b: m.mul(a, b),
    "div": lambda m, a, b: m.div(a, b),
    "remainder": lambda m, a, b: m.remainder(a, b),
    "pow": lambda m, a, b: m.pow(a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
    "eq": lambda m, a, b: m.eq(a, b),
    "lt": lambda m, a, b: m.lt(a, b),
    "bitwise_xor": lambda m, a, b: m.bitwise_xor(a, b),
    "logical_and": lambda m, a, b: m.logical_and(a, b),
    "where": lambda m, a, b: m.where(m.gt(a, 0) if isinstance(a, (kiln.Tensor, torch.Tensor)) else m.ones(1, dtype=m.bool), a, b),
    "operator_add": lambda m, a, b: a + b,
    "operator_truediv": lambda m, a, b: a / b,
    "operator_lt": lambda m, a, b: a < b,
}


NUMBERS_AS_TENSORS = ("add", "sub", "mul", "div")


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast: up to 4 dims, sizes 0-3, size-1 dims and dropped leading dims."""
    rank = draw(st.integers(0, 4))
    full = [draw(st.sampled_from([0, 1, 2, 3])) for _ in range(rank)]

    def one():
        dropped = draw(st.integers(0, rank))
        return tuple(1 if draw(st.booleans()) else size for size in full[dropped:])

    return one(), one()


@st.composite
def operand_kinds(draw):
    """What stands on each side: a tensor, a 0-dim tensor or a Python number (not both numbers)."""
    kinds = ["tensor", "zero_dim", "int", "float", "bool"]
    left = draw(st.sampled_from(kinds))
    right = draw(st.sampled_from(kinds if left in ("tensor", "zero_dim") else ["tensor", "zero_dim"]))
    return left, right


def _operand(kind, dtype, shape, rng):
    if kind in ("int", "float", "bool"):
        value = python_scalar(dtype, "any", kind)
        return value, value
    return make_pair(sample(dtype, shape if kind == "tensor" else (), rng), dtype)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(sorted(OPS)),
    dtypes=st.tuples(st.sampled_from(DTYPE_NAMES), st.sampled_from(DTYPE_NAMES)),
    shapes=broadcast_shapes(),
    kinds=operand_kinds(),
    seed=st.integers(0, 2**32 - 1),
)
def test_broadcasting_and_promotion_match_torch(op, dtypes, shapes, kinds, seed):
    rng = np.random.default_rng(seed)
    ka, ta = _operand(kinds[0], dtypes[0], shapes[0], rng)
    kb, tb = _operand(kinds[1], dtypes[1], shapes[1], rng)
    fn = OPS[op]
    if op in NUMBERS_AS_TENSORS and isinstance(ka, (int, float, bool)):
        # Known gap: torch.add(2, t) binds the number to the Tensor argument ("numbers as
        # tensors" in torch's parser, for add/sub/mul/div); kiln's parser does not.
        assert isinstance(raised(lambda: fn(kiln, ka, kb)), TypeError)
        return
    assert_same_outcome(lambda: fn(kiln, ka, kb), lambda: fn(torch, ta, tb))


# --- thread counts ----------------------------------------------------------------------------

THREAD_CASES = {
    "add_alpha": lambda m, a, b, w: m.add(a, b, alpha=0.3),
    "sub": lambda m, a, b, w: m.sub(a, b),
    "mul_scalar": lambda m, a, b, w: m.mul(a, 1.7),
    "div": lambda m, a, b, w: m.div(a, b),
    "maximum": lambda m, a, b, w: m.maximum(a, b),
    "pow": lambda m, a, b, w: m.pow(a, 1.3),
    "pow_tensor": lambda m, a, b, w: m.pow(a, b),
    "lerp": lambda m, a, b, w: m.lerp(a, b, w),
    "addcdiv": lambda m, a, b, w: m.addcdiv(a, b, w, value=0.7),
    "clamp": lambda m, a, b, w: m.clamp(a, -0.5, 0.5),
    "where": lambda m, a, b, w: m.where(m.lt(a, b), a, w),
    "lt": lambda m, a, b, w: m.lt(a, b),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(THREAD_CASES))
def test_results_do_not_depend_on_the_thread_count(name, dtype):
    # Sizes that are not multiples of a vector, split across threads at other places.
    rng = np.random.default_rng(7)
    shape = (3, 100_003)
    args = [make_pair(rng.standard_normal(shape), dtype)[0] for _ in range(3)]
    before = kiln.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            kiln.set_num_threads(threads)
            results.append(to_torch(THREAD_CASES[name](kiln, *args)))
    finally:
        kiln.set_num_threads(before)
    for other in results[1:]:
        torch.testing.assert_close(other, results[0], rtol=0, atol=0, equal_nan=True)


# --- outputs past the streaming-store threshold (Note [Streaming stores], vec/VecBinary.h) ------

STREAMING_CASES = {
    "add": lambda m, a, b: m.add(a, b),
    "sub": lambda m, a, b: m.sub(a, b),
    "add_alpha": lambda m, a, b: m.add(a, b, alpha=-0.5),
    "mul": lambda m, a, b: m.mul(a, b),
    "div": lambda m, a, b: m.div(a, b),
    "mul_number": lambda m, a, b: a * 1.25,
    "add_inplace": lambda m, a, b: a.add_(b),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(STREAMING_CASES))
def test_large_outputs_match_torch_bit_for_bit(name, dtype):
    # 16 MiB and more: the loops write with non-temporal stores after an aligning
    # prologue. The views start one element in, so the prologue has work to do.
    elements = (1 << 22) + 37 if dtype == "float32" else (1 << 21) + 37
    rng = np.random.default_rng(5)
    base = rng.standard_normal((2, elements + 1))
    (ka, ta), (kb, tb) = make_pair(base[0], dtype), make_pair(base[1], dtype)
    ka, ta, kb, tb = ka[1:], ta[1:], kb[1:], tb[1:]
    before = kiln.get_num_threads()
    try:
        for threads in (1, 2):
            kiln.set_num_threads(threads)
            k = STREAMING_CASES[name](kiln, ka, kb)
            t = STREAMING_CASES[name](torch, ta, tb)
            torch.testing.assert_close(to_torch(k), t, rtol=0, atol=0)
            if name == "add_inplace":
                (ka, ta), (kb, tb) = make_pair(base[0], dtype), make_pair(base[1], dtype)
                ka, ta, kb, tb = ka[1:], ta[1:], kb[1:], tb[1:]
    finally:
        kiln.set_num_threads(before)


# --- CPU capabilities ---------------------------------------------------------------------------

_CAPABILITY_SCRIPT = r"""
import json, sys
import numpy as np
import kiln
rng = np.random.default_rng(11)
out = {}
for dtype in ("float32", "float64"):
    a = kiln.from_numpy(rng.standard_normal(301).astype(dtype))
    b = kiln.from_numpy(rng.standard_normal(301).astype(dtype))
    a.numpy()[::7] = np.nan
    results = {
        "add": kiln.add(a, b, alpha=0.5), "div": kiln.div(a, b), "maximum": kiln.maximum(a, b),
        "minimum": kiln.minimum(a, b), "lt": kiln.lt(a, b), "eq": kiln.eq(a, a), "where": kiln.where(kiln.gt(a, 0), a, b),
        "clamp": kiln.clamp(a, -0.5, 0.25), "lerp": kiln.lerp(a, b, 0.7), "addcmul": kiln.addcmul(a, a, b, value=2),
        "pow": kiln.pow(b, a), "pow_scalar": kiln.pow(a, 2.5), "sqrt": kiln.pow(a, 0.5),
        "mul_neg_zero": 1.0 / kiln.mul(a, -0.0),
    }
    for name, t in results.items():
        out[f"{dtype}/{name}"] = [repr(float(x)) for x in t.tolist()]
print(json.dumps(out))
"""


@functools.cache
def _capability_results(capability: str) -> dict:
    return json.loads(run_under(capability, _CAPABILITY_SCRIPT))


@pytest.mark.parametrize("capability", ["avx2", "avx512"])
def test_every_cpu_capability_computes_the_same_bits(capability):
    # Vec is 16, 32 or 64 bytes wide; the mask and tail code differ by width, the
    # results must not. Where a multiply feeds an add (add with alpha, lerp,
    # addcmul) the AVX2 and AVX-512 builds fuse them (FMA) and the baseline does
    # not, and SLEEF's pow uses FMA where the ISA has it: those agree within
    # rounding (as PyTorch's builds for different CPUs do), the rest bit for bit.
    fused = ("/add", "/lerp", "/addcmul", "/pow")
    results = _capability_results(capability)
    reference = _capability_results("default")
    assert results.keys() == reference.keys()
    for key, values in results.items():
        if key.endswith(fused) or "/pow" in key:
            expected = np.array([float(v) for v in reference[key]])
            tol = 1e-6 if key.startswith("float32") else 1e-14
            np.testing.assert_allclose([float(v) for v in values], expected, rtol=tol, atol=tol)
        else:
            assert values == reference[key], f"{capability}: {key}"


def test_pow_exponent_gradient_takes_the_log_in_the_result_dtype():
    # a bfloat16 base under a float32 exponent: d/dexponent = result * log(base) with a float32 log, as torch
    # (kiln took a bfloat16 log, 0.2% off; found by the random-case runner's pow of a tensor, seed 4)
    base, exponent, seed = [[0.09765625, -0.05859375, -0.796875]], [-0.07004412, 0.33002153, 0.70675063], [
        [0.44945676, -0.0071342, 1.67258468]]
    kb, tb = kiln.tensor(base, dtype=kiln.bfloat16), torch.tensor(base, dtype=torch.bfloat16)
    ke, te = kiln.tensor(exponent, requires_grad=True), torch.tensor(exponent, requires_grad=True)
    (kb.abs() ** ke).backward(kiln.tensor(seed))
    (tb.abs() ** te).backward(torch.tensor(seed))
    torch.testing.assert_close(torch.tensor(ke.grad.tolist()), te.grad)


# --- a 0-dim tensor operand's precision ---------------------------------------------------------

# Note [CPU scalars at opmath precision] (eager/kernels/cpu/pointwise/per_capability/BinaryOpsKernel.cpp):
# found by test_broadcasting_and_promotion_match_torch (-82871 cast to float16 first is -inf, the quotient -0).
@pytest.mark.parametrize("divisor", [-82871, 70000])
def test_a_zero_dim_integer_divisor_is_read_in_float32_next_to_float16(divisor):
    k = kiln.div(kiln.tensor([2.5, 1.0], dtype=kiln.float16), kiln.tensor(divisor, dtype=kiln.int32))
    t = torch.div(torch.tensor([2.5, 1.0], dtype=torch.float16), torch.tensor(divisor, dtype=torch.int32))
    assert to_torch(k).tolist() == t.tolist()


def _cpu_scalar_cases():
    """mul and the divisions (and their in-place forms) with a CPU-scalar second operand, the other ops
    and the scalar as first operand, whose result differs between reading it at float precision and
    rounding it to the dtype first."""
    m, a = 1 + 2 ** -11, 2 ** -11 + 2 ** -24  # 3 * m and 1 + a round up only when read at float precision
    return [
        ("mul", lambda lib, x, s: lib.mul(x, s), 3.0, m),
        ("mul scalar first", lambda lib, x, s: lib.mul(s, x), 3.0, m),
        ("div", lambda lib, x, s: lib.div(x, s), 3.0, 1 / m),
        ("div trunc", lambda lib, x, s: lib.div(x, s, rounding_mode="trunc"), 6.0, 2 + 2 ** -12),
        ("div floor", lambda lib, x, s: lib.div(x, s, rounding_mode="floor"), 6.0, 2 + 2 ** -12),
        ("floor_divide", lambda lib, x, s: lib.floor_divide(x, s), 6.0, 2 + 2 ** -12),
        ("mul_", lambda lib, x, s: x.clone().mul_(s), 3.0, m),
        ("div_", lambda lib, x, s: x.clone().div_(s), 3.0, 1 / m),
        ("add", lambda lib, x, s: lib.add(x, s), 1.0, a),
        ("sub", lambda lib, x, s: lib.sub(x, s), 1.0, -a),
        ("atan2", lambda lib, x, s: lib.atan2(x, s), 1.0, 70000.0),
    ]


@pytest.mark.parametrize("case", _cpu_scalar_cases(), ids=lambda case: case[0])
@pytest.mark.parametrize("scalar_dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-dim", "1-element"])
def test_a_cpu_scalar_operand_is_read_as_torch_reads_it(case, scalar_dtype, dtype, shape):
    _, fn, value, scalar = case
    scalar = round(scalar * 1000) if scalar_dtype == "int32" else scalar
    want = fn(torch, torch.tensor([value, -value], dtype=getattr(torch, dtype)),
              torch.tensor(scalar, dtype=getattr(torch, scalar_dtype)).reshape(shape))
    got = fn(kiln, kiln.tensor([value, -value], dtype=getattr(kiln, dtype)),
             kiln.tensor(scalar, dtype=getattr(kiln, scalar_dtype)).reshape(shape))
    assert str(got.dtype) == str(want.dtype).replace("torch", "kiln")
    assert to_torch(got).tolist() == want.tolist()
