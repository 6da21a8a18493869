"""nonzero and what is built on it (argwhere, nonzero(as_tuple=True), masked_select, mask indexing),
the out= forms of index_put and scatter_reduce, and the pointwise backwards with two Scalar arguments
(hardtanh_backward, softplus_backward) as CUDA kernels, against the CPU result (eager/kernels/cuda:
CudaMaskKernels.cpp, CudaPutKernels.cpp, the pointwise table). Without a GPU every test skips with "no
GPU"; tests/gpu/run.sh runs this folder on a lent GPU machine. Without one, these kernels are proven by
NVRTC + ptxas (test_cuda_kernel_sources.py, compiler/test_cuda_codegen.py) and on the host
(test_cuda_row_kernels_on_host.py's nonzero, test_cuda_pointwise_scalars_on_host.py)."""

import pytest

import kiln

pytestmark = pytest.mark.skipif(not kiln.cuda.is_available(), reason="no GPU on this machine")

DTYPES = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16, kiln.int8, kiln.uint8, kiln.int16, kiln.int32,
          kiln.int64, kiln.bool]
FLOATS = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16]


def _sparse(shape, dtype, p=0.3, seed=0):
    gen = kiln.Generator().manual_seed(seed)
    keep = kiln.rand(*shape, generator=gen) < p
    return (kiln.randn(*shape, generator=gen) * 4 * keep).to(dtype)


def _same(got, want):
    assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert kiln.equal(got.cpu(), want), (got.cpu(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (37,), (5, 0, 3), (6, 7), (3, 4, 5, 6), (20000,), (3, 9000)])
def test_nonzero_argwhere_and_as_tuple(dtype, shape):
    x = _sparse(shape, dtype)
    want = kiln.nonzero(x)
    got = kiln.nonzero(x.cuda())
    _same(got, want)
    assert got.stride() == want.stride()  # (1, n): each dim's column contiguous, as torch lays it out
    _same(kiln.argwhere(x.cuda()), kiln.argwhere(x))
    for g, w in zip(kiln.nonzero(x.cuda(), as_tuple=True), kiln.nonzero(x, as_tuple=True)):
        _same(g, w)


def test_nonzero_of_views_nan_and_negative_zero():
    x = kiln.tensor([[0.0, -0.0, float("nan")], [1.0, 0.0, -2.0]]).t()  # a transposed view
    _same(kiln.nonzero(x.cuda()), kiln.nonzero(x))
    _same(kiln.nonzero(x.cuda()[::2]), kiln.nonzero(x[::2]))


