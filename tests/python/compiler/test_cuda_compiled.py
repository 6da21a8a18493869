"""kiln.compile on CUDA tensors against eager (runtime Note [Compiled graphs on CUDA]): fused CUDA
kernels (pointwise chains, broadcasts, strided inputs, softmax, log_softmax, layer_norm, rms_norm,
forward and backward) give the CPU's results within the tolerances of codegen/cuda's notes
(Note [CUDA C from the kernel IR]: exact arithmetic, transcendentals within a few ulp; Note [CUDA
row kernels]: sums in another order). Needs a GPU: scripts/gpu_check.sh runs this file there."""

import pytest

import kiln
from kiln.compiler._backends import compiled_graphs

F = kiln.nn.functional

pytestmark = pytest.mark.skipif(not kiln.cuda.is_available(), reason="no GPU (kiln.cuda.is_available() is False)")

TOLERANCE = {kiln.float32: (1e-5, 1e-5), kiln.float16: (1e-2, 1e-2), kiln.bfloat16: (2e-2, 2e-2),
             kiln.float64: (1e-12, 1e-12)}


def close(got, want, dtype):
    rtol, atol = TOLERANCE[dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.cpu().double(), want.cpu().double()
    assert kiln.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True), (g - w).abs().max()


def chain(x, y):
    return (kiln.sigmoid(x * 2 + y) - kiln.tanh(y)).relu() * 0.5 + kiln.exp(-x * x)


CASES = {
    "chain": (chain, lambda t: (t(64, 129), t(64, 129))),
    "broadcast": (lambda x, b: (x - b).exp() / (1 + x * x), lambda t: (t(8, 16, 33), t(33))),
    "strided": (chain, lambda t: (t(129, 64).t(), t(64, 129))),
    "softmax": (lambda x: F.softmax(x, dim=-1), lambda t: (t(32, 1000),)),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), lambda t: (t(32, 1000),)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (768,), w, b), lambda t: (t(16, 768), t(768), t(768))),
    "rms_norm": (lambda x, w: F.rms_norm(x, (768,), w), lambda t: (t(16, 768), t(768))),
}


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.bfloat16], ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_cuda_forward_matches_eager(case, dtype):
    fn, make = CASES[case]
    args = make(lambda *s: kiln.randn(*s).to(dtype))
    want = fn(*args)
    cuda_args = [a.cuda() for a in args]
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(*cuda_args)
        got = compiled(*cuda_args)
    graphs = compiled_graphs(compiled)
    assert graphs and all(g.targets_cuda for g in graphs)
    assert sum(g.kernel_count for g in graphs) >= 1
    assert got.device.type == "cuda"
    close(got, want, dtype)
    close(got, fn(*cuda_args), dtype)  # eager CUDA


@pytest.mark.parametrize("case", ["softmax", "log_softmax", "layer_norm", "rms_norm", "chain"])
def test_compiled_cuda_backward_matches_eager(case):
    fn, make = CASES[case]
    args = make(lambda *s: kiln.randn(*s, dtype=kiln.float32))
    leaves = [a.clone().requires_grad_(True) for a in args]
    fn(*leaves).sum().backward()
    cuda_leaves = [a.cuda().requires_grad_(True) for a in args]
    compiled = kiln.compile(lambda *xs: fn(*xs).sum())
    compiled(*cuda_leaves).backward()
    for a, b in zip(cuda_leaves, leaves):
        close(a.grad, b.grad, kiln.float32)


def test_a_large_tensor_takes_the_64_bit_entry():
    x = kiln.randn(1, device="cuda").expand(2**31 + 5)  # a broadcast: 2 GiB of output, no input memory
    compiled = kiln.compile(lambda x: x * 2 + 1)
    with kiln.no_grad():
        got = compiled(x)
    assert got.shape == (2**31 + 5,)
    assert kiln.equal(got[-3:].cpu(), (x[:3] * 2 + 1).cpu())


def transposed_chain(x):
    a = (x * 2.0 + 1.0).sin()
    c = ((a.t() * 3.0).tanh() + 1.0).t()
    return (c * 0.5).exp()


def test_reduce_overhead_replays_a_cuda_graph_equal_to_eager():
    """Note [CUDA graphs of a compiled graph]: intermediates in the device arena, the launches captured on the
    second run with the same buffers (a result dropped before the next call gives its block back) and
    replayed after; every result equals eager, and a result kept across later runs stays intact."""
    xs = [kiln.randn(48, 80).cuda() for _ in range(2)]
    compiled = kiln.compile(transposed_chain, mode="reduce-overhead")
    with kiln.no_grad():
        kept = compiled(xs[1])
        for i in range(8):
            got = compiled(xs[i % 2])
            close(got, transposed_chain(xs[i % 2].cpu()), kiln.float32)
            del got
        (graph,) = compiled_graphs(compiled)
        before = kiln.cuda.memory_stats()["allocation.all.allocated"]
        got = compiled(xs[0])
        assert kiln.cuda.memory_stats()["allocation.all.allocated"] - before == 1  # the returned tensor only
    close(kept, transposed_chain(xs[1].cpu()), kiln.float32)
    replayable, captures, replays = graph.cuda_graph_stats
    assert replayable and captures >= 1 and replays >= 1
