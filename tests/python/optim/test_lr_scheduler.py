"""kiln.optim.lr_scheduler against torch.optim.lr_scheduler (torch 2.13): the
lr (and cycled momentum / beta1) sequence over many steps for every
scheduler, the closed form of step(epoch), resuming with last_epoch,
state_dict keys and a load_state_dict that continues the same sequence,
chaining, the warnings and the error paths."""

import inspect
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.optim as ko
from torch_compare import assert_same_error, raised as _raised

LIBS = ((kiln, ko), (torch, torch.optim))


def param(lib):
    return lib.nn.Parameter(lib.ones(2))


def make_opt(lib, mod, optimizer="SGD", groups=1, lr=1.0):
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    if groups == 1:
        return getattr(mod, optimizer)([param(lib)], lr=lr, **extra)
    return getattr(mod, optimizer)([{"params": [param(lib)]}, {"params": [param(lib)], "lr": lr * 0.3}], lr=lr,
                                   **extra)


class Square:
    """A callable object (its __dict__ is saved by LambdaLR.state_dict)."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, epoch):
        return self.scale / (1 + epoch) ** 2


SCHEDULERS = [
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e)),
    ("LambdaLR", dict(lr_lambda=[lambda e: 1.0 / (e + 1), lambda e: 0.5 + 0.01 * e])),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("MultiplicativeLR", dict(lr_lambda=[lambda e: 0.9, lambda e: 1.0 - 0.01 * e])),
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 7, 7, 20], gamma=0.3)),
    ("ConstantLR", dict()), ("ConstantLR", dict(factor=0.25, total_iters=7)),
    ("LinearLR", dict()), ("LinearLR", dict(start_factor=0.1, end_factor=0.6, total_iters=9)),
    ("ExponentialLR", dict(gamma=0.93)),
    ("PolynomialLR", dict()), ("PolynomialLR", dict(total_iters=12, power=2.0)),
    ("PolynomialLR", dict(total_iters=30, power=0.5)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.01)), ("CosineAnnealingLR", dict(T_max=3)),
    ("CosineAnnealingWarmRestarts", dict(T_0=5)), ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2,
                                                                                       eta_min=0.05)),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, step_size_up=4)),
    ("CyclicLR", dict(base_lr=[0.1, 0.05], max_lr=[1.0, 0.5], step_size_up=3, step_size_down=5,
                      mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, step_size_up=4, mode="exp_range", gamma=0.97)),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, step_size_up=4, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations",
                      cycle_momentum=False)),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, step_size_up=2, base_momentum=0.7, max_momentum=0.95)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=60)),
    ("OneCycleLR", dict(max_lr=[0.1, 0.3], epochs=6, steps_per_epoch=10, pct_start=0.4, anneal_strategy="linear",
                        three_phase=True, div_factor=10.0, final_div_factor=100.0)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=60, cycle_momentum=False)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(SCHEDULERS)]


def sequence(lib, mod, name, kwargs, optimizer, steps=50):
    groups = 2 if any(isinstance(v, list) for v in kwargs.values()) else 1
    opt = make_opt(lib, mod, optimizer, groups)
    sched = getattr(mod.lr_scheduler, name)(opt, **kwargs)
    out = []
    for _ in range(steps):
        g = opt.param_groups
        out.append([*sched.get_last_lr(), *[x["lr"] for x in g],
                    *[x["betas"][0] if "betas" in x else x["momentum"] for x in g]])
        opt.step()
        sched.step()
    return np.array(out), opt, sched


@pytest.mark.parametrize("name, kwargs", SCHEDULERS, ids=IDS)
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_sequence_follows_torch(name, kwargs, optimizer):
    ks, _, ksched = sequence(kiln, ko, name, kwargs, optimizer, steps=60)
    ts, _, tsched = sequence(torch, torch.optim, name, kwargs, optimizer, steps=60)
    np.testing.assert_allclose(ks, ts, rtol=1e-13, atol=1e-16)
    assert sorted(ksched.state_dict()) == sorted(tsched.state_dict())
    assert ksched.last_epoch == tsched.last_epoch and ksched._step_count == tsched._step_count


@pytest.mark.parametrize("name, kwargs", SCHEDULERS, ids=IDS)
def test_state_dict_round_trip_continues(name, kwargs):
    runs = []
    for lib, mod in LIBS:
        groups = 2 if any(isinstance(v, list) for v in kwargs.values()) else 1
        opt = make_opt(lib, mod, "SGD", groups)
        sched = getattr(mod.lr_scheduler, name)(opt, **kwargs)
        for _ in range(13):
            opt.step()
            sched.step()
        sd, osd = sched.state_dict(), opt.state_dict()
        opt2 = make_opt(lib, mod, "SGD", groups)
        sched2 = getattr(mod.lr_scheduler, name)(opt2, **kwargs)
        opt2.load_state_dict(osd)
        sched2.load_state_dict(sd)
        seq = []
        for _ in range(20):
            opt2.step()
            sched2.step()
            seq.append(sched2.get_last_lr())
        runs.append(np.array(seq))
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-13, atol=1e-16)


def test_lambda_state_dict_saves_callable_objects():
    states = []
    for lib, mod in LIBS:
        opt = make_opt(lib, mod)
        sched = mod.lr_scheduler.LambdaLR(opt, Square(2.0))
        sd = sched.state_dict()
        states.append(sd["lr_lambdas"])
        fresh = mod.lr_scheduler.LambdaLR(make_opt(lib, mod), Square(5.0))
        fresh.load_state_dict(sd)
        assert fresh.lr_lambdas[0].scale == 2.0
        assert "lr_lambdas" in sd  # load_state_dict leaves the dict whole
    assert states[0] == states[1] == [{"scale": 2.0}]


CLOSED_FORM = [("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.3)),
               ("ConstantLR", dict(factor=0.5, total_iters=4)), ("LinearLR", dict(start_factor=0.2, total_iters=6)),
               ("ExponentialLR", dict(gamma=0.9)), ("PolynomialLR", dict(total_iters=8, power=1.5)),
               ("CosineAnnealingLR", dict(T_max=6, eta_min=0.1)), ("LambdaLR", dict(lr_lambda=lambda e: 0.5 ** e)),
               ("CosineAnnealingWarmRestarts", dict(T_0=4, T_mult=2)),
               ("CosineAnnealingWarmRestarts", dict(T_0=4))]


@pytest.mark.parametrize("name, kwargs", CLOSED_FORM)
def test_step_with_epoch_uses_the_closed_form(name, kwargs):
    epochs = [3, 1, 7, 7, 0, 12, 5, 2.5] if name == "CosineAnnealingWarmRestarts" else [3, 1, 7, 7, 0, 12, 5]
    runs = []
    for lib, mod in LIBS:
        opt = make_opt(lib, mod)
        sched = getattr(mod.lr_scheduler, name)(opt, **kwargs)
        seq = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for e in epochs:
                opt.step()
                sched.step(e)
                seq.append(sched.get_last_lr()[0])
        deprecations = [w for w in caught if "epoch parameter" in str(w.message)]
        seq.append(len(deprecations))
        runs.append(seq)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("name, kwargs", [("StepLR", dict(step_size=3)), ("ExponentialLR", dict(gamma=0.9)),
                                          ("CosineAnnealingLR", dict(T_max=10)), ("LinearLR", dict()),
                                          ("PolynomialLR", dict(total_iters=10)),
                                          ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9))])
def test_resume_with_last_epoch(name, kwargs):
    runs = []
    for lib, mod in LIBS:
        opt = make_opt(lib, mod)
        opt.param_groups[0]["initial_lr"] = 1.0
        opt.param_groups[0]["lr"] = 0.5
        sched = getattr(mod.lr_scheduler, name)(opt, last_epoch=4, **kwargs)
        seq = [sched.get_last_lr()[0]]
        for _ in range(10):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr()[0])
        runs.append(seq)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-13)
    assert_same_error(lambda: getattr(ko.lr_scheduler, name)(make_opt(kiln, ko), last_epoch=3, **kwargs),
                      lambda: getattr(torch.optim.lr_scheduler, name)(make_opt(torch, torch.optim), last_epoch=3,
                                                                      **kwargs))


REDUCE = [dict(), dict(mode="max", factor=0.5, patience=2, threshold=0.05, threshold_mode="abs", cooldown=2,
                       min_lr=0.05),
          dict(patience=1, min_lr=[0.2, 0.01], eps=0.02), dict(mode="max", threshold_mode="rel", patience=0)]


@pytest.mark.parametrize("kwargs", REDUCE)
def test_reduce_lr_on_plateau_follows_torch(kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.9, 0.91, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] * 3
    runs = []
    for lib, mod in LIBS:
        opt = make_opt(lib, mod, groups=2)
        sched = mod.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seq = [sched.get_last_lr()]
        for i, m in enumerate(metrics):
            opt.step()
            sched.step(lib.tensor(m) if i % 2 else m)
            seq.append(sched.get_last_lr() + [sched.num_bad_epochs, sched.cooldown_counter, sched.best])
            if i == 20:
                sd = sched.state_dict()
                sched = mod.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
                sched.load_state_dict(sd)
        runs.append(np.array(seq[1:], dtype=float))
        assert sorted(sched.state_dict()) == sorted(
            torch.optim.lr_scheduler.ReduceLROnPlateau(make_opt(torch, torch.optim)).state_dict())
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-13)


def test_reduce_lr_on_plateau_errors():
    for kwargs in (dict(factor=1.0), dict(mode="avg"), dict(threshold_mode="pct"), dict(min_lr=[0.1, 0.2, 0.3])):
        assert_same_error(lambda: ko.lr_scheduler.ReduceLROnPlateau(make_opt(kiln, ko, groups=2), **kwargs),
                          lambda: torch.optim.lr_scheduler.ReduceLROnPlateau(make_opt(torch, torch.optim, groups=2),
                                                                             **kwargs))
    assert_same_error(lambda: ko.lr_scheduler.ReduceLROnPlateau("opt"),
                      lambda: torch.optim.lr_scheduler.ReduceLROnPlateau("opt"))

    def grown(lib, mod):
        opt = make_opt(lib, mod)
        sched = mod.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0])
        opt.add_param_group({"params": [param(lib)]})
        sched.step(1.0)
        sched.step(2.0)
    assert_same_error(lambda: grown(kiln, ko), lambda: grown(torch, torch.optim))


def composite(lib, mod, kind):
    opt = make_opt(lib, mod, groups=2)
    ls = mod.lr_scheduler
    if kind == "chained":
        sched = ls.ChainedScheduler([ls.ConstantLR(opt, factor=0.1, total_iters=2),
                                     ls.ExponentialLR(opt, gamma=0.9)])
    elif kind == "chained-optimizer":
        sched = ls.ChainedScheduler([ls.StepLR(opt, 3, 0.5), ls.MultiplicativeLR(opt, lambda e: 0.97)], opt)
    elif kind == "sequential":
        sched = ls.SequentialLR(opt, [ls.LinearLR(opt, start_factor=0.1, total_iters=3),
                                      ls.ExponentialLR(opt, gamma=0.9)], milestones=[3])
    elif kind == "sequential3":
        sched = ls.SequentialLR(opt, [ls.ConstantLR(opt, factor=0.5, total_iters=10),
                                      ls.CosineAnnealingLR(opt, T_max=5),
                                      ls.StepLR(opt, step_size=2, gamma=0.5)], milestones=[2, 9])
    else:  # a ChainedScheduler inside a SequentialLR
        inner = ls.ChainedScheduler([ls.ConstantLR(opt, factor=0.5, total_iters=3), ls.ExponentialLR(opt, 0.95)])
        sched = ls.SequentialLR(opt, [inner, ls.PolynomialLR(opt, total_iters=6)], milestones=[5])
    return opt, sched


@pytest.mark.parametrize("kind", ["chained", "chained-optimizer", "sequential", "sequential3", "nested"])
def test_composite_schedulers_follow_torch(kind):
    runs, keys = [], []
    for lib, mod in LIBS:
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a nested ChainedScheduler's first step warns, in torch too
            opt, sched = composite(lib, mod, kind)
            for i in range(25):
                seq.append(list(sched.get_last_lr()) + [g["lr"] for g in opt.param_groups])
                opt.step()
                sched.step()
                if i == 12:
                    sd = sched.state_dict()
                    keys.append(sorted(sd))
                    sched.load_state_dict(sd)
        runs.append(np.array(seq))
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-13, atol=1e-16)
    assert keys[0] == keys[1]


def test_composite_errors_match_torch():
    def cases(lib, mod):
        ls = mod.lr_scheduler
        opt, other = make_opt(lib, mod), make_opt(lib, mod)
        return [
            lambda: ls.SequentialLR(opt, [], milestones=[]),
            lambda: ls.SequentialLR(opt, [ls.StepLR(opt, 2)], milestones=[1]),
            lambda: ls.SequentialLR(opt, [ls.StepLR(opt, 2), ls.StepLR(opt, 3)], milestones=[]),
            lambda: ls.SequentialLR(opt, [ls.ReduceLROnPlateau(opt)], milestones=[]),
            lambda: ls.SequentialLR(opt, [object()], milestones=[]),
            lambda: ls.ChainedScheduler([]),
            lambda: ls.ChainedScheduler([ls.ReduceLROnPlateau(opt)]),
            lambda: ls.ChainedScheduler([ls.StepLR(opt, 2), ls.StepLR(other, 2)]),
        ]
    for kfn, tfn in zip(cases(kiln, ko), cases(torch, torch.optim)):
        assert_same_error(kfn, tfn, message=False)
        tmsg = str(_raised(tfn))
        kmsg = str(_raised(kfn))
        if "which is different from" in tmsg:  # the message names the optimizer's repr
            tmsg, kmsg = tmsg.split(" has ")[0], kmsg.split(" has ")[0]
        assert kmsg == tmsg


CTOR_ERRORS = [
    ("ConstantLR", dict(factor=1.5)), ("LinearLR", dict(start_factor=0.0)), ("LinearLR", dict(end_factor=1.5)),
    ("MultiplicativeLR", dict(lr_lambda=3)), ("LambdaLR", dict(lr_lambda=[lambda e: 1.0] * 3)),
    ("CosineAnnealingWarmRestarts", dict(T_0=0)), ("CosineAnnealingWarmRestarts", dict(T_0=2.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=0)), ("CosineAnnealingWarmRestarts", dict(T_0=2, eta_min="x")),
    ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, mode="sawtooth")),
    ("CyclicLR", dict(base_lr=[0.1, 0.2], max_lr=1.0)),
    ("OneCycleLR", dict(max_lr=0.1)), ("OneCycleLR", dict(max_lr=0.1, total_steps=0)),
    ("OneCycleLR", dict(max_lr=0.1, epochs=0, steps_per_epoch=3)),
    ("OneCycleLR", dict(max_lr=0.1, epochs=2, steps_per_epoch=-1)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, pct_start=1.5)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=10, anneal_strategy="exp")),
    ("OneCycleLR", dict(max_lr=[0.1, 0.2], total_steps=10)),
]


@pytest.mark.parametrize("name, kwargs", CTOR_ERRORS)
def test_constructor_errors_match_torch(name, kwargs):
    assert_same_error(lambda: getattr(ko.lr_scheduler, name)(make_opt(kiln, ko), **kwargs),
                      lambda: getattr(torch.optim.lr_scheduler, name)(make_opt(torch, torch.optim), **kwargs))


def test_non_optimizer_and_momentum_errors():
    for name, kwargs in (("StepLR", dict(step_size=2)), ("CyclicLR", dict(base_lr=0.1, max_lr=1.0)),
                         ("OneCycleLR", dict(max_lr=0.1, total_steps=5))):
        assert_same_error(lambda: getattr(ko.lr_scheduler, name)("opt", **kwargs),
                          lambda: getattr(torch.optim.lr_scheduler, name)("opt", **kwargs))
    for name, kwargs in (("CyclicLR", dict(base_lr=0.1, max_lr=1.0)), ("OneCycleLR", dict(max_lr=0.1, total_steps=5))):
        assert_same_error(lambda: getattr(ko.lr_scheduler, name)(ko.Adagrad([param(kiln)]), **kwargs),
                          lambda: getattr(torch.optim.lr_scheduler, name)(torch.optim.Adagrad([param(torch)]),
                                                                           **kwargs))

    def overstep(lib, mod):
        opt = make_opt(lib, mod)
        sched = mod.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
        for _ in range(4):
            opt.step()
            sched.step()
    assert_same_error(lambda: overstep(kiln, ko), lambda: overstep(torch, torch.optim))
    assert_same_error(lambda: ko.lr_scheduler.CosineAnnealingWarmRestarts(make_opt(kiln, ko), 3).step(-1),
                      lambda: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(make_opt(torch, torch.optim),
                                                                                    3).step(-1))


def record(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


def test_warnings_match_torch():
    def order(lib, mod):  # scheduler stepped before the optimizer
        sched = mod.lr_scheduler.StepLR(make_opt(lib, mod), 2)
        sched.step()

    def get_lr_outside_step(lib, mod):
        sched = mod.lr_scheduler.ExponentialLR(make_opt(lib, mod), 0.5)
        sched.get_lr()

    def overridden(lib, mod):
        opt = make_opt(lib, mod)
        sched = mod.lr_scheduler.StepLR(opt, 2)
        opt.step = lambda: None
        sched.step()

    def fine(lib, mod):
        opt = make_opt(lib, mod)
        sched = mod.lr_scheduler.CosineAnnealingLR(opt, 5)
        for _ in range(3):
            opt.step()
            sched.step()
        sched.get_last_lr()

    for fn in (order, get_lr_outside_step, overridden, fine):
        kmsgs, tmsgs = record(lambda: fn(kiln, ko)), record(lambda: fn(torch, torch.optim))
        assert kmsgs == tmsgs
    assert record(lambda: fine(kiln, ko)) == []


def test_tensor_lr_is_updated_in_place():
    runs = []
    for lib, mod in LIBS:
        opt = mod.SGD([param(lib)], lr=lib.tensor(0.5))
        lr_tensor = opt.param_groups[0]["lr"]
        sched = mod.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        for _ in range(3):
            opt.step()
            sched.step()
        assert opt.param_groups[0]["lr"] is lr_tensor
        assert sched.get_last_lr()[0] is not lr_tensor  # a copy
        runs.append(float(lr_tensor))
    assert runs[0] == runs[1] == 0.0625


@pytest.mark.parametrize("name", ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                  "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
                                  "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
                                  "PolynomialLR", "LRScheduler"])
def test_signatures_match_torch(name):
    def shape(obj):
        return [(p.name, p.default, p.kind) for p in inspect.signature(obj).parameters.values()]

    assert shape(getattr(ko.lr_scheduler, name)) == shape(getattr(torch.optim.lr_scheduler, name))
    assert name in ko.lr_scheduler.__all__