def test_nonzero_out_resizes_and_checks_its_dtype():
    x = _sparse((4, 9), kiln.float32)
    out = kiln.empty(0, dtype=kiln.int64, device="cuda")
    kiln.nonzero(x.cuda(), out=out)
    assert kiln.equal(out.cpu(), kiln.nonzero(x))
    with pytest.raises(RuntimeError, match="nonzero: Expected out tensor to have scalar type Long"):
        kiln.nonzero(x.cuda(), out=kiln.empty(0, dtype=kiln.int32, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_broadcasts_as_the_cpus(dtype):
    x = _sparse((4, 1, 6), dtype, p=0.9)
    for mask in (_sparse((4, 5, 6), kiln.bool, seed=1), _sparse((6,), kiln.bool, seed=2),
                 kiln.tensor(True), kiln.zeros(4, 5, 1, dtype=kiln.bool)):
        _same(kiln.masked_select(x.cuda(), mask.cuda()), kiln.masked_select(x, mask))
    out = kiln.empty(3, dtype=dtype, device="cuda")
    mask = _sparse((4, 5, 6), kiln.bool, seed=3)
    kiln.masked_select(x.cuda(), mask.cuda(), out=out)
    assert kiln.equal(out.cpu(), kiln.masked_select(x, mask))


def test_mask_indexing_reads_and_writes_through_the_cuda_nonzero():
    x = kiln.randn(5, 6, 7)
    rows, cols = kiln.tensor([0, 4, -1]), kiln.tensor([[1], [2]])
    _same(x.cuda()[rows.cuda(), :, cols.cuda()], x[rows, :, cols])  # index.Tensor: non-adjacent, broadcast
    _same(x.cuda()[:, rows.cuda()], x[:, rows])
    mask = _sparse((5, 6), kiln.bool, p=0.5, seed=4)
    _same(x.cuda()[mask.cuda()], x[mask])
    y, yc = x.clone(), x.cuda()
    y[mask] = 3.0
    yc[mask.cuda()] = 3.0
    _same(yc, y)


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.int64, kiln.bool])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_out(dtype, accumulate):
    x = (kiln.randn(4, 5) * 5).to(dtype)
    # repeated positions only when accumulating (assigning twice: torch leaves which write wins open)
    rows, cols = (kiln.tensor([0, 3, 3]), kiln.tensor([1, 4, 4])) if accumulate else (kiln.tensor([0, 3]),
                                                                                       kiln.tensor([1, 4]))
    values = (kiln.randn(rows.numel()) * 5).to(dtype)
    want = kiln.index_put(x, (rows, cols), values, accumulate)
    out = kiln.empty(2, dtype=dtype, device="cuda")
    got = kiln._C._functions.index_put(x.cuda(), [rows.cuda(), cols.cuda()], values.cuda(), accumulate, out=out)
    assert got.data_ptr() == out.data_ptr()
    if dtype == kiln.float16 and accumulate:  # two atomic adds to one place: their order may round differently
        assert kiln.allclose(out.cpu().double(), want.double(), rtol=1e-2, atol=1e-2)
    else:
        _same(out, want)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_out(reduce, include_self):
    x = kiln.randn(4, 6)
    index = kiln.tensor([[0, 1, 0], [2, 2, 3], [1, 0, 3]])
    src = kiln.randn(3, 3)
    want = kiln.scatter_reduce(x, 1, index, src, reduce, include_self=include_self)
    out = kiln.empty(0, device="cuda")
    kiln.scatter_reduce(x.cuda(), 1, index.cuda(), src.cuda(), reduce, include_self=include_self, out=out)
    assert kiln.allclose(out.cpu(), want, rtol=1e-6, atol=1e-6)
    strided = kiln.zeros(6, 4, device="cuda").t()  # out keeps its strides
    kiln.scatter_reduce(x.cuda(), 1, index.cuda(), src.cuda(), reduce, include_self=include_self, out=strided)
    assert kiln.allclose(strided.cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_hardtanh_and_softplus_backward(dtype):
    x = (kiln.randn(7, 33) * 3).to(dtype)
    x[0, 0] = float("nan")
    g = kiln.randn(7, 33).to(dtype)
    f = kiln._C._functions
    exact = dtype in (kiln.float32, kiln.float64)
    for lo, hi in ((-1, 1), (-0.5, 2.25), (0, 6)):
        got, want = f.hardtanh_backward(g.cuda(), x.cuda(), lo, hi), f.hardtanh_backward(g, x, lo, hi)
        assert kiln.equal(got.cpu().nan_to_num(7.0), want.nan_to_num(7.0))
    for beta, threshold in ((1, 20), (2.0, 1.5), (0.5, 3)):
        got, want = f.softplus_backward(g.cuda(), x.cuda(), beta, threshold), f.softplus_backward(g, x, beta, threshold)
        tol = 1e-6 if exact else 2e-2
        assert kiln.allclose(got.cpu().double(), want.double(), rtol=tol, atol=tol, equal_nan=True)


def test_hardtanh_and_softplus_nets_train_on_cuda_as_on_the_cpu():
    kiln.manual_seed(0)
    layers = lambda: kiln.nn.Sequential(kiln.nn.Linear(8, 16), kiln.nn.Hardtanh(-0.5, 0.5), kiln.nn.Linear(16, 16),
                                        kiln.nn.Softplus(beta=2.0), kiln.nn.Linear(16, 1))
    cpu, gpu = layers(), layers()
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x, y = kiln.randn(32, 8), kiln.randn(32, 1)
    for model, xs, ys in ((cpu, x, y), (gpu, x.cuda(), y.cuda())):
        opt = kiln.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            kiln.nn.functional.mse_loss(model(xs), ys).backward()
            opt.step()
    for a, b in zip(cpu.parameters(), gpu.parameters()):
        assert kiln.allclose(a, b.cpu(), rtol=1e-4, atol=1e-5)
