"""kiln.onnx.export's op table: each case a small function or module exported, checked with onnx.checker, run
with onnxruntime and compared with kiln's eager result (Note [Dynamic axes by recapture] has its own cases at the
end)."""

import io

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

onnx = pytest.importorskip("onnx", reason="optional package onnx is not installed")
ort = pytest.importorskip("onnxruntime", reason="optional package onnxruntime is not installed")


def r(*shape):
    return lambda: kiln.randn(*shape)


def pos(*shape):
    return lambda: kiln.rand(*shape) + 0.5


def ints(high, *shape):
    return lambda: kiln.randint(0, high, shape)


# (id, function or module factory, input makers)
CASES = [
    # arithmetic, broadcasting and scalars
    ("add_broadcast", lambda x, y: x + y, [r(2, 3), r(3)]),
    ("add_alpha", lambda x, y: kiln.add(x, y, alpha=2.5), [r(2, 3), r(2, 3)]),
    ("add_scalar", lambda x: x + 2, [r(4)]),
    ("sub_rsub", lambda x: (1 - x) - (x - 3), [r(4)]),
    ("mul_div", lambda x, y: x * y / (y.abs() + 1) * 0.5, [r(2, 3), r(1, 3)]),
    ("int_plus_float", lambda i: i + 0.5, [ints(5, 4)]),
    ("int_true_divide", lambda i, j: i / (j + 1), [ints(9, 4), ints(3, 4)]),
    ("int_floor_divide", lambda i: i // 2, [ints(9, 6)]),
    ("float_floor_divide", lambda x: kiln.div(x, 0.7, rounding_mode="floor"), [r(6)]),
    ("trunc_divide", lambda x: kiln.div(x, 0.7, rounding_mode="trunc"), [r(6)]),
    ("pow", lambda x: x ** 2 + x.abs() ** 1.5 + x.abs() ** 0.5, [r(5)]),
    ("unary", lambda x: (x.exp() + x.abs().log1p() + x.abs().sqrt() + x.abs().add(1).rsqrt() - x.neg()
                         + x.sin() + x.cos() + kiln.erf(x) + x.floor() + x.ceil() + x.sign() + x.expm1()), [r(5)]),
    ("reciprocal_square", lambda x: x.reciprocal() + x.square(), [pos(5)]),
    ("compare", lambda x, y: kiln.stack([(x == y).float(), (x != 0).float(), (x < y).float(), (x <= 0.1).float(),
                                          (x > y).float(), (x >= 0).float()]), [r(4), r(4)]),
    ("where_masked_fill", lambda x, y: kiln.where(x > 0, x, y).masked_fill(y > 1, -1.0), [r(3, 4), r(3, 4)]),
    ("where_scalar", lambda x: kiln.where(x > 0, x, 0.0), [r(5)]),
    ("clamp", lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=0) + x.clamp(max=0.1) + kiln.maximum(x, x * 2), [r(6)]),
    ("logical", lambda x: ((x > 0) & (x < 1) | ~(x > -1)).float(), [r(6)]),
    # activations
    ("activations", lambda x: (F.relu(x) + F.gelu(x) + F.gelu(x, approximate="tanh") + F.silu(x) + kiln.tanh(x)
                               + kiln.sigmoid(x) + F.leaky_relu(x, 0.2) + F.elu(x) + F.softplus(x)
                               + F.softplus(x, beta=2, threshold=1) + F.hardtanh(x) + F.relu6(x * 4)
                               + F.hardswish(x) + F.hardsigmoid(x) + F.mish(x) + F.selu(x) + F.celu(x)), [r(3, 5)]),
    ("softmax", lambda x: F.softmax(x, dim=-1) + F.log_softmax(x, dim=0) + F.softmax(x, 1, dtype=kiln.float64).float(),
     [r(3, 5)]),
    # matrix products
    ("mm_bmm_matmul", lambda a, b, c: (a @ b).sum() + kiln.bmm(c, c.transpose(1, 2)).sum() + (c @ b).sum(),
     [r(3, 4), r(4, 5), r(2, 3, 4)]),
    ("addmm_baddbmm", lambda a, b, c: kiln.addmm(c, a, b, beta=0.5, alpha=2).sum() + kiln.baddbmm(
        c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), alpha=0.5).sum(), [r(3, 4), r(4, 5), r(3, 5)]),
    ("linear", lambda x, w, b: F.linear(x, w, b) + F.linear(x, w), [r(2, 3, 4), r(5, 4), r(5)]),
    # reductions
    ("reductions", lambda x: kiln.stack([x.sum(), x.mean(), x.max(), x.min(), x.amax(dim=(0, 1)).sum(),
                                         x.var(), x.std(dim=1, unbiased=False).sum(), x.logsumexp(dim=1).sum(),
                                         x.prod(dim=0).sum()]), [r(3, 4)]),
    ("reductions_keepdim", lambda x: x.sum(-1, keepdim=True) + x.mean((0, 1), keepdim=True) + x.amin(1, True),
     [r(3, 4)]),
    ("max_dim", lambda x: x.max(dim=1), [r(3, 4)]),
    ("min_dim_keepdim", lambda x: x.min(dim=0, keepdim=True), [r(3, 4)]),
    ("argmax", lambda x: kiln.stack([x.argmax(), x.argmin()]) + x.argmax(dim=1).sum(), [r(3, 4)]),
    ("cumsum_all_any", lambda x: (x.cumsum(1), (x > 0).all(), (x > 0).any(dim=1)), [r(3, 4)]),
    ("cast", lambda x: (x.long(), x.to(kiln.float64), x.int().float(), x.bool()), [r(5)]),
    # shapes
    ("reshape_view_flatten", lambda x: (x.reshape(6, 4), x.view(2, -1), x.flatten(), x.flatten(1, 2),
                                        x.unflatten(2, (2, 2))), [r(2, 3, 4)]),
    ("transpose_permute", lambda x: (x.transpose(0, 2), x.permute(2, 0, 1), x[0].t(), x.movedim(0, -1), x.mT),
     [r(2, 3, 4)]),
    ("slicing", lambda x: (x[:, 1:3], x[..., ::2], x[1], x[:, -1], x[-1, :, 1:], x.narrow(2, 1, 2),
                           x[:, [0, 2]]), [r(2, 3, 4)]),
    ("squeeze_unsqueeze_expand", lambda x: (x.unsqueeze(1), x.unsqueeze(-1).squeeze(-1), x[:, :1].squeeze(),
                                            x[:, :1].expand(3, 5), x[:, :1].expand(-1, 2), x.repeat(2, 1, 1)),
     [r(3, 4)]),
    ("cat_stack", lambda x, y: (kiln.cat([x, y], dim=-1), kiln.stack([x, x], dim=-1), kiln.cat([x, x])),
     [r(2, 3), r(2, 5)]),
    ("split_chunk_unbind", lambda x: (*x.split(2, dim=1), *x.split([1, 4], dim=1), *x.chunk(3, 1), *x.unbind(0)),
     [r(2, 5)]),
    ("flip", lambda x: x.flip(0, 1), [r(2, 3)]),
    ("gather_index_select", lambda x, i: (kiln.gather(x, 1, i), x.index_select(0, i[:, 0])),
     [r(3, 4), ints(3, 3, 2)]),
    ("tril_triu", lambda x: x.tril() + x.triu(1), [r(4, 4)]),
    ("creation", lambda x: (kiln.arange(5) + 1, kiln.zeros_like(x) + kiln.ones_like(x), kiln.full_like(x, 3.0),
                            kiln.zeros(2, 3), kiln.ones(3), kiln.arange(1, 7, 2, dtype=kiln.float32)), [r(2, 3)]),
    ("one_hot", lambda i: F.one_hot(i, 5), [ints(5, 4)]),
    # nn
    ("conv2d", lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2), [r(2, 4, 9, 9)]),
    ("conv2d_dilated", lambda: nn.Conv2d(3, 2, 3, padding=2, dilation=2, bias=False), [r(1, 3, 7, 7)]),
    ("conv1d", lambda: nn.Conv1d(3, 4, 3, padding=1), [r(2, 3, 8)]),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1),
     [r(2, 4, 5, 5)]),
    ("pooling", lambda: nn.Sequential(nn.MaxPool2d(3, stride=2, padding=1), nn.AvgPool2d(2, ceil_mode=True),
                                      nn.AvgPool2d(3, 1, padding=1, count_include_pad=False),
                                      nn.AdaptiveAvgPool2d((1, 1))), [r(2, 3, 12, 12)]),
    ("adaptive_avg_pool", lambda: nn.AdaptiveAvgPool2d((2, 3)), [r(2, 3, 8, 9)]),
    ("max_pool1d", lambda: nn.MaxPool1d(2), [r(2, 3, 8)]),
    ("batch_norm", lambda: _trained_bn(nn.BatchNorm2d(3)), [r(2, 3, 4, 4)]),
    ("batch_norm1d", lambda: _trained_bn(nn.BatchNorm1d(5)), [r(4, 5)]),
    ("layer_norm", lambda: nn.Sequential(nn.LayerNorm(6), nn.LayerNorm((3, 6), elementwise_affine=False)),
     [r(2, 3, 6)]),
    ("group_norm", lambda: nn.GroupNorm(2, 6), [r(2, 6, 3, 3)]),
    ("rms_norm", lambda: nn.RMSNorm(6), [r(2, 6)]),
    ("embedding_dropout", lambda: nn.Sequential(nn.Embedding(10, 4), nn.Dropout(0.5)), [ints(10, 2, 3)]),
    ("sdpa_masks", lambda q, k, v, m: (F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0),
                                       F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)),
     [r(2, 2, 5, 4), r(2, 2, 6, 4), r(2, 2, 6, 3), r(5, 6)]),
    ("losses", lambda x, t: (F.nll_loss(F.log_softmax(x, 1), t), F.cross_entropy(x, t, reduction="none"),
                             F.cross_entropy(x, t, reduction="sum")), [r(4, 5), ints(5, 4)]),
    ("instance_norm", lambda: nn.Sequential(nn.InstanceNorm2d(3, affine=True),
                                            nn.BatchNorm2d(3, track_running_stats=False)), [r(2, 3, 4, 4)]),
    ("norms_and_distances", lambda x: (x.norm(dim=-1), kiln.linalg.vector_norm(x, 1, dim=0), F.normalize(x, dim=-1),
                                       F.cosine_similarity(x, x * 2 + 1, dim=1), x.norm(p=float("inf"))), [r(3, 4)]),
    ("addc_lerp", lambda x, y: (kiln.addcmul(x, x, y, value=0.5), kiln.addcdiv(x, x, y.abs() + 1),
                                kiln.lerp(x, y, 0.3)), [r(3, 4), r(3, 4)]),
    ("topk_sort", lambda x: (*x.topk(2, dim=-1), x.topk(2, dim=0, largest=False).values, *x.sort(dim=-1),
                             x.sort(dim=0, descending=True).values), [r(3, 4)]),
    ("scatter", lambda x, i: (kiln.zeros(3, 4).scatter(1, i, 1.0), kiln.zeros(3, 4).scatter(1, i, x[:, :2])),
     [r(3, 4), lambda: kiln.tensor([[0, 3], [1, 2], [2, 0]])]),
    ("repeat_interleave_pad", lambda x: (x.repeat_interleave(2, dim=1), F.pad(x, (1, 2)),
                                         F.pad(x, (1, 1, 2, 0), value=3.0),
                                         F.pad(x.unsqueeze(0), (1, 1), mode="reflect")), [r(3, 4)]),
    ("composites", lambda x: (kiln.einsum("bchw,bchw->bc", x, x), F.pixel_shuffle(x[:, :1].expand(2, 4, 4, 4), 2),
                              F.interpolate(x, scale_factor=2, mode="nearest"), F.prelu(x, kiln.tensor([0.25])),
                              F.mse_loss(x, x * 2), F.binary_cross_entropy_with_logits(x, kiln.sigmoid(x * 2)),
                              0.5 * x * (1.0 + kiln.tanh(0.7978845608 * (x + 0.044715 * kiln.pow(x, 3.0)))),
                              F.logsigmoid(x), F.softmin(x, 1), F.glu(x[:, :2], 1), F.adaptive_max_pool2d(x, 1)),
     [r(2, 3, 4, 4)]),
    ("bilinear_interpolate", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
     [r(1, 2, 3, 3)]),
    ("lstm_cell", lambda: _cell(nn.LSTMCell(4, 6)), [r(3, 4), r(3, 6), r(3, 6)]),
    ("gru_cell", lambda: _cell(nn.GRUCell(4, 6)), [r(3, 4), r(3, 6)]),
    ("lstm_bidirectional_batch_first", lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True),
     [r(2, 6, 4)]),
    ("gru_bidirectional", lambda: nn.GRU(4, 5, bidirectional=True), [r(3, 2, 4)]),
]


