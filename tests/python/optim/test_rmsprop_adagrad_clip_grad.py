"""RMSprop and Adagrad against torch.optim over 50 steps (every option, param
groups, state_dict round trips, signatures, errors); clip_grad_norm_,
clip_grad_value_ and parameters_to_vector against torch.nn.utils."""

import inspect
import math

import numpy as np
import pytest
import torch

import kiln
import kiln.nn.utils as kutils
import kiln.optim as ko
from kiln.nn import Parameter
from torch_compare import assert_same_error

RNG = np.random.default_rng(0)


def make_params(dtype=np.float32):
    w0 = [RNG.standard_normal((3, 4)).astype(dtype), RNG.standard_normal((5,)).astype(dtype)]
    return [Parameter(kiln.tensor(w)) for w in w0], [torch.nn.Parameter(torch.tensor(w)) for w in w0]


def run(kcls, tcls, kwargs, steps=50, groups=False, dtype=np.float32):
    kp, tp = make_params(dtype)
    if groups:
        kopt = kcls([{"params": [kp[0]]}, {"params": [kp[1]], "lr": 0.003}], **kwargs)
        topt = tcls([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.003}], **kwargs)
    else:
        kopt, topt = kcls(kp, **kwargs), tcls(tp, **kwargs)
    for _ in range(steps):
        for k, t in zip(kp, tp):
            g = RNG.standard_normal(tuple(t.shape)).astype(dtype)
            k.grad, t.grad = kiln.tensor(g), torch.tensor(g)
        kopt.step()
        topt.step()
        for k, t in zip(kp, tp):
            np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    return kopt, topt, kp, tp


RMSPROP = [dict(), dict(lr=0.01), dict(lr=0.01, alpha=0.9, eps=1e-6), dict(lr=0.01, weight_decay=0.1),
           dict(lr=0.01, momentum=0.9), dict(lr=0.01, centered=True), dict(lr=0.01, momentum=0.5, centered=True,
                                                                            weight_decay=0.01),
           dict(lr=0.01, maximize=True)]
ADAGRAD = [dict(), dict(lr=0.1), dict(lr=0.1, lr_decay=0.01), dict(lr=0.1, weight_decay=0.1),
           dict(lr=0.1, initial_accumulator_value=0.5), dict(lr=0.1, eps=1e-6, maximize=True)]


@pytest.mark.parametrize("kwargs", RMSPROP)
def test_rmsprop_trajectory(kwargs):
    run(ko.RMSprop, torch.optim.RMSprop, kwargs)


@pytest.mark.parametrize("kwargs", ADAGRAD)
def test_adagrad_trajectory(kwargs):
    run(ko.Adagrad, torch.optim.Adagrad, kwargs)


@pytest.mark.parametrize("kcls,tcls,kwargs", [(ko.RMSprop, torch.optim.RMSprop, dict(momentum=0.9, centered=True)),
                                              (ko.Adagrad, torch.optim.Adagrad, dict(lr_decay=0.1))])
def test_param_groups_and_float64(kcls, tcls, kwargs):
    run(kcls, tcls, kwargs, groups=True)
    run(kcls, tcls, kwargs, steps=10, dtype=np.float64)


@pytest.mark.parametrize("kcls,tcls,kwargs", [(ko.RMSprop, torch.optim.RMSprop, dict(momentum=0.9, centered=True)),
                                              (ko.Adagrad, torch.optim.Adagrad, dict(lr=0.1))])
def test_state_dict_round_trip_continues_the_trajectory(kcls, tcls, kwargs):
    kopt, topt, kp, tp = run(kcls, tcls, kwargs, steps=5)
    ks, ts = kopt.state_dict(), topt.state_dict()
    assert ks["param_groups"] == ts["param_groups"]
    assert sorted(ks["state"][0]) == sorted(ts["state"][0])
    fresh = kcls(kp, **kwargs)
    fresh.load_state_dict(ks)
    for _ in range(5):
        for k, t in zip(kp, tp):
            g = RNG.standard_normal(tuple(t.shape)).astype(np.float32)
            k.grad, t.grad = kiln.tensor(g), torch.tensor(g)
        fresh.step()
        topt.step()
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_closure_and_missing_grads():
    kp, _ = make_params()
    opt = ko.RMSprop(kp)
    before = kp[1].detach().numpy().copy()
    kp[0].grad = kiln.ones(3, 4)
    assert opt.step(lambda: 3.0) == 3.0
    np.testing.assert_array_equal(kp[1].detach().numpy(), before)  # no grad: untouched


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad"])
def test_signatures_match_torch(name):
    ks, ts = inspect.signature(getattr(ko, name)), inspect.signature(getattr(torch.optim, name))
    assert [(p.name, p.kind, p.default) for p in ks.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in ts.parameters.values()]


