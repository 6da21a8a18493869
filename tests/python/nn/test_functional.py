"""kiln.nn.functional against torch.nn.functional: a table of calls compared in
value and in gradient (of each floating input), the signatures, and the error
paths."""

import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from torch_compare import assert_same_error

RNG = np.random.default_rng(0)


class Const:
    """An input that takes no gradient (class weights, pos_weight: torch refuses to differentiate them)."""

    def __init__(self, array):
        self.array = array


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def labels(n, classes):
    return RNG.integers(0, classes, n).astype(np.int64)


def probs(*shape):
    e = np.exp(randn(*shape))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


X, Y = randn(4, 6), randn(4, 6)
LOGITS, TARGET = randn(5, 7), labels(5, 7)
LOGITS_3D, TARGET_3D = randn(2, 7, 3), RNG.integers(0, 7, (2, 3)).astype(np.int64)
TARGET_IGNORE = np.array([1, -100, 3, 6, -100], dtype=np.int64)
CLASS_WEIGHT = Const(np.abs(randn(7)) + 0.1)
ZERO_ONE = RNG.random((4, 6)).astype(np.float32)
Q, K, V = randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 4)
BOOL_MASK = RNG.random((5, 6)) > 0.3
BOOL_MASK[:, 0] = True  # every query sees at least one key

UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "softplus", "leaky_relu", "elu", "hardtanh", "mish", "selu",
         "celu", "hardsigmoid", "hardswish", "relu6", "threshold")

