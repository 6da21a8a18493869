"""The nn, indexing, random and optimizer CUDA kernels against the CPU result, forward and
backward (eager/kernels/cuda: CudaNormKernels, CudaLossKernels, CudaIndexKernels,
CudaRandomKernels, CudaOptimKernels and softmax backward in CudaReduceKernels). Without a GPU
every test skips with "no GPU"; tests/gpu/run.sh runs this folder on a lent GPU machine."""

import pytest
import torch

import kiln

F = kiln.nn.functional

pytestmark = pytest.mark.skipif(not kiln.cuda.is_available(), reason="no GPU on this machine")

FLOATS = [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16]
TOL = {kiln.float32: (1e-5, 1e-5), kiln.float64: (1e-10, 1e-10), kiln.float16: (2e-3, 2e-3),
       kiln.bfloat16: (2e-2, 2e-2)}


def _np(t):
    t = t.cpu()
    return t.float().numpy() if t.dtype in (kiln.float16, kiln.bfloat16) else t.numpy()


def _close(got, want, dtype=kiln.float32, scale=1.0):
    assert got.device.type == "cuda"
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), (got.dtype, want.dtype, got.shape)
    rtol, atol = TOL.get(dtype, (1e-5, 1e-5))
    torch.testing.assert_close(torch.from_numpy(_np(got)), torch.from_numpy(_np(want)), rtol=rtol * scale,
                               atol=atol * scale, equal_nan=True)


def _pair(t, requires_grad=True):
    """A CPU leaf and a CUDA leaf with the same values."""
    a = t.detach().clone().requires_grad_(requires_grad)
    b = t.detach().cuda().requires_grad_(requires_grad)
    return a, b


# --- layer_norm, rms_norm ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("cols", [7, 256, 1000])
def test_layer_norm_forward_and_backward(dtype, cols):
    x, xc = _pair((kiln.randn(6, 5, cols) * 3 + 1).to(dtype))
    w, wc = _pair(kiln.randn(cols).to(dtype))
    b, bc = _pair(kiln.randn(cols).to(dtype))
    y, mean, rstd = kiln.native_layer_norm(x, [cols], w, b, 1e-5)
    yc, meanc, rstdc = kiln.native_layer_norm(xc, [cols], wc, bc, 1e-5)
    _close(yc, y, dtype, 4)
    _close(meanc, mean, dtype, 4)
    _close(rstdc, rstd, dtype, 4)
    g = kiln.randn(6, 5, cols).to(dtype)
    y.backward(g)
    yc.backward(g.cuda())
    _close(xc.grad, x.grad, dtype, 8)
    _close(wc.grad, w.grad, dtype, 30)
    _close(bc.grad, b.grad, dtype, 30)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_forward_and_backward(dtype):
    x, xc = _pair(kiln.randn(9, 300).to(dtype))
    w, wc = _pair(kiln.randn(300).to(dtype))
    y = F.rms_norm(x, [300], w)
    yc = F.rms_norm(xc, [300], wc)
    _close(yc, y, dtype, 4)
    (y * y).sum().backward()
    (yc * yc).sum().backward()
    _close(xc.grad, x.grad, dtype, 16)
    _close(wc.grad, w.grad, dtype, 30)


def test_layer_norm_without_affine_and_over_two_dims():
    x, xc = _pair(kiln.randn(4, 3, 5, 6))
    y = F.layer_norm(x, [5, 6])
    yc = F.layer_norm(xc, [5, 6])
    _close(yc, y)
    y.sum().backward()
    yc.sum().backward()
    _close(xc.grad, x.grad, kiln.float32, 10)


# --- softmax backward ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_and_log_softmax_backward(dtype, dim):
    for fn in (kiln.softmax, kiln.log_softmax):
        x, xc = _pair(kiln.randn(7, 300).to(dtype))
        g = kiln.randn(7, 300).to(dtype)
        fn(x, dim).backward(g)
        fn(xc, dim).backward(g.cuda())
        _close(xc.grad, x.grad, dtype, 4)


