"""kiln.cuda on a GPU: devices, streams and events, the caching allocator, copies between
devices, and every eager CUDA op against the CPU result. Without a GPU every test skips
with "no GPU"; tests/gpu/run.sh runs this file on a lent GPU machine."""

import pytest
import torch

import kiln
from torch_compare import to_kiln

pytestmark = pytest.mark.skipif(not kiln.cuda.is_available(), reason="no GPU on this machine")

FLOATS = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16]
TOL = {kiln.float32: (1e-5, 1e-5), kiln.float64: (1e-7, 1e-7), kiln.float16: (1e-3, 1e-3),
       kiln.bfloat16: (1.6e-2, 1e-2)}


def _close(cuda_result, cpu_result, dtype=None):
    got = cuda_result.cpu()
    assert got.device.type == "cpu"
    assert got.dtype == cpu_result.dtype, (got.dtype, cpu_result.dtype)
    assert tuple(got.shape) == tuple(cpu_result.shape)
    rtol, atol = TOL.get(dtype or got.dtype, (0, 0))
    g = torch.from_numpy(got.float().numpy() if got.dtype in (kiln.float16, kiln.bfloat16) else got.numpy())
    c = torch.from_numpy(cpu_result.float().numpy() if cpu_result.dtype in (kiln.float16, kiln.bfloat16)
                         else cpu_result.numpy())
    torch.testing.assert_close(g, c, rtol=rtol, atol=atol, equal_nan=True)


# --- devices, streams, events ------------------------------------------------------------------

def test_devices():
    assert kiln.cuda.device_count() >= 1
    assert kiln.cuda.current_device() == 0
    props = kiln.cuda.get_device_properties(0)
    assert props.total_memory > 0 and props.major >= 7 and props.multi_processor_count > 0
    assert kiln.cuda.get_device_name(0) == props.name
    kiln.cuda.synchronize()


def test_streams_and_events():
    s = kiln.cuda.Stream()
    assert s != kiln.cuda.default_stream() and kiln.cuda.current_stream() == kiln.cuda.default_stream()
    start, end = kiln.cuda.Event(enable_timing=True), kiln.cuda.Event(enable_timing=True)
    with kiln.cuda.stream(s):
        assert kiln.cuda.current_stream() == s
        start.record()
        x = kiln.ones(1 << 20, device="cuda")
        y = (x * 2).sum()
        end.record()
    assert kiln.cuda.current_stream() == kiln.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0
    kiln.cuda.default_stream().wait_stream(s)
    assert y.item() == 2 * (1 << 20)
    with pytest.raises(RuntimeError, match="enable_timing"):
        kiln.cuda.Event().elapsed_time(kiln.cuda.Event())


# --- memory -------------------------------------------------------------------------------------

def test_memory_statistics_and_cache():
    kiln.cuda.synchronize()
    kiln.cuda.empty_cache()
    base = kiln.cuda.memory_allocated()
    x = kiln.empty(1000, device="cuda")  # 4000 bytes -> one 4096-byte block
    assert kiln.cuda.memory_allocated() == base + 4096
    assert kiln.cuda.memory_reserved() >= kiln.cuda.memory_allocated()
    reserved = kiln.cuda.memory_reserved()
    del x
    assert kiln.cuda.memory_allocated() == base
    y = kiln.empty(1000, device="cuda")  # served from the cache: no new segment
    assert kiln.cuda.memory_reserved() == reserved
    assert kiln.cuda.max_memory_allocated() >= base + 4096
    del y
    kiln.cuda.reset_peak_memory_stats()
    assert kiln.cuda.max_memory_allocated() == kiln.cuda.memory_allocated()
    assert "allocated memory" in kiln.cuda.memory_summary()
    assert kiln.cuda.memory_stats()["allocated_bytes.all.current"] == kiln.cuda.memory_allocated()


def test_stream_aware_reuse_and_record_stream():
    side = kiln.cuda.Stream()
    x = kiln.ones(1 << 18, device="cuda")
    with kiln.cuda.stream(side):
        y = x * 3
    x.record_stream(side)
    del x
    side.synchronize()
    z = kiln.ones(1 << 18, device="cuda")  # a later allocation is fine once the event completed
    assert z.sum().item() == 1 << 18
    assert y.sum().item() == 3 * (1 << 18)


