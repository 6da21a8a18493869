"""kiln.nn layers against torch.nn: reprs, parameter and buffer names and shapes,
constructor signatures, default initialisation (distributions), containers
(indexing, slicing, mutation, iteration), and the layers' forward and backward
where kiln has their ops."""

import inspect
import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import kiln
import kiln.nn as knn
from frontend_ops import load_from_torch
from torch_compare import as_kiln_text, assert_same_error

LAYERS = {
    "linear": lambda nn: nn.Linear(5, 3),
    "linear_nobias": lambda nn: nn.Linear(5, 3, bias=False),
    "bilinear": lambda nn: nn.Bilinear(4, 5, 3),
    "identity": lambda nn: nn.Identity(54, unused="x"),
    "embedding": lambda nn: nn.Embedding(10, 4),
    "embedding_pad": lambda nn: nn.Embedding(10, 4, padding_idx=-2, norm_type=1.0),
    "layernorm": lambda nn: nn.LayerNorm(6),
    "layernorm_2d": lambda nn: nn.LayerNorm([3, 4], eps=1e-6, elementwise_affine=False),
    "layernorm_nobias": lambda nn: nn.LayerNorm(6, bias=False),
    "rmsnorm": lambda nn: nn.RMSNorm(6),
    "rmsnorm_eps": lambda nn: nn.RMSNorm([2, 3], eps=1e-5, elementwise_affine=False),
    "groupnorm": lambda nn: nn.GroupNorm(2, 6),
    "batchnorm1d": lambda nn: nn.BatchNorm1d(4),
    "batchnorm2d": lambda nn: nn.BatchNorm2d(3, momentum=None, affine=False, track_running_stats=False),
    "dropout": lambda nn: nn.Dropout(0.2, inplace=True),
    "relu": lambda nn: nn.ReLU(),
    "relu_inplace": lambda nn: nn.ReLU(inplace=True),
    "relu6": lambda nn: nn.ReLU6(),
    "gelu": lambda nn: nn.GELU(approximate="tanh"),
    "silu": lambda nn: nn.SiLU(),
    "tanh": lambda nn: nn.Tanh(),
    "sigmoid": lambda nn: nn.Sigmoid(),
    "softmax": lambda nn: nn.Softmax(dim=-1),
    "logsoftmax": lambda nn: nn.LogSoftmax(1),
    "leakyrelu": lambda nn: nn.LeakyReLU(0.2, inplace=True),
    "elu": lambda nn: nn.ELU(alpha=0.5),
    "softplus": lambda nn: nn.Softplus(beta=2, threshold=10),
    "hardtanh": lambda nn: nn.Hardtanh(-2.0, 2.0),
    "flatten": lambda nn: nn.Flatten(),
    "unflatten": lambda nn: nn.Unflatten(1, (2, 5)),
    "conv1d": lambda nn: nn.Conv1d(4, 6, 3),
    "conv2d": lambda nn: nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
    "conv2d_groups": lambda nn: nn.Conv2d(4, 8, (3, 5), dilation=2, groups=2, padding_mode="reflect"),
    "maxpool2d": lambda nn: nn.MaxPool2d(2),
    "maxpool2d_args": lambda nn: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    "avgpool2d": lambda nn: nn.AvgPool2d(2, stride=1),
    "adaptiveavgpool2d": lambda nn: nn.AdaptiveAvgPool2d((1, 1)),
    "mha": lambda nn: nn.MultiheadAttention(8, 2),
    "mha_kv": lambda nn: nn.MultiheadAttention(8, 2, kdim=4, vdim=6, add_bias_kv=True, batch_first=True),
    "encoder_layer": lambda nn: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
    "encoder_layer_gelu": lambda nn: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True,
                                                                batch_first=True),
    "cross_entropy": lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1),
    "nll": lambda nn: nn.NLLLoss(),
    "mse": lambda nn: nn.MSELoss(reduction="sum"),
    "l1": lambda nn: nn.L1Loss(),
    "bce_logits": lambda nn: nn.BCEWithLogitsLoss(),
    "sequential": lambda nn: nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)),
    "sequential_dict": lambda nn: nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())])),
    "modulelist": lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(),
                                            nn.Linear(2, 2)]),
    "modulelist_empty": lambda nn: nn.ModuleList(),
    "moduledict": lambda nn: nn.ModuleDict({"b": nn.ReLU(), "a": nn.Linear(1, 2)}),
    "nested": lambda nn: nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), nn.ModuleList([nn.Tanh()])),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_repr_matches_torch(name):
    torch.manual_seed(0)
    assert repr(LAYERS[name](knn)) == as_kiln_text(repr(LAYERS[name](torch.nn)))


