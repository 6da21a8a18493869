"""threshold_backward (ReLU's backward), index_put with several index tensors and masks, and
scatter_reduce as CUDA kernels, against the CPU result (eager/kernels/cuda: the pointwise table's
threshold_backward row, CudaPutKernels.cpp). Without a GPU every test skips with "no GPU";
tests/gpu/run.sh runs this folder on a lent GPU machine. Without one, these kernels are proven by
NVRTC + ptxas (test_cuda_kernel_sources.py, compiler/test_cuda_codegen.py) and on the host
(test_cuda_kernels_on_host.py)."""

import pytest

import kiln

pytestmark = pytest.mark.skipif(not kiln.cuda.is_available(), reason="no GPU on this machine")

DTYPES = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16, kiln.int8, kiln.uint8, kiln.int16, kiln.int32,
          kiln.int64]


def _same(got, want, exact=True):
    assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape
    g, w = got.cpu(), want
    if exact:
        assert kiln.equal(g.isnan(), w.isnan()) if w.is_floating_point() else True
        assert kiln.equal(g.nan_to_num(0.0) if w.is_floating_point() else g,
                          w.nan_to_num(0.0) if w.is_floating_point() else w), (g, w)
    else:
        assert kiln.allclose(g.double(), w.double(), rtol=2e-2, atol=2e-2, equal_nan=True), (g, w)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != kiln.uint8])
def test_threshold_backward(dtype):
    x = (kiln.randn(5, 33) * 4).to(dtype)
    g = (kiln.randn(5, 33) * 4).to(dtype)
    for threshold in (0, 1, -0.5 if dtype.is_floating_point else -1):
        _same(kiln._C._functions.threshold_backward(g.cuda(), x.cuda(), threshold),
              kiln._C._functions.threshold_backward(g, x, threshold))


def test_a_relu_net_trains_on_cuda_as_on_the_cpu():
    kiln.manual_seed(0)
    cpu = kiln.nn.Sequential(kiln.nn.Linear(8, 16), kiln.nn.ReLU(), kiln.nn.Linear(16, 1))
    gpu = kiln.nn.Sequential(kiln.nn.Linear(8, 16), kiln.nn.ReLU(), kiln.nn.Linear(16, 1))
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


@pytest.mark.parametrize("dtype", DTYPES + [kiln.bool])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_several_indices_and_masks(dtype, accumulate):
    x = (kiln.randn(4, 5, 6) * 5).to(dtype)
    cases = [
        ((kiln.tensor([0, 3, 2]), kiln.tensor([[1], [4]])), (2, 3, 6)),              # adjacent, broadcast
        ((kiln.tensor([1, 2]), None, kiln.tensor([5, -6])), (2, 5)),                 # a plain dim between
        ((kiln.randn(4, 5) > 0,), None),                                             # a 2-d mask
        ((None, kiln.tensor([True, False, True, True, False])), None),               # a mask after a slice
        ((kiln.tensor(2), kiln.tensor([0, 4])), (2, 6)),                             # a 0-dim index
    ]
    for indices, value_shape in cases:
        if value_shape is None:
            value_shape = tuple(x[indices].shape)
        v = (kiln.randn(*value_shape) * 5).to(dtype)
        want = x.index_put(indices, v, accumulate)
        got = x.cuda().index_put(tuple(None if i is None else i.cuda() for i in indices), v.cuda(), accumulate)
        _same(got, want, exact=not (accumulate and dtype in (kiln.float16, kiln.bfloat16)))
        # CPU indices and a one-element value (torch's masked_fill path) are accepted too
        c = x.cuda()
        c.index_put_(indices, kiln.ones(1).to(dtype).cuda(), False)
        _same(c, x.index_put(indices, kiln.ones(1).to(dtype), False))


def test_index_put_errors_are_the_cpus():
    c = kiln.zeros(3, 4, device="cuda")
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        c.index_put_((kiln.tensor([0, 3], device="cuda"), kiln.tensor([1, 1], device="cuda")), kiln.ones(2,
                     device="cuda"))
    with pytest.raises(IndexError, match="The shape of the mask"):
        c[kiln.ones(4, dtype=kiln.bool, device="cuda")] = 1.0
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        c.index_put_((kiln.tensor([0, 1], device="cuda"),), kiln.ones(3, 3, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES + [kiln.bool])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    if dtype == kiln.bool and reduce == "mean":
        with pytest.raises(NotImplementedError, match="scatter_gather_tensor_cuda_reduce_mean"):
            kiln.ones(3, dtype=kiln.bool, device="cuda").scatter_reduce(
                0, kiln.tensor([0], device="cuda"), kiln.ones(1, dtype=kiln.bool, device="cuda"), "mean")
        return
    x = (kiln.randn(4, 7) * 3).to(dtype)
    src = (kiln.randn(4, 9) * 3).to(dtype)
    if reduce == "prod" and dtype.is_floating_point:
        src = src.abs().clamp(0.5, 1.5).to(dtype)
    index = kiln.randint(0, 7, (4, 9))
    want = x.scatter_reduce(1, index, src, reduce, include_self=include_self)
    got = x.cuda().scatter_reduce(1, index.cuda(), src.cuda(), reduce, include_self=include_self)
    # float sums and products are order-dependent (atomics), as torch's
    exact = not dtype.is_floating_point or reduce in ("amax", "amin")
    _same(got, want, exact=exact)


def test_scatter_reduce_errors_are_the_cpus():
    c = kiln.zeros(3, 4, device="cuda")
    idx = kiln.tensor([[5]], device="cuda")
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        c.scatter_reduce(1, idx, kiln.ones(1, 1, device="cuda"), "sum")
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        c.scatter_reduce(1, idx, kiln.ones(1, 1, device="cuda"), "max")