def test_allocator_stress_with_several_streams():
    # Many sizes (small and large pools, splits and merges) allocated, used and freed on four
    # streams, blocks handed between streams with record_stream; afterwards every byte is back.
    kiln.cuda.synchronize()
    base = kiln.cuda.memory_allocated()
    streams = [kiln.cuda.Stream() for _ in range(4)]
    sizes = [1, 300, 4096, 70000, 1 << 20, (1 << 20) + 1, 3 << 20, 12345678]
    live = []
    for i in range(400):
        s = streams[i % 4]
        with kiln.cuda.stream(s):
            t = kiln.full((sizes[(i * 7) % len(sizes)] // 4 + 1,), float(i), device="cuda")
            live.append((t, float(i)))
        if i % 5 == 0:
            other = streams[(i + 1) % 4]
            with kiln.cuda.stream(other):
                _ = live[-1][0] * 2
            live[-1][0].record_stream(other)
        if len(live) > 24:
            t, v = live.pop(0)
            assert t[:1].cpu().item() == v
            del t
    for s in streams:
        s.synchronize()
    for t, v in live:
        assert t[-1:].cpu().item() == v
    live.clear()
    kiln.cuda.synchronize()
    assert kiln.cuda.memory_allocated() == base
    stats = kiln.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == base
    kiln.cuda.empty_cache()
    assert kiln.cuda.memory_reserved() >= kiln.cuda.memory_allocated()


def test_out_of_memory_raises_with_a_summary():
    with pytest.raises(kiln.cuda.OutOfMemoryError, match="out of memory"):
        kiln.empty(1 << 50, dtype=kiln.uint8, device="cuda")
    assert kiln.ones(4, device="cuda").sum().item() == 4  # still usable


# --- copies ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.int64, kiln.bool, kiln.bfloat16])
def test_round_trip(dtype):
    x = (kiln.randn(5, 7) * 10).to(dtype)
    c = x.to("cuda")
    assert c.device == kiln.device("cuda:0") and c.is_cuda
    assert c.cpu().equal(x)
    assert x.cuda().cpu().equal(x)
    assert x.t().cuda().cpu().equal(x.t())  # strided source
    assert c.t().contiguous().cpu().equal(x.t())


def test_casts_on_device_match_cpu():
    x = kiln.randn(4, 6) * 100
    for src in [kiln.float32, kiln.float64, kiln.int32, kiln.uint8, kiln.bool, kiln.float16]:
        for dst in [kiln.float32, kiln.int64, kiln.bool, kiln.bfloat16]:
            a = x.to(src)
            assert a.cuda().to(dst).cpu().equal(a.to(dst)), (src, dst)


def test_pinned_non_blocking_copies():
    x = kiln.randn(1 << 16).pin_memory()
    assert x.is_pinned() and not kiln.randn(2).is_pinned()
    c = x.to("cuda", non_blocking=True)
    back = kiln.empty(1 << 16).pin_memory()
    back.copy_(c, non_blocking=True)
    kiln.cuda.synchronize()
    assert back.equal(x)


def test_mixing_devices_raises_torchs_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        kiln.ones(3, device="cuda") + kiln.ones(3)
    # a 0-dim CPU tensor is a scalar, as in torch
    assert (kiln.ones(3, device="cuda") + kiln.tensor(2.0)).cpu().equal(kiln.full((3,), 3.0))


def test_op_without_a_cuda_kernel_names_cuda():
    with pytest.raises(NotImplementedError, match="CUDA"):
        kiln.cumsum(kiln.ones(3, 3, device="cuda"), 0)


# --- ops against the CPU result -----------------------------------------------------------------

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "neg", "abs", "relu", "floor", "ceil", "round",
         "reciprocal", "rsqrt", "expm1", "log1p", "erf"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", UNARY)
def test_unary_ops(op, dtype):
    x = (kiln.rand(33, 17) + 0.1).to(dtype)
    _close(getattr(x.cuda(), op)(), getattr(x, op)(), dtype)
    _close(getattr(x.t().cuda(), op)(), getattr(x.t(), op)(), dtype)  # strided


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge", "atan2",
          "remainder", "fmod"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_broadcast(op, dtype):
    a = (kiln.rand(4, 1, 5) + 0.5).to(dtype)
    b = (kiln.rand(3, 1) + 0.5).to(dtype)
    _close(getattr(a.cuda(), op)(b.cuda()), getattr(a, op)(b))


@pytest.mark.parametrize("dtype", [kiln.int64, kiln.int32, kiln.uint8, kiln.bool])
def test_integer_ops_and_promotion(dtype):
    a = (kiln.rand(6) * 50).to(dtype)
    b = (kiln.rand(6) * 50 + 1).to(dtype)
    for op in ["add", "mul", "eq", "lt", "maximum"]:
        _close(getattr(a.cuda(), op)(b.cuda()), getattr(a, op)(b))
    _close(a.cuda() / b.cuda(), a / b)  # true division promotes
    _close(a.cuda() + 2.5, a + 2.5)  # Python scalar
    _close(a.cuda().float() * b.cuda(), a.float() * b)  # mixed dtypes


def test_inplace_and_out_forms():
    a = kiln.randn(3, 4)
    c = a.cuda()
    c.add_(1.5).mul_(kiln.full((4,), 2.0, device="cuda"))
    _close(c, (a + 1.5) * 2)
    out = kiln.empty(3, 4, device="cuda")
    kiln.exp(c, out=out)
    _close(out, ((a + 1.5) * 2).exp())
    c.zero_()
    assert c.cpu().equal(kiln.zeros(3, 4))
    c.fill_(7)
    assert c.cpu().equal(kiln.full((3, 4), 7.0))


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64, kiln.float16, kiln.int64, kiln.int32])
def test_reductions(dtype):
    x = (kiln.rand(5, 6, 7) * 10).to(dtype)
    c = x.cuda()
    _close(c.sum(), x.sum())
    _close(c.sum(1), x.sum(1))
    _close(c.sum((0, 2), keepdim=True), x.sum((0, 2), keepdim=True))
    _close(c.amax(2), x.amax(2))
    _close(c.amin((0, 1)), x.amin((0, 1)))
    _close(c.max(), x.max())
    _close(c.min(), x.min())
    if dtype in FLOATS:
        _close(c.mean(), x.mean(), dtype)
        _close(c.mean(-1), x.mean(-1), dtype)
        _close(c.prod(), x.prod(), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dtype, dim):
    x = kiln.randn(7, 300).to(dtype)
    _close(kiln.softmax(x.cuda(), dim), kiln.softmax(x, dim), dtype)
    _close(kiln.log_softmax(x.cuda(), dim), kiln.log_softmax(x, dim), dtype)