def _trained_bn(bn):
    with kiln.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn


class _Cell(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x, h, c=None):
        return self.cell(x, (h, c)) if c is not None else self.cell(x, h)


def _cell(cell):
    return _Cell(cell)


def _flat(value) -> list:
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v)]
    return [] if value is None else [value]


def _model(factory):
    """A case's callable: a module factory is called (it takes no arguments), a function is used as it is."""
    if factory.__code__.co_argcount == 0:
        return factory()
    return factory


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_matches_eager(case):
    _, factory, makers = case
    kiln.manual_seed(0)
    model = _model(factory)
    inputs = [m() for m in makers]
    buf = io.BytesIO()
    kiln.onnx.export(model, tuple(inputs), buf)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)})
    if isinstance(model, nn.Module):
        model.eval()
    with kiln.no_grad():
        want = _flat(model(*inputs))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        assert g.dtype == w.dtype, f"output {k}: {g.dtype} vs {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"output {k}")


# --- dynamic axes (Note [Dynamic axes by recapture]) ----------------------------------------------------------
DYNAMIC_CASES = [
    # (id, function, input makers, dynamic_axes, other sizes of the inputs)
    ("view_of_batch", lambda x: x.view(x.size(0), -1) * 2, [r(4, 2, 3)], {"input": {0: "b"}}, [(7, 2, 3)]),
    ("product_of_two_axes", lambda x: x.reshape(x.size(0) * x.size(1), 3).sum(-1),
     [r(4, 5, 3)], {"input": {0: "b", 1: "t"}}, [(2, 3, 3)]),
    ("slice_by_length", lambda x, m: x + m[:x.size(1), :x.size(1)].sum(0), [r(2, 5, 5), r(8, 8)],
     {"input_0": {1: "t", 2: "t"}}, [(2, 3, 3), (8, 8)]),
    ("length_minus_one", lambda x: x[:, :-1] - x[:, 1:] + kiln.arange(x.size(1) - 1), [r(2, 6)],
     {"input": {1: "t"}}, [(2, 9)]),
    ("select_last", lambda x: x[:, x.size(1) - 1], [r(2, 6)], {"input": {1: "t"}}, [(2, 4)]),
    ("size_as_a_number", lambda x: x / x.size(1) + x.size(0), [r(3, 4)], {"input": {0: "b", 1: "t"}}, [(5, 7)]),
]