@pytest.mark.parametrize("name", list(LAYERS))
def test_parameters_and_buffers_match_torch(name):
    k, t = LAYERS[name](knn), LAYERS[name](torch.nn)
    assert [(n, tuple(p.shape), p.requires_grad) for n, p in k.named_parameters()] == \
        [(n, tuple(p.shape), p.requires_grad) for n, p in t.named_parameters()]
    assert [(n, tuple(b.shape), as_kiln_text(str(b.dtype))) for n, b in k.named_buffers()] == \
        [(n, tuple(b.shape), as_kiln_text(str(b.dtype))) for n, b in t.named_buffers()]
    assert list(k.state_dict().keys()) == list(t.state_dict().keys())


def test_parameter_containers_repr_and_registration():
    for nn, lib in ((knn, kiln), (torch.nn, torch)):
        pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(4)])
        pd = nn.ParameterDict({"w": nn.Parameter(lib.ones(2)), "b": lib.zeros(3, dtype=lib.float64)})
        if nn is knn:
            k_reprs = (repr(pl), repr(pd), [n for n, _ in pl.named_parameters()], list(pd.keys()))
            assert all(isinstance(p, knn.Parameter) for p in pl)
        else:
            t_reprs = (repr(pl), repr(pd), [n for n, _ in pl.named_parameters()], list(pd.keys()))
    assert k_reprs[0] == as_kiln_text(t_reprs[0])
    assert k_reprs[1] == as_kiln_text(t_reprs[1])
    assert k_reprs[2:] == t_reprs[2:]


def _signature(obj):
    return [(p.name, p.kind, p.default if p.default is inspect.Parameter.empty or not callable(p.default)
             else p.default.__name__) for p in inspect.signature(obj).parameters.values()]


SIGNATURE_CLASSES = ["Linear", "Bilinear", "Embedding", "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d",
                     "BatchNorm2d", "Dropout", "ReLU", "GELU", "SiLU", "Softmax", "LogSoftmax", "LeakyReLU",
                     "Flatten", "Unflatten", "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
                     "MultiheadAttention", "TransformerEncoderLayer", "CrossEntropyLoss", "NLLLoss", "MSELoss",
                     "L1Loss", "BCEWithLogitsLoss", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


@pytest.mark.parametrize("name", SIGNATURE_CLASSES)
def test_constructor_signatures_match_torch(name):
    ksig, tsig = _signature(getattr(knn, name)), _signature(getattr(torch.nn, name))
    assert [p[0] for p in ksig] == [p[0] for p in tsig]
    assert [p[2] for p in ksig] == [p[2] for p in tsig]


INIT_CASES = {
    "linear.weight": (lambda nn: nn.Linear(400, 300), "weight"),
    "linear.bias": (lambda nn: nn.Linear(400, 3000), "bias"),
    "bilinear.weight": (lambda nn: nn.Bilinear(50, 40, 30), "weight"),
    "embedding.weight": (lambda nn: nn.Embedding(300, 200), "weight"),
    "conv2d.weight": (lambda nn: nn.Conv2d(16, 64, 5), "weight"),
    "conv2d.bias": (lambda nn: nn.Conv2d(3, 2000, 3), "bias"),
    "mha.in_proj_weight": (lambda nn: nn.MultiheadAttention(128, 4), "in_proj_weight"),
}


@pytest.mark.parametrize("name", list(INIT_CASES))
def test_default_initialisation_distribution(name):
    build, attr = INIT_CASES[name]
    k = getattr(build(knn), attr).detach().numpy().astype(np.float64)
    t = getattr(build(torch.nn), attr).detach().numpy().astype(np.float64)
    assert abs(k.std() - t.std()) < 0.03 * t.std()
    assert abs(k.mean() - t.mean()) < 6 * t.std() / math.sqrt(t.size)
    if name != "embedding.weight":  # the uniform initialisers: the same bounds, reached nearly
        spread = t.max() - t.min()
        assert abs(k.max() - t.max()) < 0.05 * spread and abs(k.min() - t.min()) < 0.05 * spread


def test_constant_initialisation():
    k = knn.Embedding(5, 3, padding_idx=1)
    assert np.all(k.weight.detach().numpy()[1] == 0) and np.any(k.weight.detach().numpy()[0] != 0)
    for m in (knn.LayerNorm(4), knn.GroupNorm(2, 4), knn.BatchNorm1d(4)):
        np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones(4, np.float32))
        np.testing.assert_array_equal(m.bias.detach().numpy(), np.zeros(4, np.float32))
    bn = knn.BatchNorm2d(3)
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3, np.float32))
    assert bn.num_batches_tracked.dtype == kiln.int64 and bn.num_batches_tracked.item() == 0
    mha = knn.MultiheadAttention(8, 2)
    assert np.all(mha.in_proj_bias.detach().numpy() == 0) and np.all(mha.out_proj.bias.detach().numpy() == 0)