# name -> (call(F, lib, *inputs), inputs)
CASES = {
    "linear": (lambda F, L, x, w, b: F.linear(x, w, b), [randn(3, 5), randn(4, 5), randn(4)]),
    "linear_3d_nobias": (lambda F, L, x, w: F.linear(x, w), [randn(2, 3, 5), randn(4, 5)]),
    "bilinear": (lambda F, L, a, b, w, c: F.bilinear(a, b, w, c), [randn(3, 4), randn(3, 5), randn(2, 4, 5),
                                                                 randn(2)]),
    "pad_constant": (lambda F, L, x: F.pad(x, (1, 2, 0, 1), value=0.5), [randn(2, 3, 4)]),
    "pad_negative": (lambda F, L, x: F.pad(x, (-1, 2)), [randn(3, 5)]),
    "embedding": (lambda F, L, w: F.embedding(L.from_numpy(np.array([[1, 2], [0, 1]])), w), [randn(4, 3)]),
    "embedding_padding": (lambda F, L, w: F.embedding(L.from_numpy(np.array([[1, 2], [0, 1]])), w, padding_idx=1),
                          [randn(4, 3)]),
    "dropout_eval": (lambda F, L, x: F.dropout(x, 0.5, training=False), [X]),
    "dropout_p0": (lambda F, L, x: F.dropout(x, 0.0), [X]),
    **{name: ((lambda n: lambda F, L, x: getattr(F, n)(x, 0.5, 0.0) if n == "threshold" else getattr(F, n)(x))(name),
              [X * 3]) for name in UNARY},
    "gelu_tanh": (lambda F, L, x: F.gelu(x, approximate="tanh"), [X]),
    "leaky_relu_slope": (lambda F, L, x: F.leaky_relu(x, 0.2), [X]),
    "softplus_beta": (lambda F, L, x: F.softplus(x, beta=2, threshold=3), [X]),
    "elu_alpha": (lambda F, L, x: F.elu(x, alpha=0.5), [X]),
    "softsign": (lambda F, L, x: F.softsign(x), [X]),
    "tanhshrink": (lambda F, L, x: F.tanhshrink(x), [X]),
    "glu": (lambda F, L, x: F.glu(x, -1), [X]),
    "softmax": (lambda F, L, x: F.softmax(x, -1), [X]),
    "softmax_dim0": (lambda F, L, x: F.softmax(x, dim=0), [X]),
    "log_softmax": (lambda F, L, x: F.log_softmax(x, 1), [X]),
    "softmin": (lambda F, L, x: F.softmin(x, 1), [X]),
    "layer_norm": (lambda F, L, x, w, b: F.layer_norm(x, (6,), w, b), [X, randn(6), randn(6)]),
    "layer_norm_2d": (lambda F, L, x: F.layer_norm(x, [3, 2], eps=1e-3), [randn(4, 3, 2)]),
    "rms_norm": (lambda F, L, x, w: F.rms_norm(x, [6], w), [X, randn(6)]),
    "rms_norm_eps": (lambda F, L, x: F.rms_norm(x, (6,), eps=1e-3), [X]),
    "group_norm": (lambda F, L, x, w, b: F.group_norm(x, 2, w, b), [randn(3, 4, 5), randn(4), randn(4)]),
    "batch_norm_train": (lambda F, L, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         [randn(6, 3, 2), randn(3), randn(3)]),
    "normalize": (lambda F, L, x: F.normalize(x), [X]),
    "normalize_p1": (lambda F, L, x: F.normalize(x, p=1, dim=0), [X]),
    "cosine_similarity": (lambda F, L, a, b: F.cosine_similarity(a, b), [X, Y]),
    "pairwise_distance": (lambda F, L, a, b: F.pairwise_distance(a, b), [X, Y]),
    "cross_entropy": (lambda F, L, x: F.cross_entropy(x, L.from_numpy(TARGET)), [LOGITS]),
    "cross_entropy_sum": (lambda F, L, x: F.cross_entropy(x, L.from_numpy(TARGET), reduction="sum"), [LOGITS]),
    "cross_entropy_none": (lambda F, L, x: F.cross_entropy(x, L.from_numpy(TARGET), reduction="none"), [LOGITS]),
    "cross_entropy_weight_ignore": (lambda F, L, x, w: F.cross_entropy(x, L.from_numpy(TARGET_IGNORE), weight=w),
                                    [LOGITS, CLASS_WEIGHT]),
    "cross_entropy_smoothing": (lambda F, L, x: F.cross_entropy(x, L.from_numpy(TARGET_IGNORE),
                                                                label_smoothing=0.1), [LOGITS]),
    "cross_entropy_smoothing_weight": (lambda F, L, x, w: F.cross_entropy(x, L.from_numpy(TARGET), weight=w,
                                                                          label_smoothing=0.2),
                                       [LOGITS, CLASS_WEIGHT]),
    "cross_entropy_probs": (lambda F, L, x, p: F.cross_entropy(x, p), [LOGITS, probs(5, 7)]),
    "cross_entropy_3d": (lambda F, L, x: F.cross_entropy(x, L.from_numpy(TARGET_3D)), [LOGITS_3D]),
    "nll_loss": (lambda F, L, x: F.nll_loss(x, L.from_numpy(TARGET)), [LOGITS]),
    "nll_loss_weight_ignore": (lambda F, L, x, w: F.nll_loss(x, L.from_numpy(TARGET_IGNORE), weight=w,
                                                             reduction="mean"), [LOGITS, CLASS_WEIGHT]),
    "nll_loss_none": (lambda F, L, x: F.nll_loss(x, L.from_numpy(TARGET), reduction="none"), [LOGITS]),
    "mse_loss": (lambda F, L, a, b: F.mse_loss(a, b), [X, Y]),
    "mse_loss_sum": (lambda F, L, a, b: F.mse_loss(a, b, reduction="sum"), [X, Y]),
    "mse_loss_none": (lambda F, L, a, b: F.mse_loss(a, b, reduction="none"), [X, Y]),
    "l1_loss": (lambda F, L, a, b: F.l1_loss(a, b), [X, Y]),
    "smooth_l1_loss": (lambda F, L, a, b: F.smooth_l1_loss(a, b, beta=0.5), [X, Y]),
    "huber_loss": (lambda F, L, a, b: F.huber_loss(a, b, delta=0.7), [X, Y]),
    "bce": (lambda F, L, p, t: F.binary_cross_entropy(p, t), [ZERO_ONE * 0.98 + 0.01, ZERO_ONE]),
    "bce_with_logits": (lambda F, L, x, t: F.binary_cross_entropy_with_logits(x, t), [X, ZERO_ONE]),
    "bce_with_logits_pos_weight": (lambda F, L, x, t, w: F.binary_cross_entropy_with_logits(x, t, pos_weight=w),
                                   [X, ZERO_ONE, Const(np.abs(randn(6)) + 0.5)]),
    "kl_div_log_target": (lambda F, L, a, b: F.kl_div(a, b, reduction="batchmean", log_target=True), [X, Y]),
    "sdpa": (lambda F, L, q, k, v: F.scaled_dot_product_attention(q, k, v), [Q, K, V]),
    "sdpa_causal_scale": (lambda F, L, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
                          [Q, K, V]),
    "sdpa_bool_mask": (lambda F, L, q, k, v: F.scaled_dot_product_attention(q, k, v, L.from_numpy(BOOL_MASK)),
                       [Q, K, V]),
    "sdpa_float_mask": (lambda F, L, q, k, v, m: F.scaled_dot_product_attention(q, k, v, m), [Q, K, V, randn(5, 6)]),
    "conv1d": (lambda F, L, x, w, b: F.conv1d(x, w, b, padding=1), [randn(2, 3, 8), randn(4, 3, 3), randn(4)]),
    "conv2d": (lambda F, L, x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [randn(2, 3, 7, 7), randn(4, 3, 3, 3),
                                                                             randn(4)]),
    "max_pool2d": (lambda F, L, x: F.max_pool2d(x, 2), [randn(2, 3, 6, 6)]),
    "avg_pool2d": (lambda F, L, x: F.avg_pool2d(x, 3, stride=2, padding=1), [randn(2, 3, 7, 7)]),
    "adaptive_avg_pool2d": (lambda F, L, x: F.adaptive_avg_pool2d(x, (2, 3)), [randn(2, 3, 6, 7)]),
}

