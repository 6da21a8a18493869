"""A compiled graph's CUDA target without a GPU (runtime Note [Compiled graphs on CUDA]): the target
option, the printed kernels' shape (32- and 64-bit entries, float16 rounding, strided loads, row
kernels' block reductions), and the fallback a kernel step takes when its inputs are not CUDA
tensors of one device (its ops run eagerly), which a CPU run exercises."""

import pytest

import kiln
from kiln import _C
from kiln.compiler._backends import _entries, _graph_programs

F = kiln.nn.functional


def graph_of(fn, *args):
    compiled = kiln.compile(fn, backend="eager")
    with kiln.no_grad():
        compiled(*args)
    (entry,) = _entries(compiled)
    (program,) = _graph_programs(entry.program)
    return program.graph


def chain(x, y):
    return kiln.sigmoid(x * 2 + y) * 0.5


def test_the_target_option():
    x = kiln.randn(4, 8)
    g = graph_of(chain, x, x)
    assert not _C._runtime.compile(g).targets_cuda  # CPU inputs: auto is the CPU
    assert _C._runtime.compile(g).cuda_sources == []
    assert _C._runtime.compile(g, target="cuda").targets_cuda
    with pytest.raises(ValueError, match="target must be 'auto', 'cpu' or 'cuda', not 'tpu'"):
        _C._runtime.compile(g, target="tpu")


def test_a_pointwise_kernel_prints_both_index_widths():
    x = kiln.randn(4, 8, dtype=kiln.float16)
    compiled = _C._runtime.compile(graph_of(chain, x, x), target="cuda")
    ((source, entry32, entry64),) = compiled.cuda_sources
    assert entry32.endswith("_i32") and entry64.endswith("_i64")
    assert f'extern "C" __global__ void __launch_bounds__(256) {entry32}' in source
    assert "contiguous" in source and "kcg::round_f16(" in source and "kcg::float_to_f16(" in source
    assert "__fmul_rn(" in source and "expf(" in source  # no contraction but the IR's own Fma; libdevice exp


def test_a_broadcast_kernel_reads_through_strides():
    x, b = kiln.randn(3, 5, 7), kiln.randn(7)
    compiled = _C._runtime.compile(graph_of(lambda x, b: (x - b).exp(), x.transpose(0, 1), b), target="cuda")
    ((source, _, _),) = compiled.cuda_sources
    assert "strided" in source and "a.strides[" in source and "rest % size" in source


def test_a_row_kernel_reduces_across_the_block():
    x = kiln.randn(6, 50)
    compiled = _C._runtime.compile(graph_of(lambda x: F.softmax(x, dim=-1), x), target="cuda")
    ((source, _, _),) = compiled.cuda_sources
    assert "row kernel, 2 passes" in source
    assert "kcg::block_reduce<float>(" in source and "kcg::MaxNan()" in source and "kcg::Sum()" in source
    assert "if (threadIdx.x == 0)" not in source  # softmax has no per-row output


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16], ids=str)
def test_a_cuda_graph_on_cpu_tensors_runs_its_kernels_ops_eagerly(dtype):
    """Its kernel steps find CPU inputs, not CUDA tensors: they run their member ops (the fallback path
    that also serves CUDA inputs of an unexpected layout or device)."""
    x, y = kiln.randn(6, 40).to(dtype), kiln.randn(6, 40).to(dtype)
    w, b = kiln.randn(40).to(dtype), kiln.randn(40).to(dtype)

    def fn(x, y, w, b):
        return F.layer_norm(chain(x, y), (40,), w, b), F.softmax(x, dim=-1)

    compiled = _C._runtime.compile(graph_of(fn, x, y, w, b), runs_without_autograd=True, target="cuda")
    assert compiled.kernel_count >= 1 and any("row kernel" in s for s, _, _ in compiled.cuda_sources)
    got = compiled.run([x, y, w, b])
    with kiln.no_grad():
        want = fn(x, y, w, b)
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape
        # The members are the decomposed ops (Note [Composites compile decomposed]): a few ulp from eager's.
        tol = 1e-5 if dtype == kiln.float32 else 1e-2
        assert kiln.allclose(g.float(), e.float(), rtol=tol, atol=tol)
