"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions
(torch 2.13) against torch: values and gradients over input ranks, bias, K-dimensional
class weights, class weights, reductions, ignore_index, label smoothing and
probability targets; errors; the layer with torch's weights; options."""

import warnings

import numpy as np
import pytest
import torch

import kiln

RNG = np.random.default_rng(21)


def both(array, grad=False):
    return kiln.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)


def targets(shape, classes):
    t = RNG.integers(0, classes, size=shape)
    return kiln.tensor(t), torch.tensor(t)


CASES = {
    "2-d input": dict(input=(4, 5), weight=(3, 5), target="index"),
    "1-d input": dict(input=(5,), weight=(3, 5), target="index"),
    "bias, class weight, sum": dict(input=(4, 5), weight=(3, 5), target="index", bias=True, class_weight=True,
                                    reduction="sum"),
    "none, label smoothing": dict(input=(4, 5), weight=(3, 5), target="index", reduction="none", label_smoothing=0.2),
    "ignore_index": dict(input=(6, 5), weight=(3, 5), target="index", ignore_index=1),
    "K-dimensional, bias": dict(input=(4, 5), weight=(3, 2, 5), target="index", bias=True),
    "probabilities": dict(input=(4, 5), weight=(3, 5), target="probabilities", label_smoothing=0.1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    case = CASES[name]
    kx, tx = both(RNG.standard_normal(case["input"]), grad=True)
    kw, tw = both(RNG.standard_normal(case["weight"]), grad=True)
    classes, extra = case["weight"][0], case["weight"][1:-1]
    batch = case["input"][:-1]
    if case["target"] == "index":
        kt, tt = targets(batch + extra, classes)
    else:
        kt, tt = both(RNG.dirichlet(np.ones(classes), size=batch).reshape(batch + (classes,)))
    kwargs_k, kwargs_t = {}, {}
    if case.get("bias"):
        kb, tb = both(RNG.standard_normal((classes, *extra)), grad=True)
        kwargs_k["linear_bias"], kwargs_t["linear_bias"] = kb, tb
    if case.get("class_weight"):
        kcw, tcw = both(RNG.random(classes) + 0.5)
        kwargs_k["weight"], kwargs_t["weight"] = kcw, tcw
    for key in ("reduction", "ignore_index", "label_smoothing"):
        if key in case:
            kwargs_k[key] = kwargs_t[key] = case[key]
    got = kiln.nn.functional.linear_cross_entropy(kx, kw, kt, **kwargs_k)
    want = torch.nn.functional.linear_cross_entropy(tx, tw, tt, **kwargs_t)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    seed = RNG.standard_normal(tuple(want.shape))
    k_inputs = [kx, kw] + ([kwargs_k["linear_bias"]] if "linear_bias" in kwargs_k else [])
    t_inputs = [tx, tw] + ([kwargs_t["linear_bias"]] if "linear_bias" in kwargs_t else [])
    for kg, tg in zip(kiln.autograd.grad(got, k_inputs, kiln.tensor(seed)),
                      torch.autograd.grad(want, t_inputs, torch.tensor(seed))):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)


ERRORS = {
    "3-d input": lambda L: L.nn.functional.linear_cross_entropy(L.ones(2, 3, 4), L.ones(5, 4), L.zeros(2, 3, dtype=L.int64)),
    "1-d weight": lambda L: L.nn.functional.linear_cross_entropy(L.ones(2, 4), L.ones(4), L.zeros(2, dtype=L.int64)),
    "in_features": lambda L: L.nn.functional.linear_cross_entropy(L.ones(2, 4), L.ones(5, 3), L.zeros(2, dtype=L.int64)),
    "bias shape": lambda L: L.nn.functional.linear_cross_entropy(L.ones(2, 4), L.ones(5, 4), L.zeros(2, dtype=L.int64),
                                                                  linear_bias=L.ones(4)),
    "K-dimensional unbatched": lambda L: L.nn.functional.linear_cross_entropy(L.ones(4), L.ones(5, 2, 4),
                                                                              L.zeros(2, dtype=L.int64)),
    "ignore_index with probabilities": lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(2, 4), L.ones(5, 4), L.ones(2, 5) / 5, ignore_index=0),
    "layer weight shape": lambda L: L.nn.LinearCrossEntropyLoss(4, 3, weight=L.ones(2)),
    "layer label_smoothing": lambda L: L.nn.LinearCrossEntropyLoss(4, 3, label_smoothing=1.5),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    from torch_compare import assert_same_error

    assert_same_error(lambda: ERRORS[name](kiln), lambda: ERRORS[name](torch))


@pytest.mark.parametrize("out_features,bias", [((), False), ((2,), True)])
def test_layer_matches_torch_with_its_weights(out_features, bias):
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(5, 3, out_features=out_features, bias=bias, label_smoothing=0.1).double()
    km = kiln.nn.LinearCrossEntropyLoss(5, 3, out_features=out_features, bias=bias, label_smoothing=0.1).double()
    km.load_state_dict({k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    assert repr(km) == repr(tm)
    kx, tx = both(RNG.standard_normal((4, 5)))
    kt, tt = targets((4, *out_features), 3)
    kloss, tloss = km(kx, kt), tm(tx, tt)
    np.testing.assert_allclose(kloss.item(), tloss.item(), rtol=1e-12)
    kloss.backward()
    tloss.backward()
    np.testing.assert_allclose(km.linear.weight.grad.numpy(), tm.linear.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_options_give_the_reference_result_and_warn_where_torch_ignores_them():
    kx, tx = both(RNG.standard_normal((4, 5)))
    kw, tw = both(RNG.standard_normal((3, 5)))
    kt, tt = targets((4,), 3)
    chunked = kiln.nn.functional.linear_cross_entropy(kx, kw, kt, options=kiln.nn.LinearCrossEntropyOptions(
        batch_chunk_size=2))
    want = torch.nn.functional.linear_cross_entropy(tx, tw, tt, options=torch.nn.LinearCrossEntropyOptions(
        batch_chunk_size=2))
    np.testing.assert_allclose(chunked.item(), want.item(), rtol=1e-10)
    with pytest.warns(UserWarning, match="``options`` ignored"):
        kiln.nn.functional.linear_cross_entropy(kx, kw, kt, label_smoothing=0.1,
                                                options=kiln.nn.LinearCrossEntropyOptions())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kiln.nn.functional.linear_cross_entropy(kx, kw, kt, options=kiln.nn.LinearCrossEntropyOptions())