# float tolerances: torch's defaults for float32 (assert_close), slightly wider for the gradient sums
TOL = dict(rtol=1.3e-6, atol=1e-5)
GRAD_TOL = dict(rtol=1e-5, atol=1e-5)


def check_case(name):
    call, inputs = CASES[name]
    arrays = [x.array if isinstance(x, Const) else x for x in inputs]
    kin = [kiln.from_numpy(x.copy()) for x in arrays]
    tin = [torch.from_numpy(x.copy()) for x in arrays]
    for k, t, x in zip(kin, tin, inputs):
        if t.dtype.is_floating_point and not isinstance(x, Const):
            k.requires_grad_(True)
            t.requires_grad_(True)
    kout, tout = call(KF, kiln, *kin), call(TF, torch, *tin)
    assert tuple(kout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(kout.detach().numpy(), tout.detach().numpy(), **TOL)
    if not tout.requires_grad:
        return
    w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
    kout.backward(kiln.from_numpy(w.copy()))
    tout.backward(torch.from_numpy(w.copy()))
    for i, (k, t) in enumerate(zip(kin, tin)):
        if t.requires_grad and t.grad is not None:
            assert k.grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), err_msg=f"input {i}", **GRAD_TOL)


@pytest.mark.parametrize("name", list(CASES))
def test_functional_matches_torch(name):
    check_case(name)


@pytest.mark.parametrize("name", [n for n in dir(KF) if not n.startswith("_") and callable(getattr(KF, n))
                                  and hasattr(TF, n) and n not in ("Tensor", "no_grad")])
def test_signature_matches_torch(name):
    kfn, tfn = getattr(KF, name), getattr(TF, name)
    # torch's max pools are boolean_dispatch wrappers, (*args, **kwargs), over a _with_indices form with the signature
    tfn = getattr(TF, name + "_with_indices", tfn)
    try:
        tsig = inspect.signature(tfn)
    except (TypeError, ValueError):  # a C builtin: its docstring opens with the signature, or its ATen schema has it
        doc = " ".join(tfn.__doc__.split())
        start = doc.find(name + "(")
        if start >= 0 and "(*args, **kwargs)" not in doc[:start + len(name) + 20]:
            params = doc[start + len(name) + 1:doc.index(")", start)]
            names = [p.split("=")[0].strip() for p in params.split(",") if p.strip() not in ("", "*")]
        else:
            schema = getattr(torch.ops.aten, name).default._schema
            names = ["input" if a.name == "self" else a.name for a in schema.arguments]  # Python calls self input
        assert [p for p in inspect.signature(kfn).parameters] == names
        return
    assert list(tsig.parameters) not in (["args", "kwargs"], ["input", "args", "kwargs"]), "a wrapper: find its form"
    ksig = inspect.signature(kfn)
    assert [(p.name, p.default) for p in ksig.parameters.values()] == \
        [(p.name, p.default) for p in tsig.parameters.values()]


def test_dropout_composite_statistics():
    x = kiln.ones(200, 500)
    kiln.manual_seed(0)
    out = KF.dropout(x, 0.3).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert np.all(KF.dropout(x, 1.0).numpy() == 0)


def test_one_hot():
    idx = np.array([0, 3, 1])
    np.testing.assert_array_equal(KF.one_hot(kiln.from_numpy(idx), 5).numpy(),
                                  TF.one_hot(torch.from_numpy(idx), 5).numpy())