def test_dtype_factory_kwarg():
    m = knn.Linear(3, 2, dtype=kiln.float64)
    assert m.weight.dtype == kiln.float64 and m.bias.dtype == kiln.float64


# --- containers ----------------------------------------------------------------------------------
def both(fn):
    return fn(knn), fn(torch.nn)


def names(module):
    return [n for n, _ in module.named_modules()]


def test_sequential_indexing_slicing_mutation():
    k, t = both(lambda nn: nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 4), nn.Tanh()))
    assert len(k) == len(t) == 4
    assert repr(k[-1]) == as_kiln_text(repr(t[-1])) and repr(k[0]) == as_kiln_text(repr(t[0]))
    assert repr(k[1:3]) == as_kiln_text(repr(t[1:3]))
    assert isinstance(k[::2], knn.Sequential) and len(k[::2]) == 2
    assert_same_error(lambda: k[4], lambda: t[4])
    k.append(knn.Sigmoid())
    t.append(torch.nn.Sigmoid())
    k.insert(1, knn.Identity())
    t.insert(1, torch.nn.Identity())
    assert repr(k) == as_kiln_text(repr(t))
    del k[2]
    del t[2]
    assert repr(k) == as_kiln_text(repr(t))
    k[0] = knn.Linear(2, 5)
    t[0] = torch.nn.Linear(2, 5)
    assert repr(k) == as_kiln_text(repr(t))
    assert [type(m).__name__ for m in k] == [type(m).__name__ for m in t]
    assert repr(k + k[:1]) == as_kiln_text(repr(t + t[:1]))
    k.extend([knn.ReLU()])
    t.extend([torch.nn.ReLU()])
    assert repr(k) == as_kiln_text(repr(t))
    assert repr(k.pop(0)) == as_kiln_text(repr(t.pop(0)))
    assert repr(k) == as_kiln_text(repr(t))


def test_sequential_forward_runs_modules_in_order():
    calls = []

    class Tag(knn.Module):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def forward(self, x):
            calls.append(self.tag)
            return x + 1

    seq = knn.Sequential(Tag("a"), Tag("b"), Tag("c"))
    out = seq(kiln.zeros(2))
    assert calls == ["a", "b", "c"] and out.tolist() == [3.0, 3.0]