# --- nll_loss, cross_entropy ---------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64, kiln.bfloat16])
def test_cross_entropy_forward_and_backward(reduction, dtype):
    x, xc = _pair(kiln.randn(37, 11).to(dtype))
    target = (kiln.rand(37) * 11).long()
    target[3] = -100
    weight = kiln.rand(11).to(dtype) + 0.5
    for w in (None, weight):
        x.grad = xc.grad = None
        loss = F.cross_entropy(x, target, weight=w, reduction=reduction)
        lossc = F.cross_entropy(xc, target.cuda(), weight=None if w is None else w.cuda(), reduction=reduction)
        _close(lossc, loss, dtype, 4)
        loss.sum().backward()
        lossc.sum().backward()
        _close(xc.grad, x.grad, dtype, 4)


def test_nll_loss_bad_target_raises_cpus_error():
    x = kiln.randn(4, 3, device="cuda").log_softmax(1)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(x, kiln.tensor([0, 1, 7, 2], device="cuda"))
    assert F.nll_loss(x, kiln.tensor([0, 1, 2, 2], device="cuda")).cpu().isfinite().item()  # still usable


# --- embedding ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_forward_and_deterministic_backward(dtype):
    w, wc = _pair(kiln.randn(50, 33).to(dtype))
    idx = (kiln.rand(8, 40) * 50).long()
    idx[0, :5] = 7  # duplicates
    for padding_idx, scale in [(None, False), (7, False), (None, True)]:
        w.grad = wc.grad = None
        y = F.embedding(idx, w, padding_idx=padding_idx, scale_grad_by_freq=scale)
        yc = F.embedding(idx.cuda(), wc, padding_idx=padding_idx, scale_grad_by_freq=scale)
        _close(yc, y, dtype)
        g = kiln.randn(8, 40, 33).to(dtype)
        y.backward(g)
        yc.backward(g.cuda())
        _close(wc.grad, w.grad, dtype, 4)
        first = wc.grad.cpu()
        wc.grad = None
        F.embedding(idx.cuda(), wc, padding_idx=padding_idx, scale_grad_by_freq=scale).backward(g.cuda())
        assert wc.grad.cpu().equal(first)  # Note [Deterministic embedding backward]


def test_embedding_bad_index_raises():
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(kiln.tensor([1, 9], device="cuda"), kiln.randn(5, 3, device="cuda"))


# --- dropout and random -------------------------------------------------------------------------------------