def test_multi_head_attention_forward_matches_torch():
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    km = kiln.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    km.load_state_dict({k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    q, kv = randn(5, 3, 8), randn(6, 3, 8)
    padding = np.zeros((3, 6), dtype=bool)
    padding[1, -2:] = True
    ko, kw = km(kiln.from_numpy(q), kiln.from_numpy(kv), kiln.from_numpy(kv),
                key_padding_mask=kiln.from_numpy(padding))
    to, tw = tm(torch.from_numpy(q), torch.from_numpy(kv), torch.from_numpy(kv),
                key_padding_mask=torch.from_numpy(padding))
    np.testing.assert_allclose(ko.detach().numpy(), to.detach().numpy(), **GRAD_TOL)
    np.testing.assert_allclose(kw.detach().numpy(), tw.detach().numpy(), **GRAD_TOL)


ERRORS = {
    "dropout_p": lambda F, L: F.dropout(L.ones(3), 1.5),
    "reduction": lambda F, L: F.mse_loss(L.ones(3), L.ones(3), reduction="avg"),
    "pad_odd": lambda F, L: F.pad(L.ones(3), (1,)),
    "pad_too_long": lambda F, L: F.pad(L.ones(3), (1, 1, 1, 1)),
    "hardtanh_bounds": lambda F, L: F.hardtanh(L.ones(2), 2.0, 1.0),
    "bce_logits_shape": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(2, 3), L.ones(3)),
    "bce_shape": lambda F, L: F.binary_cross_entropy(L.ones(2, 3) * 0.5, L.ones(3)),
    "bce_input_above_one": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, 1.5]), L.ones(2)),
    "bce_input_nan": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, float("nan")]), L.ones(2)),
    "bce_target_negative": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, 0.5]), L.tensor([1.0, -0.5])),
    "label_smoothing": lambda F, L: F.cross_entropy(L.ones(2, 3), L.zeros(2, dtype=L.int64), label_smoothing=1.5),
    "glu_odd": lambda F, L: F.glu(L.ones(2, 3)),
    "embedding_padding_idx": lambda F, L: F.embedding(L.zeros(2, dtype=L.int64), L.ones(3, 2), padding_idx=5),
    "linear_shapes": lambda F, L: F.linear(L.ones(2, 3), L.ones(4, 5)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(lambda: ERRORS[name](KF, kiln), lambda: ERRORS[name](TF, torch), message=name != "linear_shapes")


def test_nll_loss_batch_mismatch_error():
    assert_same_error(lambda: KF.nll_loss(kiln.ones(3, 4), kiln.zeros(2, dtype=kiln.int64)),
                      lambda: TF.nll_loss(torch.ones(3, 4), torch.zeros(2, dtype=torch.int64)))


def test_mse_loss_warns_on_broadcast():
    with pytest.warns(UserWarning, match="Using a target size"):
        KF.mse_loss(kiln.ones(3, 1), kiln.ones(3), reduction="none")


def test_softmax_implicit_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        KF.softmax(kiln.ones(2, 3))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (-1, True), ((0, 2), False),
                                         ((2, 0), True)])
def test_reduction_helpers_match_torch(dim, keepdim):
    """kiln.nn's sum/mean (the ops where the build has them, else a composition: kiln/nn/_ops.py)."""
    from kiln.nn._ops import detached_amax, reduce_mean, reduce_sum

    x = randn(3, 4, 5)
    for kfn, tfn in ((reduce_sum, torch.sum), (reduce_mean, torch.mean)):
        k = kiln.from_numpy(x.copy()).requires_grad_(True)
        t = torch.from_numpy(x.copy()).requires_grad_(True)
        kout = kfn(k, dim, keepdim)
        tout = tfn(t, dim=dim if dim is not None else (0, 1, 2), keepdim=keepdim)
        np.testing.assert_allclose(kout.detach().numpy(), tout.detach().numpy(), **TOL)
        g = randn(*tout.shape)
        kout.backward(kiln.from_numpy(g.copy()))
        tout.backward(torch.from_numpy(g.copy()))
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), **TOL)
    if isinstance(dim, int):
        m = detached_amax(kiln.from_numpy(x.copy()).requires_grad_(True), dim, keepdim)
        assert not m.requires_grad
        np.testing.assert_array_equal(m.numpy(), x.max(axis=dim, keepdims=keepdim))