@pytest.mark.parametrize("case", DYNAMIC_CASES, ids=[c[0] for c in DYNAMIC_CASES])
def test_dynamic_axes_run_at_other_sizes(case):
    _, fn, makers, axes, other_shapes = case
    kiln.manual_seed(0)
    inputs = [m() for m in makers]
    names = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
    buf = io.BytesIO()
    kiln.onnx.export(fn, tuple(inputs), buf, input_names=names, dynamic_axes=axes)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    others = [kiln.randn(*s) for s in other_shapes]
    for args in (inputs, others):
        got = session.run(None, {n: t.numpy() for n, t in zip(names, args)})
        np.testing.assert_allclose(got[0], fn(*args).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [17, 18, 20, 21])
def test_every_supported_opset(opset):
    """The ops whose ONNX form changed across opsets (reductions' axes, Gelu, Split) at each supported opset."""
    def fn(x):
        y = F.gelu(x) + F.gelu(x, approximate="tanh") + x.mean(-1, keepdim=True) + x.amax(-1, keepdim=True)
        return (*y.split(2, dim=-1), x.var(dim=0), x.logsumexp(1))

    x = kiln.randn(3, 4)
    buf = io.BytesIO()
    kiln.onnx.export(fn, (x,), buf, opset_version=opset)
    proto = onnx.load_from_string(buf.getvalue())
    assert proto.opset_import[0].version == opset
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    for g, w in zip(session.run(None, {"input": x.numpy()}), fn(x)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, axes, message", [
    (lambda x: F.adaptive_avg_pool2d(x, 2), {2: "h", 3: "w"}, "adaptive_avg_pool2d to \\[2, 2\\] over dynamic spatial"),
    (lambda x: x.chunk(2, 0)[0] * 2, {0: "b"}, "split along a dynamic axis is not supported"),
    (lambda x: x * (1.0 / x.size(1)), {1: "t"}, "depends on the dynamic axes in a way kiln.onnx cannot express"),
], ids=["adaptive_pool", "chunk", "float_of_a_size"])
def test_a_size_read_from_a_dynamic_axis_is_refused(fn, axes, message):
    with pytest.raises(kiln.onnx.OnnxExporterError, match=message):
        kiln.onnx.export(fn, (kiln.randn(4, 3, 8, 8),), io.BytesIO(), dynamic_axes={"input": axes})