MATMUL_ATOL = {kiln.float32: 1e-4, kiln.float64: 1e-10, kiln.float16: 5e-2, kiln.bfloat16: 3e-1}


def _max_error(cuda_result, reference):
    return (cuda_result.cpu().double() - reference.double()).abs().max().item()


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16])
def test_matmul(dtype):
    a = kiln.randn(33, 17).to(dtype)
    b = kiln.randn(17, 9).to(dtype)
    exact = a.double() @ b.double()
    atol = MATMUL_ATOL[dtype]
    assert (a.cuda() @ b.cuda()).dtype == dtype
    assert _max_error(a.cuda() @ b.cuda(), exact) < atol
    assert _max_error(a.t().contiguous().cuda().t() @ b.cuda(), exact) < atol  # a transposed operand
    x = kiln.randn(4, 5, 6).to(dtype)
    y = kiln.randn(4, 6, 3).to(dtype)
    assert _max_error(kiln.bmm(x.cuda(), y.cuda()), kiln.bmm(x.double(), y.double())) < atol
    bias = kiln.randn(9).to(dtype)
    expected = kiln.addmm(bias.double(), a.double(), b.double(), beta=0.5, alpha=2)
    assert _max_error(kiln.addmm(bias.cuda(), a.cuda(), b.cuda(), beta=0.5, alpha=2), expected) < 4 * atol


def test_linear_on_cuda():
    x, w, b = kiln.randn(3, 8), kiln.randn(4, 8), kiln.randn(4)
    got = kiln.nn.functional.linear(x.cuda(), w.cuda(), b.cuda())
    assert _max_error(got, kiln.nn.functional.linear(x.double(), w.double(), b.double())) < 1e-4


def test_views_on_cuda():
    x = kiln.arange(24.0).reshape(2, 3, 4)
    c = x.cuda()
    _close(c.permute(2, 0, 1).contiguous(), x.permute(2, 0, 1).contiguous())
    _close(c[:, 1], x[:, 1])
    _close(c.view(6, 4).t().clone(), x.view(6, 4).t().clone())
    _close(c.unsqueeze(0).expand(2, 2, 3, 4).sum(0), x.unsqueeze(0).expand(2, 2, 3, 4).sum(0))


def test_second_device_when_present():
    if kiln.cuda.device_count() < 2:
        assert kiln.device("cuda:1").index == 1
        return
    x = kiln.randn(5, device="cuda:1")
    assert x.device == kiln.device("cuda:1")
    assert x.to("cuda:0").cpu().equal(x.cpu())


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.int64, kiln.bfloat16])
def test_where(dtype):
    cond = kiln.rand(4, 5) > 0.5
    a = (kiln.randn(4, 5) * 5).to(dtype)
    b = (kiln.randn(5) * 5).to(kiln.float64)
    _close(kiln.where(cond.cuda(), a.cuda(), b.cuda()), kiln.where(cond, a, b))