@pytest.mark.parametrize("name,kwargs", [("RMSprop", dict(lr=-1)), ("RMSprop", dict(eps=-1)),
                                         ("RMSprop", dict(momentum=-1)), ("RMSprop", dict(weight_decay=-1)),
                                         ("RMSprop", dict(alpha=-1)), ("Adagrad", dict(lr=-1)),
                                         ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(weight_decay=-1)),
                                         ("Adagrad", dict(initial_accumulator_value=-1)), ("Adagrad", dict(eps=-1))])
def test_option_errors_match_torch(name, kwargs):
    kp, tp = make_params()
    assert_same_error(lambda: getattr(ko, name)(kp, **kwargs), lambda: getattr(torch.optim, name)(tp, **kwargs))


# --- kiln.nn.utils ------------------------------------------------------------------------------
def grads_pair(scale=1.0):
    kp, tp = make_params()
    for k, t in zip(kp, tp):
        g = (RNG.standard_normal(tuple(t.shape)) * scale).astype(np.float32)
        k.grad, t.grad = kiln.tensor(g), torch.tensor(g)
    return kp, tp


@pytest.mark.parametrize("max_norm,norm_type", [(0.5, 2.0), (100.0, 2.0), (0.5, 1.0), (1.0, 3.0), (0.3, math.inf),
                                                (0.3, "inf")])
def test_clip_grad_norm(max_norm, norm_type):
    kp, tp = grads_pair()
    kn = kutils.clip_grad_norm_(kp, max_norm, norm_type=float(norm_type))
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=float(norm_type))
    np.testing.assert_allclose(kn.item(), tn.item(), rtol=1e-5)
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_single_tensor_and_nonfinite():
    kp, tp = grads_pair()
    np.testing.assert_allclose(kutils.clip_grad_norm_(kp[0], 1.0).item(),
                               torch.nn.utils.clip_grad_norm_(tp[0], 1.0).item(), rtol=1e-5)
    kp[0].grad.fill_(float("inf"))
    tp[0].grad.fill_(float("inf"))
    assert_same_error(lambda: kutils.clip_grad_norm_(kp, 1.0, error_if_nonfinite=True),
                      lambda: torch.nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True))
    assert kutils.clip_grad_norm_([], 1.0).item() == 0.0


def test_get_total_norm_and_clip_grads_with_norm():
    kp, tp = grads_pair(scale=3.0)
    kn = kutils.get_total_norm([p.grad for p in kp])
    tn = torch.nn.utils.get_total_norm([p.grad for p in tp])
    np.testing.assert_allclose(kn.item(), tn.item(), rtol=1e-5)
    kutils.clip_grads_with_norm_(kp, 1.0, kn)
    torch.nn.utils.clip_grads_with_norm_(tp, 1.0, tn)
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_value():
    kp, tp = grads_pair()
    kutils.clip_grad_value_(kp, 0.4)
    torch.nn.utils.clip_grad_value_(tp, 0.4)
    for k, t in zip(kp, tp):
        np.testing.assert_array_equal(k.grad.numpy(), t.grad.numpy())


def test_parameters_to_vector_and_back():
    kp, tp = make_params()
    kv, tv = kutils.parameters_to_vector(kp), torch.nn.utils.parameters_to_vector(tp)
    np.testing.assert_array_equal(kv.detach().numpy(), tv.detach().numpy())
    new = np.arange(17, dtype=np.float32)
    kutils.vector_to_parameters(kiln.tensor(new), kp)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tp)
    for k, t in zip(kp, tp):
        np.testing.assert_array_equal(k.detach().numpy(), t.detach().numpy())
    assert_same_error(lambda: kutils.vector_to_parameters(new, kp),
                      lambda: torch.nn.utils.vector_to_parameters(new, tp))


@pytest.mark.parametrize("name", ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
                                  "vector_to_parameters", "get_total_norm", "clip_grads_with_norm_"])
def test_utils_signatures(name):
    ks, ts = inspect.signature(getattr(kutils, name)), inspect.signature(getattr(torch.nn.utils, name))
    assert [(p.name, p.default) for p in ks.parameters.values()] == [(p.name, p.default)
                                                                     for p in ts.parameters.values()]