def test_dropout_is_reproducible_and_matches_the_cpu_mask():
    x = kiln.ones(1000, 37)
    kiln.manual_seed(3)
    cpu = F.dropout(x, 0.3)
    kiln.manual_seed(3)
    a = F.dropout(x.cuda(), 0.3)
    kiln.manual_seed(3)
    b = F.dropout(x.cuda(), 0.3)
    assert a.cpu().equal(b.cpu())
    assert a.cpu().equal(cpu)  # Note [CUDA random numbers]: the same words, the same mask
    kept = (a != 0).float().mean().item()
    assert 0.65 < kept < 0.75
    xc = x.cuda().requires_grad_()
    kiln.manual_seed(4)
    y = F.dropout(xc, 0.5)
    y.sum().backward()
    assert xc.grad.cpu().equal((y.detach() != 0).float().cpu() * 2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_matches_the_cpu_stream(dtype):
    kiln.manual_seed(11)
    cpu = kiln.empty(1000, dtype=dtype).uniform_(-2, 3)
    kiln.manual_seed(11)
    got = kiln.empty(1000, dtype=dtype, device="cuda").uniform_(-2, 3)
    _close(got, cpu, dtype)
    assert got.cpu().min().item() >= -2 and got.cpu().max().item() < 3


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_follows_the_cpu_stream(dtype):
    kiln.manual_seed(5)
    cpu = kiln.empty(4096, dtype=dtype).normal_(1.5, 2.0)
    kiln.manual_seed(5)
    got = kiln.empty(4096, dtype=dtype, device="cuda").normal_(1.5, 2.0)
    _close(got, cpu, dtype, 100)  # the same uniforms; libdevice's log/sin/cos against SLEEF's
    assert abs(got.cpu().float().mean().item() - 1.5) < 0.15 and abs(got.cpu().float().std().item() - 2.0) < 0.15
    assert kiln.randn(3, 5, device="cuda").shape == (3, 5)


# --- indexing ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.int64, kiln.bool, kiln.uint8])
def test_index_select_gather_scatter(dtype):
    x = (kiln.randn(6, 7, 5) * 10).to(dtype)
    c = x.cuda()
    idx = kiln.tensor([4, 0, 0, 6, 2])
    _close(c.index_select(1, idx.cuda()), x.index_select(1, idx), dtype)
    _close(c.transpose(0, 2).index_select(0, idx[:3].cuda()), x.transpose(0, 2).index_select(0, idx[:3]), dtype)
    g = (kiln.rand(6, 3, 5) * 7).long()
    _close(c.gather(1, g.cuda()), x.gather(1, g), dtype)
    perm = kiln.stack([kiln.randperm(7)[:3] for _ in range(30)]).view(6, 5, 3).transpose(1, 2).contiguous()
    src = (kiln.randn(6, 3, 5) * 10).to(dtype)
    _close(c.scatter(1, perm.cuda(), src.cuda()), x.scatter(1, perm, src), dtype)
    _close(c.clone().scatter_(1, perm.cuda(), 1), x.clone().scatter_(1, perm, 1), dtype)


@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16, kiln.int64, kiln.int32])
def test_scatter_add_and_index_add(dtype):
    x = (kiln.randn(6, 7) * 4).to(dtype)
    src = (kiln.randn(6, 9) * 4).to(dtype)
    idx = (kiln.rand(6, 9) * 7).long()
    _close(x.cuda().scatter_add(1, idx.cuda(), src.cuda()), x.scatter_add(1, idx, src), dtype, 4)
    rows = kiln.tensor([1, 1, 0, 5])
    source = (kiln.randn(4, 7) * 4).to(dtype)
    _close(x.cuda().index_add(0, rows.cuda(), source.cuda(), alpha=2), x.index_add(0, rows, source, alpha=2), dtype,
           4)
    c = x.cuda()
    c.index_add_(1, kiln.tensor([6, 0], device="cuda"), src[:, :2].cuda())
    _close(c, x.index_add(1, kiln.tensor([6, 0]), src[:, :2]), dtype, 4)


def test_masked_fill_and_index_put():
    x = kiln.randn(2, 3, 4, 4)
    causal = kiln.ones(4, 4).tril() == 0
    _close(x.cuda().masked_fill(causal.cuda(), float("-inf")), x.masked_fill(causal, float("-inf")))
    _close(x.cuda().masked_fill(causal.cuda(), kiln.tensor(2.5)), x.masked_fill(causal, kiln.tensor(2.5)))
    y = kiln.zeros(5, 3)
    idx = kiln.tensor([0, 4, 4, -1])
    vals = kiln.randn(4, 3)
    want = y.index_put((idx,), vals, accumulate=True)
    _close(y.cuda().index_put((idx.cuda(),), vals.cuda(), accumulate=True), want)
    c = y.cuda()
    c[kiln.tensor([2, 0], device="cuda")] = kiln.ones(3, device="cuda")
    assert c.cpu()[[0, 2]].equal(kiln.ones(2, 3))


def test_bad_indices_raise_cpus_errors():
    c = kiln.randn(4, 5, device="cuda")
    with pytest.raises(IndexError, match="out of range"):
        c.index_select(0, kiln.tensor([0, 4], device="cuda"))
    with pytest.raises(RuntimeError, match="index 9 is out of bounds for dimension 1 with size 5"):
        c.gather(1, kiln.tensor([[9]], device="cuda"))