def test_modulelist_and_moduledict():
    k, t = both(lambda nn: nn.ModuleList([nn.Linear(1, 1) for _ in range(3)]))
    k.append(knn.ReLU())
    t.append(torch.nn.ReLU())
    k.insert(0, knn.Tanh())
    t.insert(0, torch.nn.Tanh())
    k += [knn.Sigmoid()]
    t += [torch.nn.Sigmoid()]
    assert repr(k) == as_kiln_text(repr(t))
    assert repr(k[1:3]) == as_kiln_text(repr(t[1:3]))
    del k[0]
    del t[0]
    assert repr(k) == as_kiln_text(repr(t)) and len(k) == len(t)
    assert_same_error(lambda: k[10], lambda: t[10])
    assert len(list(k.parameters())) == len(list(t.parameters())) == 6
    kd, td = both(lambda nn: nn.ModuleDict([("x", nn.ReLU()), ("y", nn.Linear(2, 2))]))
    kd["z"] = knn.Tanh()
    td["z"] = torch.nn.Tanh()
    assert list(kd.keys()) == list(td.keys()) and "y" in kd and len(kd) == 3
    assert repr(kd.pop("x")) == as_kiln_text(repr(td.pop("x")))
    assert repr(kd) == as_kiln_text(repr(td))
    kd.update({"w": knn.Identity()})
    td.update({"w": torch.nn.Identity()})
    assert [k for k in kd] == [k for k in td]


def test_parameter_list_and_dict_behave_like_torch():
    kl = knn.ParameterList([kiln.ones(2), kiln.ones(3)])
    kl.append(knn.Parameter(kiln.zeros(1)))
    assert len(kl) == 3 and [tuple(p.shape) for p in kl] == [(2,), (3,), (1,)]
    assert len(list(knn.Sequential().parameters())) == 0
    holder = knn.Module()
    holder.params = kl
    assert [n for n, _ in holder.named_parameters()] == ["params.0", "params.1", "params.2"]
    assert tuple(kl[-1].shape) == (1,) and len(kl[1:]) == 2
    kd = knn.ParameterDict({"a": kiln.ones(2)})
    kd["b"] = kiln.zeros(3)
    assert isinstance(kd["b"], knn.Parameter) and list(kd.keys()) == ["a", "b"] and "a" in kd
    assert tuple(kd.pop("a").shape) == (2,) and list(kd) == ["b"]
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        kl()


def test_loss_legacy_arguments_warn_and_pick_reduction():
    for args, expected in (({"size_average": False}, "sum"), ({"reduce": False}, "none")):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            k = knn.MSELoss(**args)
        with pytest.warns(UserWarning):
            t = torch.nn.MSELoss(**args)
        assert k.reduction == t.reduction == expected


def test_layer_errors_match_torch():
    assert_same_error(lambda: knn.Dropout(1.5), lambda: torch.nn.Dropout(1.5))
    assert_same_error(lambda: knn.GroupNorm(4, 6), lambda: torch.nn.GroupNorm(4, 6))
    assert_same_error(lambda: knn.Conv2d(3, 4, 3, groups=2), lambda: torch.nn.Conv2d(3, 4, 3, groups=2))
    assert_same_error(lambda: knn.Embedding(4, 2, padding_idx=5), lambda: torch.nn.Embedding(4, 2, padding_idx=5))
    assert_same_error(lambda: knn.MultiheadAttention(6, 4), lambda: torch.nn.MultiheadAttention(6, 4))
    assert_same_error(lambda: knn.Unflatten(1, [2, 2.0]), lambda: torch.nn.Unflatten(1, [2, 2.0]))
    assert_same_error(lambda: knn.BatchNorm2d(3)(kiln.ones(2, 3)), lambda: torch.nn.BatchNorm2d(3)(torch.ones(2, 3)))


