"""kiln.optim against torch.optim: trajectories, param groups, state_dict,
signatures, errors, and the lr schedulers."""

import inspect
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.optim as ko
from kiln.nn.parameter import Parameter

RNG = np.random.default_rng(0)


def run(kopt_cls, topt_cls, kwargs, steps=50, groups=False, dtype=np.float32):
    w0 = [RNG.standard_normal((3, 4)).astype(dtype), RNG.standard_normal((5,)).astype(dtype)]
    kp = [Parameter(kiln.tensor(w)) for w in w0]
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in w0]
    if groups:
        kopt = kopt_cls([{"params": [kp[0]]}, {"params": [kp[1]], "lr": 0.003}], **kwargs)
        topt = topt_cls([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.003}], **kwargs)
    else:
        kopt, topt = kopt_cls(kp, **kwargs), topt_cls(tp, **kwargs)
    for _ in range(steps):
        for k, t in zip(kp, tp):
            g = RNG.standard_normal(tuple(t.shape)).astype(dtype)
            k.grad, t.grad = kiln.tensor(g), torch.tensor(g)
        kopt.step()
        topt.step()
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    return kopt, topt, kp, tp


@pytest.mark.parametrize("kwargs", [
    dict(lr=0.01), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True), dict(lr=0.01, maximize=True),
    dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05, amsgrad=True),
])
def test_adam_follows_torch(kwargs):
    run(ko.Adam, torch.optim.Adam, kwargs)
    run(ko.Adam, torch.optim.Adam, kwargs, dtype=np.float64)


@pytest.mark.parametrize("kwargs", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.3, amsgrad=True)])
def test_adamw_follows_torch(kwargs):
    run(ko.AdamW, torch.optim.AdamW, kwargs)


@pytest.mark.parametrize("kwargs", [
    dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.5),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), dict(lr=0.05, maximize=True, weight_decay=0.1),
])
def test_sgd_follows_torch(kwargs):
    run(ko.SGD, torch.optim.SGD, kwargs)


def test_param_groups_and_state_dict_round_trip():
    kopt, topt, kp, _ = run(ko.Adam, torch.optim.Adam, dict(lr=0.01), steps=5, groups=True)
    assert [g["lr"] for g in kopt.param_groups] == [g["lr"] for g in topt.param_groups]
    sd = kopt.state_dict()
    assert sd["param_groups"][1]["params"] == [1]
    assert sorted(sd["state"][0]) == sorted(topt.state_dict()["state"][0])
    fresh = ko.Adam([{"params": [kp[0]]}, {"params": [kp[1]]}], lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[1]["lr"] == 0.003
    assert fresh.state[kp[0]]["exp_avg"].tolist() == kopt.state[kp[0]]["exp_avg"].tolist()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        ko.Adam([kp[0]]).load_state_dict(sd)


def test_zero_grad_and_errors_match_torch():
    p = Parameter(kiln.ones(2))
    p.grad = kiln.ones(2)
    opt = ko.SGD([p], lr=0.1)
    opt.zero_grad()
    assert p.grad is None
    for lib, mod in ((kiln, ko), (torch, torch.optim)):
        with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
            mod.SGD([], lr=0.1)
        with pytest.raises(ValueError, match="Invalid learning rate: -1"):
            mod.Adam([lib.ones(1, requires_grad=True)], lr=-1)
        x = lib.ones(1, requires_grad=True)
        with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
            mod.SGD([{"params": [x]}, {"params": [x]}], lr=0.1)
        with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
            mod.SGD([x.add(1)], lr=0.1)
        with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
            mod.SGD([x], lr=0.1, nesterov=True)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_signatures_match_torch(name):
    def shape(sig):
        return [(p.name, p.default, p.kind) for p in sig.parameters.values()]

    assert shape(inspect.signature(getattr(ko, name))) == shape(inspect.signature(getattr(torch.optim, name)))


def test_repr_matches_torch():
    assert repr(ko.AdamW([Parameter(kiln.ones(1))])) == repr(torch.optim.AdamW([torch.nn.Parameter(torch.ones(1))]))


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)), ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (e + 1))),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01)), ("LinearLR", dict(start_factor=0.2, total_iters=6)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=25)), ("OneCycleLR", dict(max_lr=0.1, total_steps=25, three_phase=True,
                                                                          anneal_strategy="linear")),
]


@pytest.mark.parametrize("name, kwargs", SCHEDULERS)
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_schedulers_follow_torch(name, kwargs, optimizer):
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    kopt = getattr(ko, optimizer)([Parameter(kiln.ones(1))], lr=1.0, **extra)
    topt = getattr(torch.optim, optimizer)([torch.nn.Parameter(torch.ones(1))], lr=1.0, **extra)
    ks = getattr(ko.lr_scheduler, name)(kopt, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    for _ in range(24):
        assert ks.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
        if optimizer == "Adam":
            assert kopt.param_groups[0]["betas"] == pytest.approx(topt.param_groups[0]["betas"])
        kopt.step()
        topt.step()
        ks.step()
        ts.step()


def test_sequential_lr_follows_torch():
    def build(mod, p):
        opt = mod.SGD([p], lr=1.0)
        sched = mod.lr_scheduler.SequentialLR(
            opt, [mod.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
                  mod.lr_scheduler.ExponentialLR(opt, gamma=0.9)], milestones=[3])
        return opt, sched

    kopt, ks = build(ko, Parameter(kiln.ones(1)))
    topt, ts = build(torch.optim, torch.nn.Parameter(torch.ones(1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(10):
            assert ks.get_last_lr() == pytest.approx(ts.get_last_lr())
            kopt.step()
            topt.step()
            ks.step()
            ts.step()