def test_cat_and_triangles():
    a, b = kiln.randn(2, 3, 4), kiln.randn(2, 5, 4).double()
    _close(kiln.cat([a.cuda(), b.cuda()], 1), kiln.cat([a, b], 1), kiln.float64)
    _close(kiln.cat([a.cuda(), kiln.empty(0, device="cuda"), a.cuda()], -1), kiln.cat([a, a], -1))
    _close(kiln.stack([a.cuda(), a.cuda()]), kiln.stack([a, a]))
    x = kiln.randn(3, 5, 6)
    for k in (-1, 0, 2):
        _close(x.cuda().tril(k), x.tril(k))
        _close(x.cuda().triu(k), x.triu(k))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1"):
        kiln.cat([a.cuda(), kiln.randn(3, 1, 4, device="cuda")], 1)


# --- addmm through cuBLASLt's bias epilogue -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float16, kiln.bfloat16])
def test_linear_with_bias_epilogue(dtype):
    x, w, b = kiln.randn(33, 64).to(dtype), kiln.randn(48, 64).to(dtype), kiln.randn(48).to(dtype)
    exact = F.linear(x.double(), w.double(), b.double())
    got = F.linear(x.cuda(), w.cuda(), b.cuda())
    assert got.dtype == dtype
    atol = {kiln.float32: 1e-3, kiln.float16: 5e-2, kiln.bfloat16: 3e-1}[dtype]
    assert (got.cpu().double() - exact).abs().max().item() < atol
    got = kiln.addmm(b.view(1, 48).cuda(), x.cuda(), w.t().cuda(), alpha=0.5)
    assert (got.cpu().double() - kiln.addmm(b.double(), x.double(), w.double().t(), alpha=0.5)).abs().max() < atol


# --- fused optimizers -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda p: kiln.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    lambda p: kiln.optim.Adam(p, lr=1e-2, amsgrad=True),
    lambda p: kiln.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True),
    lambda p: kiln.optim.SGD(p, lr=1e-2, momentum=0.9, dampening=0.1, weight_decay=0.01),
])
def test_fused_optimizers_match_cpu(make):
    cpu = [kiln.randn(17, 5).requires_grad_(), kiln.randn(300).requires_grad_()]
    gpu = [p.detach().cuda().requires_grad_() for p in cpu]
    opt_cpu, opt_gpu = make(cpu), make(gpu)
    for step in range(3):
        grads = [kiln.randn(*p.shape) for p in cpu]
        for p, q, g in zip(cpu, gpu, grads):
            p.grad, q.grad = g, g.cuda()
        opt_cpu.step()
        opt_gpu.step()
    for p, q in zip(cpu, gpu):
        _close(q.detach(), p.detach(), kiln.float32, 10)


# --- a small training step end to end ------------------------------------------------------------------------------------

def _mlp():
    # No ReLU: its backward op (threshold_backward) has no CUDA kernel yet. Dropout
    # draws the same masks on both devices from the same seed (Note [CUDA random numbers]).
    nn = kiln.nn
    return nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.Dropout(0.2), nn.Linear(32, 5))


def test_mlp_training_step_matches_cpu():
    kiln.manual_seed(0)
    cpu_model = _mlp()
    gpu_model = _mlp()
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model.to("cuda")
    x, y = kiln.randn(8, 16), (kiln.rand(8) * 5).long()
    losses = []
    for model, device in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        opt = kiln.optim.AdamW(model.parameters(), lr=1e-2)
        kiln.manual_seed(1)
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) < 1e-4, losses


# --- activation backwards (the eager CUDA pointwise table's rows) ------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("activation", ["sigmoid", "tanh", "silu", "gelu", "mish", "hardsigmoid", "hardswish", "relu"])
def test_activation_gradients_match_the_cpu(activation, dtype):
    F = kiln.nn.functional
    fn = getattr(kiln, activation) if activation in ("sigmoid", "tanh") else getattr(F, activation)
    x, xc = _pair((kiln.randn(4, 257) * 4).to(dtype))
    g = (kiln.randn(4, 257)).to(dtype)
    fn(x).backward(g)
    fn(xc).backward(g.cuda())
    _close(xc.grad, x.grad, dtype, scale=8.0)