# --- forward and backward, where kiln has the ops ---------------------------------------------------
def run_both(build, *inputs, dtype=np.float32, grad_inputs=True):
    """The layer's outputs and gradients (of sum(output * fixed weights)) in kiln and torch."""
    torch.manual_seed(0)
    t = build(torch.nn)
    k = build(knn)
    load_from_torch(k, t)
    kin = [kiln.from_numpy(x.copy()).requires_grad_(grad_inputs and x.dtype.kind == "f") for x in inputs]
    tin = [torch.from_numpy(x.copy()).requires_grad_(grad_inputs and x.dtype.kind == "f") for x in inputs]
    kout, tout = k(*kin), t(*tin)
    np.testing.assert_allclose(kout.detach().numpy(), tout.detach().numpy(), rtol=1.3e-6, atol=1e-5)
    w = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
    kout.backward(kiln.from_numpy(w))
    tout.backward(torch.from_numpy(w))
    for (name, kp), (_, tp) in zip(k.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(kp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)
    for ki, ti in zip(kin, tin):
        if ti.requires_grad:
            np.testing.assert_allclose(ki.grad.numpy(), ti.grad.numpy(), rtol=1e-5, atol=1e-5)


RNG = np.random.default_rng(0)


def test_linear_forward_backward():
    run_both(lambda nn: nn.Linear(5, 3), RNG.standard_normal((4, 5)).astype(np.float32))
    run_both(lambda nn: nn.Linear(5, 3, bias=False), RNG.standard_normal((2, 4, 5)).astype(np.float32))


def test_bilinear_forward_backward():
    run_both(lambda nn: nn.Bilinear(4, 5, 3), RNG.standard_normal((6, 4)).astype(np.float32),
             RNG.standard_normal((6, 5)).astype(np.float32))


def test_flatten_unflatten_identity():
    run_both(lambda nn: nn.Flatten(), RNG.standard_normal((2, 3, 4)).astype(np.float32))
    run_both(lambda nn: nn.Flatten(0, 1), RNG.standard_normal((2, 3, 4)).astype(np.float32))
    run_both(lambda nn: nn.Unflatten(1, (2, 3)), RNG.standard_normal((4, 6)).astype(np.float32))
    run_both(lambda nn: nn.Identity(), RNG.standard_normal((3,)).astype(np.float32))


def test_dropout_eval_is_identity():
    d = knn.Dropout(0.5).eval()
    x = kiln.randn(10)
    assert d(x) is x


@pytest.mark.parametrize("name", ["relu", "relu6"])
def test_relu_layers(name):
    run_both(LAYERS[name], RNG.standard_normal((4, 5)).astype(np.float32))


@pytest.mark.parametrize("name", ["gelu", "silu", "tanh", "sigmoid", "leakyrelu", "elu", "softplus", "hardtanh"])
def test_activation_layers(name):
    build = LAYERS[name]
    if name == "leakyrelu":
        build = lambda nn: nn.LeakyReLU(0.2)  # noqa: E731  (not in place: the input is a leaf)
    run_both(build, RNG.standard_normal((4, 5)).astype(np.float32))


@pytest.mark.parametrize("name", ["softmax", "logsoftmax"])
def test_softmax_layers(name):
    run_both(LAYERS[name], RNG.standard_normal((4, 5)).astype(np.float32))


@pytest.mark.parametrize("name", ["layernorm", "layernorm_2d", "layernorm_nobias", "rmsnorm", "rmsnorm_eps",
                                  "groupnorm"])
def test_normalization_layers(name):
    shape = {"layernorm_2d": (2, 3, 4), "rmsnorm_eps": (4, 2, 3), "groupnorm": (2, 6, 5)}.get(name, (4, 6))
    run_both(LAYERS[name], RNG.standard_normal(shape).astype(np.float32))


def test_batchnorm_train_and_eval():
    torch.manual_seed(0)
    t, k = torch.nn.BatchNorm2d(3), knn.BatchNorm2d(3)
    for step in range(3):
        x = RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)
        np.testing.assert_allclose(k(kiln.from_numpy(x)).detach().numpy(), t(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(k, name).numpy(), getattr(t, name).numpy(), rtol=1e-5, atol=1e-6)
    assert k.num_batches_tracked.item() == t.num_batches_tracked.item() == 3
    k.eval()
    t.eval()
    x = RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(k(kiln.from_numpy(x)).detach().numpy(), t(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_embedding_forward_backward_padding_idx():
    torch.manual_seed(0)
    t, k = torch.nn.Embedding(10, 4, padding_idx=2), knn.Embedding(10, 4, padding_idx=2)
    load_from_torch(k, t)
    idx = np.array([[1, 2, 3], [2, 9, 1]], dtype=np.int64)
    ko, to = k(kiln.from_numpy(idx)), t(torch.from_numpy(idx))
    np.testing.assert_allclose(ko.detach().numpy(), to.detach().numpy())
    w = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    ko.backward(kiln.from_numpy(w))
    to.backward(torch.from_numpy(w))
    np.testing.assert_allclose(k.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
