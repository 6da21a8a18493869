"""The optimizers kiln.optim adds beyond SGD/Adam/RMSprop/Adagrad (ASGD,
Adadelta, Adafactor, Adamax, LBFGS, Muon, NAdam, RAdam, Rprop, SparseAdam),
swa_utils and swap_in_optimizer_params_and_state, against torch.optim: the
parameters after every step of one gradient sequence (float64 to ~1 ulp,
float32 too), state_dict keys and values, load_state_dict continuing the
same trajectory, defaults, signatures and the error paths."""

import copy
import inspect
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.optim as ko
from kiln.nn import Parameter
from torch_compare import assert_same_error, values

SHAPES = [(3, 4), (5,), (2, 3, 2)]
TIGHT = dict(rtol=1e-12, atol=1e-14)  # float64: the same arithmetic, to rounding of a few ulps
LOOSE32 = dict(rtol=2e-5, atol=2e-6)


def initial(dtype, seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def pair_params(dtype=np.float64, seed=0, shapes=SHAPES):
    w0 = initial(dtype, seed, shapes)
    return [Parameter(kiln.tensor(w)) for w in w0], [torch.nn.Parameter(torch.tensor(w)) for w in w0]


def gradient(x: np.ndarray, k: int) -> np.ndarray:
    """A non-convex, step-dependent gradient field (the same numbers for both sides)."""
    return (2.0 * (x - 0.3) + 0.5 * np.sin(3.0 * x) + 0.1 * np.cos(k + x)).astype(x.dtype)


def set_grads(kp, tp, k, skip=()):
    for i, (a, b) in enumerate(zip(kp, tp)):
        if i in skip:
            a.grad = b.grad = None
            continue
        g = gradient(b.detach().numpy(), k)
        a.grad, b.grad = kiln.tensor(g), torch.tensor(g)


def assert_params(kp, tp, tol):
    for a, b in zip(kp, tp):
        np.testing.assert_allclose(values(a), values(b), **tol)


def drive(kopt, topt, kp, tp, steps, tol, start=0, skip_at=None):
    for k in range(start, start + steps):
        set_grads(kp, tp, k, skip=(1,) if skip_at == k else ())
        kopt.step()
        topt.step()
        assert_params(kp, tp, tol)


def state_value(v):
    if isinstance(v, (kiln.Tensor, torch.Tensor)):
        return values(v)
    return v


def assert_same_state(kopt, topt, tol=TIGHT):
    ks, ts = kopt.state_dict(), topt.state_dict()
    assert sorted(ks["state"]) == sorted(ts["state"])
    for pid, tstate in ts["state"].items():
        kstate = ks["state"][pid]
        assert list(kstate) == list(tstate)
        for key, tv in tstate.items():
            kv = kstate[key]
            assert isinstance(kv, kiln.Tensor) == isinstance(tv, torch.Tensor), key
            if isinstance(tv, torch.Tensor):
                assert str(kv.dtype).replace("kiln.", "") == str(tv.dtype).replace("torch.", ""), key
                assert tuple(kv.shape) == tuple(tv.shape), key
            np.testing.assert_allclose(state_value(kv), state_value(tv), **tol, err_msg=key)
    assert plain_groups(ks["param_groups"]) == plain_groups(ts["param_groups"])


def plain_groups(groups):
    """param_groups with tensor options (a tensor lr) as numbers, for ==."""
    return [{k: (v.item() if isinstance(v, (kiln.Tensor, torch.Tensor)) else v) for k, v in g.items()}
            for g in groups]


def to_kiln_state(sd):
    """A torch state_dict with its tensors as kiln tensors."""
    def conv(v):
        if isinstance(v, torch.Tensor):
            return kiln.tensor(v.detach().numpy().copy())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v
    return conv(sd)


CASES = {
    "ASGD": [dict(), dict(lr=0.05), dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1),
             dict(lr=0.02, t0=0, maximize=True), dict(lr=torch.tensor(0.05))],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-5), dict(lr=0.5, weight_decay=0.1, maximize=True),
                 dict(foreach=True)],
    "Adamax": [dict(), dict(lr=0.05, betas=(0.8, 0.95)), dict(lr=0.05, weight_decay=0.1, eps=1e-4),
               dict(lr=0.05, maximize=True)],
    "NAdam": [dict(), dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, weight_decay=0.1,
                                                                         decoupled_weight_decay=True),
              dict(lr=0.05, momentum_decay=0.01, betas=(0.8, 0.99), maximize=True)],
    "RAdam": [dict(), dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, weight_decay=0.1,
                                                                         decoupled_weight_decay=True),
              dict(lr=0.05, betas=(0.5, 0.6), maximize=True)],  # rho_inf < 5: never rectified (the default
    # betas rectify from step 6 on)
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5)), dict(lr=0.05, step_sizes=(1e-3, 0.08)),
              dict(lr=0.05, maximize=True)],
    "Adafactor": [dict(), dict(lr=0.05), dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5),
                  dict(lr=0.05, weight_decay=0.1, maximize=True), dict(lr=0.05, eps=(1e-3, 1e-3))],
}
# A tensor lr: torch keeps it a 0-dim float32 tensor in its scalar arithmetic; so does kiln.
for _name, _extra in [("Adadelta", {}), ("Adamax", {}), ("NAdam", dict(weight_decay=0.1)),
                      ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)), ("Rprop", {}),
                      ("Adafactor", dict(weight_decay=0.1)),
                      ("Adafactor", dict(weight_decay=0.1, lr=torch.tensor(2.0)))]:
    CASES[_name].append({"lr": torch.tensor(0.05), **_extra})
FLAT = [(name, kwargs) for name, cases in CASES.items() for kwargs in cases]


def kwargs_for(kwargs, lib):
    """Tensor options (a tensor lr) as each library's tensor."""
    return {k: (kiln.tensor(v.item()) if lib == "kiln" and isinstance(v, torch.Tensor) else v)
            for k, v in kwargs.items()}


def build_case(name, kwargs, dtype=np.float64, groups=False):
    kp, tp = pair_params(dtype)
    kcls, tcls = getattr(ko, name), getattr(torch.optim, name)
    kk, tk = kwargs_for(kwargs, "kiln"), kwargs_for(kwargs, "torch")
    if groups:
        extra = {"lr": 0.003} if name != "Adafactor" else {"lr": 0.02, "weight_decay": 0.1}
        kopt = kcls([{"params": kp[:2]}, {"params": kp[2:], **extra}], **kk)
        topt = tcls([{"params": tp[:2]}, {"params": tp[2:], **extra}], **tk)
    else:
        kopt, topt = kcls(kp, **kk), tcls(tp, **tk)
    return kopt, topt, kp, tp


@pytest.mark.parametrize("name, kwargs", FLAT, ids=[f"{n}-{i}" for n, cases in CASES.items()
                                                     for i in range(len(cases))])
def test_trajectory_float64(name, kwargs):
    kopt, topt, kp, tp = build_case(name, kwargs)
    drive(kopt, topt, kp, tp, steps=12, tol=TIGHT, skip_at=4)  # step 4: one parameter without a gradient
    assert_same_state(kopt, topt)


@pytest.mark.parametrize("name", list(CASES))
def test_trajectory_float32_and_groups(name):
    kwargs = CASES[name][1]
    kopt, topt, kp, tp = build_case(name, kwargs, dtype=np.float32, groups=True)
    drive(kopt, topt, kp, tp, steps=12, tol=LOOSE32)
    assert_same_state(kopt, topt, tol=LOOSE32)
    assert [g["lr"] for g in kopt.param_groups] == [g["lr"] for g in topt.param_groups]


@pytest.mark.parametrize("name", list(CASES))
def test_load_state_dict_continues(name):
    kwargs = CASES[name][2]
    kopt, topt, kp, tp = build_case(name, kwargs)
    drive(kopt, topt, kp, tp, steps=5, tol=TIGHT)
    # Fresh optimizers (built with the defaults) on copies of the parameters, loaded with the
    # state of the first ones: kiln's own state_dict, torch's converted to kiln tensors, and
    # torch's loaded into torch. (Deep copies: a loaded "step" tensor is shared, in both libraries.)
    copies = [[Parameter(kiln.tensor(values(p).copy())) for p in kp] for _ in range(2)]
    tcopy = [torch.nn.Parameter(torch.tensor(values(p).copy())) for p in tp]
    kopt2 = getattr(ko, name)(copies[0], **kwargs_for(CASES[name][0], "kiln"))
    kopt2.load_state_dict(copy.deepcopy(kopt.state_dict()))
    kopt3 = getattr(ko, name)(copies[1], **kwargs_for(CASES[name][0], "kiln"))
    kopt3.load_state_dict(to_kiln_state(topt.state_dict()))
    topt2 = getattr(torch.optim, name)(tcopy, **CASES[name][0])
    topt2.load_state_dict(copy.deepcopy(topt.state_dict()))
    assert kopt2.param_groups[0]["lr"] == kopt3.param_groups[0]["lr"] == topt2.param_groups[0]["lr"]
    assert_same_state(kopt2, topt2)
    assert_same_state(kopt3, topt2)
    for k in range(5, 10):
        set_grads(kp, tp, k)
        for params in (*copies, tcopy):
            for a, b in zip(params, tp):
                a.grad = kiln.tensor(b.grad.numpy()) if isinstance(a, kiln.Tensor) else b.grad.clone()
        for opt in (kopt, kopt2, kopt3, topt, topt2):
            opt.step()
        assert_params(kp, tp, TIGHT)
        for params in copies:
            assert_params(params, tcopy, TIGHT)
    assert_same_state(kopt2, topt2)
    assert_same_state(kopt, topt)


@pytest.mark.parametrize("name", ["ASGD", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop"])
def test_complex_parameters_follow_torch(name):
    # torch updates a complex parameter through its real view (parts as independent numbers).
    rng = np.random.default_rng(4)
    w0 = [rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)), rng.standard_normal(4) + 0j]
    kp = [Parameter(kiln.tensor(w)) for w in w0]
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in w0]
    kwargs = CASES[name][2]
    kopt, topt = getattr(ko, name)(kp, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    for k in range(8):
        for a, b in zip(kp, tp):
            x = b.detach().numpy()
            g = gradient(x.real, k) + 1j * gradient(x.imag, k + 1)
            a.grad, b.grad = kiln.tensor(g), torch.tensor(g)
        kopt.step()
        topt.step()
        assert_params(kp, tp, TIGHT)
    assert_same_state(kopt, topt)


def test_complex_parameters_rejected_like_torch():
    def step(lib, mod, name):
        p = lib.nn.Parameter(lib.tensor([[1 + 2j, 3 - 1j]]))
        opt = getattr(mod, name)([p])
        p.grad = lib.tensor([[1 + 1j, 1 - 1j]])
        opt.step()
    for name in ("Adafactor", "Muon", "SparseAdam"):
        assert_same_error(lambda: step(kiln, ko, name), lambda: step(torch, torch.optim, name))


def test_lbfgs_complex_parameters_follow_torch():
    w0 = np.array([-1.2 + 0.5j, 1.0 - 0.3j, -0.5 + 0.1j])
    w1 = np.array([0.8])
    kp, tp = [Parameter(kiln.tensor(w0)), Parameter(kiln.tensor(w1))], [torch.nn.Parameter(torch.tensor(w0)),
                                                                        torch.nn.Parameter(torch.tensor(w1))]

    def closure_for(lib, params, counter):
        def closure():
            counter[0] += 1
            flat = np.concatenate([values(lib.view_as_real(p.detach()) if p.is_complex() else p).reshape(-1)
                                   for p in params])
            f, g = quartic(flat)
            g0 = g[:6].reshape(3, 2)
            params[0].grad = lib.tensor(g0[:, 0] + 1j * g0[:, 1])
            params[1].grad = lib.tensor(g[6:])
            return lib.tensor(f)
        return closure
    kc, tc = [0], [0]
    kopt = ko.LBFGS(kp, line_search_fn="strong_wolfe")
    topt = torch.optim.LBFGS(tp, line_search_fn="strong_wolfe")
    for _ in range(3):
        kopt.step(closure_for(kiln, kp, kc))
        topt.step(closure_for(torch, tp, tc))
        assert kc == tc
        assert_params(kp, tp, TIGHT)


def test_state_is_created_lazily_and_zero_grad():
    for name in CASES:
        kp, tp = pair_params()
        kopt, topt = getattr(ko, name)(kp), getattr(torch.optim, name)(tp)
        assert len(kopt.state) == len(topt.state) == 0
        set_grads(kp, tp, 0)
        kopt.zero_grad()
        topt.zero_grad()
        assert all(p.grad is None for p in kp) and all(p.grad is None for p in tp)
        kopt.step()  # no gradient: nothing happens, no state
        topt.step()
        assert len(kopt.state) == len(topt.state) == 0
        assert_params(kp, tp, TIGHT)


NEW = ["ASGD", "Adadelta", "Adafactor", "Adamax", "LBFGS", "Muon", "NAdam", "RAdam", "Rprop", "SparseAdam"]


@pytest.mark.parametrize("name", NEW)
def test_signature_defaults_and_repr(name):
    def shape(obj):
        return [(p.name, p.default, p.kind) for p in inspect.signature(obj).parameters.values()]

    assert shape(getattr(ko, name)) == shape(getattr(torch.optim, name))
    matrix = initial(np.float32, shapes=[(3, 2)])[0]
    kopt = getattr(ko, name)([Parameter(kiln.tensor(matrix))])
    topt = getattr(torch.optim, name)([torch.nn.Parameter(torch.tensor(matrix))])
    assert kopt.defaults == topt.defaults
    assert repr(kopt) == repr(topt)


@pytest.mark.parametrize("name", ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
                                  "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"])
def test_swa_utils_signatures(name):
    def shape(obj):
        return [(p.name, p.default, p.kind) for p in inspect.signature(obj).parameters.values()]

    assert shape(getattr(ko.swa_utils, name)) == shape(getattr(torch.optim.swa_utils, name))
    assert name in ko.swa_utils.__all__


def test_swap_in_signature_and_all():
    assert set(torch.optim.__all__) <= set(ko.__all__)
    assert [p.name for p in inspect.signature(ko.swap_in_optimizer_params_and_state).parameters.values()] == \
        [p.name for p in inspect.signature(torch.optim.swap_in_optimizer_params_and_state).parameters.values()]


def one(lib):
    return lib.nn.Parameter(lib.ones(2, 2))


ERRORS = [
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-0.5)),
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
    ("Adadelta", dict(weight_decay=-1.0)),
    ("Adamax", dict(lr=-0.1)), ("Adamax", dict(eps=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1)),
    ("NAdam", dict(lr=-0.1)), ("NAdam", dict(betas=(0.9, 1.0))), ("NAdam", dict(momentum_decay=-1.0)),
    ("NAdam", dict(weight_decay=-2.0)), ("NAdam", dict(eps=-1e-3)),
    ("RAdam", dict(lr=-0.1)), ("RAdam", dict(betas=(-0.1, 0.9))), ("RAdam", dict(weight_decay=-1.0)),
    ("Rprop", dict(lr=-0.1)), ("Rprop", dict(etas=(1.5, 1.2))), ("Rprop", dict(etas=(0.5, 0.9))),
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1.0))), ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)), ("SparseAdam", dict(betas=(0.9, 1.0))),
    ("LBFGS", dict(lr=-1.0)), ("Muon", dict(lr=-1.0)), ("Muon", dict(momentum=-0.5)),
    ("Muon", dict(weight_decay=-0.1)), ("Muon", dict(adjust_lr_fn="bogus")),
]


@pytest.mark.parametrize("name, kwargs", ERRORS)
def test_constructor_errors_match_torch(name, kwargs):
    assert_same_error(lambda: getattr(ko, name)([one(kiln)], **kwargs),
                      lambda: getattr(torch.optim, name)([one(torch)], **kwargs))


def test_tensor_lr_must_have_one_element():
    for name in ["ASGD", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "Adafactor", "LBFGS", "SparseAdam"]:
        assert_same_error(lambda: getattr(ko, name)([one(kiln)], lr=kiln.tensor([0.1, 0.2])),
                          lambda: getattr(torch.optim, name)([one(torch)], lr=torch.tensor([0.1, 0.2])))


def stepped(lib, name, **kwargs):
    mod = ko if lib is kiln else torch.optim
    p = one(lib)
    opt = getattr(mod, name)([p], **kwargs)
    p.grad = lib.ones(2, 2)
    return opt.step


@pytest.mark.parametrize("name", ["ASGD", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop"])
def test_capturable_and_differentiable_on_cpu_raise_like_torch(name):
    # capturable=True wants accelerator tensors: AssertionError naming the supported devices.
    assert_same_error(lambda: stepped(kiln, name, capturable=True)(),
                      lambda: stepped(torch, name, capturable=True)())
    # differentiable=True steps with grad enabled: the in-place update of a leaf that requires grad raises.
    assert_same_error(lambda: stepped(kiln, name, differentiable=True)(),
                      lambda: stepped(torch, name, differentiable=True)())


def test_sparse_adam_dense_gradients_and_params():
    assert_same_error(lambda: stepped(kiln, "SparseAdam")(), lambda: stepped(torch, "SparseAdam")())
    # Without gradients a step does nothing (and returns the closure's loss).
    kopt = ko.SparseAdam([one(kiln)])
    topt = torch.optim.SparseAdam([one(torch)])
    assert kopt.step(lambda: 3.0) == topt.step(lambda: 3.0) == 3.0
    assert kopt.defaults == topt.defaults


def test_muon_errors():
    assert_same_error(lambda: ko.Muon([kiln.nn.Parameter(kiln.ones(3))]),
                      lambda: torch.optim.Muon([torch.nn.Parameter(torch.ones(3))]))
    for kwargs in (dict(ns_steps=100), dict(ns_coefficients=(1.0, 2.0))):
        assert_same_error(lambda: stepped(kiln, "Muon", **kwargs)(), lambda: stepped(torch, "Muon", **kwargs)())


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.02, momentum=0.9, nesterov=False, weight_decay=0.01),
                                    dict(lr=0.02, adjust_lr_fn="match_rms_adamw"),
                                    dict(lr=0.02, adjust_lr_fn="original", ns_steps=3, eps=1e-5)])
def test_muon_follows_torch_to_bfloat16_precision(kwargs):
    shapes = [(4, 3), (3, 5)]  # a tall matrix (transposed inside) and a wide one
    kp, tp = pair_params(np.float32, shapes=shapes)
    kopt, topt = ko.Muon(kp, **kwargs), torch.optim.Muon(tp, **kwargs)
    for k in range(6):
        set_grads(kp, tp, k)
        before = [values(p).copy() for p in tp]
        kopt.step()
        topt.step()
        for a, b, b0 in zip(kp, tp, before):
            # The update is an approximately orthogonal matrix computed in bfloat16 (entries ~0.5):
            # compare the step taken, to bfloat16 resolution, then move both to torch's values.
            lr = abs(b0 - values(b)).max()
            np.testing.assert_allclose(values(a) - b0, values(b) - b0, atol=0.05 * lr + 1e-7)
            a.detach().copy_(kiln.tensor(values(b)))
        for a, b in zip(kopt.state.values(), topt.state.values()):
            a["momentum_buffer"].copy_(kiln.tensor(values(b["momentum_buffer"])))
    assert list(kopt.state_dict()["state"][0]) == list(topt.state_dict()["state"][0]) == ["momentum_buffer"]
    assert kopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


# ----------------------------------------------------------------------------------------- LBFGS
QUARTIC_C = np.array([1.0, 2.5, 1.7, 3.0, 1.2, 2.2, 1.9])
QUARTIC_A = np.linspace(-1, 1, 7)


def quartic(x: np.ndarray):
    """A well-conditioned, non-quadratic objective: rounding differences are not amplified."""
    f = np.sum(QUARTIC_C * (x - QUARTIC_A) ** 2 + 0.25 * x ** 4 + 0.3 * np.sin(2 * x))
    return f, 2 * QUARTIC_C * (x - QUARTIC_A) + x ** 3 + 0.6 * np.cos(2 * x)


def rosenbrock(x: np.ndarray):
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


def lbfgs_closure(lib, params, counter, objective=quartic):
    """The objective over the concatenated parameters, gradient from numpy (the same numbers for both)."""
    def closure():
        counter[0] += 1
        flat = np.concatenate([values(p).reshape(-1) for p in params])
        f, g = objective(flat.astype(np.float64))
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = lib.tensor(g[offset:offset + n].reshape(tuple(p.shape)).astype(values(p).dtype))
            offset += n
        return lib.tensor(f)
    return closure


def lbfgs_pair(dtype, kwargs):
    w0 = [np.array([-1.2, 1.0, -0.5], dtype=dtype), np.array([[0.8, 1.3], [-0.2, 0.4]], dtype=dtype)]
    kp = [Parameter(kiln.tensor(w)) for w in w0]
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in w0]
    return kp, tp, ko.LBFGS(kp, **kwargs), torch.optim.LBFGS(tp, **kwargs)


def run_lbfgs(dtype, kwargs, steps, tol, objective=quartic):
    kp, tp, kopt, topt = lbfgs_pair(dtype, kwargs)
    kcount, tcount = [0], [0]
    kclosure = lbfgs_closure(kiln, kp, kcount, objective)
    tclosure = lbfgs_closure(torch, tp, tcount, objective)
    for _ in range(steps):
        kloss, tloss = kopt.step(kclosure), topt.step(tclosure)
        assert float(kloss) == pytest.approx(float(tloss), rel=tol["rtol"])
        assert kcount == tcount  # the same number of function evaluations
        assert_params(kp, tp, tol)
    ks, ts = kopt.state[kp[0]], topt.state[tp[0]]
    assert sorted(ks) == sorted(ts)
    assert ks["func_evals"] == ts["func_evals"] and ks["n_iter"] == ts["n_iter"]
    assert len(ks["old_dirs"]) == len(ts["old_dirs"])
    np.testing.assert_allclose(values(ks["d"]), values(ts["d"]), **tol)
    np.testing.assert_allclose(float(ks["t"]), float(ts["t"]), **tol)
    assert sorted(kopt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])


LBFGS_CASES = [dict(), dict(lr=0.5, max_iter=5, history_size=3), dict(line_search_fn="strong_wolfe"),
               dict(line_search_fn="strong_wolfe", history_size=4, max_iter=7, max_eval=9),
               dict(lr=0.1, tolerance_grad=1e-3, tolerance_change=1e-4)]


@pytest.mark.parametrize("kwargs", LBFGS_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lbfgs_follows_torch(kwargs, dtype):
    run_lbfgs(dtype, kwargs, 4, TIGHT if dtype == np.float64 else LOOSE32)


# Steps far too short (extrapolation with the bounded cubic) or too long (bracketing and zoom),
# and a line search cut short by max_eval. float64: float32 dot products round differently in
# kiln and torch, and the line search's branch decisions can then differ.
@pytest.mark.parametrize("kwargs", [dict(line_search_fn="strong_wolfe", lr=0.01),
                                    dict(line_search_fn="strong_wolfe", lr=30.0),
                                    dict(line_search_fn="strong_wolfe", lr=5.0, max_eval=6),
                                    dict(line_search_fn="strong_wolfe", lr=1e4, history_size=2)])
def test_lbfgs_strong_wolfe_phases_follow_torch(kwargs):
    run_lbfgs(np.float64, kwargs, 4, dict(rtol=1e-11, atol=1e-13))


def test_lbfgs_rosenbrock_follows_torch():
    # Not bit-exact: torch sums |g| (the first step size) in another order than kiln, an ulp apart,
    # which the ill-conditioned valley amplifies over the iterations.
    run_lbfgs(np.float64, dict(line_search_fn="strong_wolfe"), 1, dict(rtol=1e-6, atol=1e-8), rosenbrock)
    run_lbfgs(np.float64, dict(max_iter=8), 1, dict(rtol=1e-6, atol=1e-8), rosenbrock)


def test_lbfgs_with_autograd_closure_and_errors():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 1))
    w0, b0 = rng.standard_normal((1, 3)), rng.standard_normal((1,))
    results = []
    for lib, mod in ((kiln, ko), (torch, torch.optim)):
        lin = lib.nn.Linear(3, 1).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w0))
            lin.bias.copy_(lib.tensor(b0))
        opt = mod.LBFGS(lin.parameters(), line_search_fn="strong_wolfe")
        xs, ys = lib.tensor(x), lib.tensor(y)

        def closure():
            opt.zero_grad()
            loss = ((lin(xs) - ys) ** 2).mean()
            loss.backward()
            return loss
        for _ in range(3):
            opt.step(closure)
        results.append(values(lin.weight.detach()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9, atol=1e-12)
    # Errors: one group only; an unknown line search.
    assert_same_error(lambda: ko.LBFGS([{"params": [one(kiln)]}, {"params": [one(kiln)]}]),
                      lambda: torch.optim.LBFGS([{"params": [one(torch)]}, {"params": [one(torch)]}]))
    kp, tp = pair_params()
    kopt, topt = ko.LBFGS(kp, line_search_fn="wolfe"), torch.optim.LBFGS(tp, line_search_fn="wolfe")
    assert_same_error(lambda: kopt.step(lbfgs_closure(kiln, kp, [0])),
                      lambda: topt.step(lbfgs_closure(torch, tp, [0])))


def test_lbfgs_stops_at_a_stationary_point():
    kp, tp = [Parameter(kiln.ones(3, dtype=kiln.float64))], [torch.nn.Parameter(torch.ones(3, dtype=torch.float64))]
    kopt, topt = ko.LBFGS(kp), torch.optim.LBFGS(tp)
    kc, tc = [0], [0]
    kopt.step(lbfgs_closure(kiln, kp, kc, rosenbrock))  # at its minimum: g = 0
    topt.step(lbfgs_closure(torch, tp, tc, rosenbrock))
    assert kc == tc == [1]
    assert sorted(kopt.state[kp[0]]) == sorted(topt.state[tp[0]]) == ["func_evals", "n_iter"]


# ------------------------------------------------------------------------------------- swa_utils
def twin_models():
    rng = np.random.default_rng(5)
    weights = {"0.weight": rng.standard_normal((4, 3)), "0.bias": rng.standard_normal(4)}
    models = []
    for lib in (kiln, torch):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2)).double()
        sd = m.state_dict()
        with lib.no_grad():
            for k, v in sd.items():
                if k in weights:
                    v.copy_(lib.tensor(weights[k]))
                elif v.is_floating_point():
                    v.copy_(lib.tensor(np.linspace(-1, 1, v.numel()).reshape(tuple(v.shape))))
        models.append(m)
    return models


def perturb(models, k):
    for m, lib in zip(models, (kiln, torch)):
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.mul_(0.9).add_(0.1 * (k + 1) * (i + 1))
            bn = m[1]
            bn.running_mean.add_(0.5 * k)
            bn.num_batches_tracked.add_(1)


SWA_CASES = [dict(), dict(use_buffers=True), ("avg_fn", "get_ema_avg_fn", (0.8,), True),
             ("multi_avg_fn", "get_ema_multi_avg_fn", (0.7,), True),
             ("multi_avg_fn", "get_swa_multi_avg_fn", (), False), ("avg_fn", "get_swa_avg_fn", (), True)]


@pytest.mark.parametrize("case", SWA_CASES, ids=["swa", "buffers", "ema", "ema-multi", "swa-multi", "swa-fn"])
def test_averaged_model_follows_torch(case):
    models = twin_models()
    averaged = []
    for m, swa in zip(models, (ko.swa_utils, torch.optim.swa_utils)):
        if isinstance(case, tuple):
            key, fn, args, use_buffers = case
            kwargs = {key: getattr(swa, fn)(*args), "use_buffers": use_buffers}
        else:
            kwargs = case
        averaged.append(swa.AveragedModel(m, **kwargs))
    for k in range(5):
        for a, m in zip(averaged, models):
            a.update_parameters(m)
        perturb(models, k)
        ksd, tsd = averaged[0].state_dict(), averaged[1].state_dict()
        assert list(ksd) == list(tsd)
        for key in tsd:
            np.testing.assert_allclose(values(ksd[key]), values(tsd[key]), **TIGHT, err_msg=key)
    x = np.random.default_rng(1).standard_normal((5, 3))
    averaged[0].eval()
    averaged[1].eval()
    np.testing.assert_allclose(values(averaged[0](kiln.tensor(x))), values(averaged[1](torch.tensor(x)).detach()),
                               rtol=1e-10, atol=1e-12)


def test_averaged_model_and_avg_fn_errors():
    models = twin_models()

    def swa_multi_over_int_buffers(model, swa):
        # The SWA multi-tensor average divides the int64 num_batches_tracked with addcdiv: both raise.
        averaged = swa.AveragedModel(model, multi_avg_fn=swa.get_swa_multi_avg_fn(), use_buffers=True)
        averaged.update_parameters(model)
        averaged.update_parameters(model)
    assert_same_error(lambda: swa_multi_over_int_buffers(models[0], ko.swa_utils),
                      lambda: swa_multi_over_int_buffers(models[1], torch.optim.swa_utils))
    assert_same_error(lambda: ko.swa_utils.AveragedModel(models[0], avg_fn=ko.swa_utils.get_swa_avg_fn(),
                                                         multi_avg_fn=ko.swa_utils.get_swa_multi_avg_fn()),
                      lambda: torch.optim.swa_utils.AveragedModel(
                          models[1], avg_fn=torch.optim.swa_utils.get_swa_avg_fn(),
                          multi_avg_fn=torch.optim.swa_utils.get_swa_multi_avg_fn()))
    for fn in ("get_ema_avg_fn", "get_ema_multi_avg_fn"):
        assert_same_error(lambda: getattr(ko.swa_utils, fn)(1.5), lambda: getattr(torch.optim.swa_utils, fn)(1.5))
    ema = ko.swa_utils.get_ema_avg_fn(0.25)(kiln.tensor([4.0]), kiln.tensor([0.0]), 3)
    assert ema.tolist() == [1.0]


def test_update_bn_follows_torch():
    models = twin_models()
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((6, 3)) * (i + 1) for i in range(4)]
    for m, lib, swa in zip(models, (kiln, torch), (ko.swa_utils, torch.optim.swa_utils)):
        m.eval()
        loader = [(lib.tensor(b), lib.zeros(6)) for b in batches]  # (input, target) pairs
        swa.update_bn(loader, m)
        assert not m.training and m[1].momentum == 0.1
    kbn, tbn = models[0][1], models[1][1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(values(getattr(kbn, name)), values(getattr(tbn, name)), rtol=1e-12, atol=1e-12)
    ko.swa_utils.update_bn([], kiln.nn.Linear(2, 2))  # no BatchNorm: nothing to do


SWALR_CASES = [dict(swa_lr=0.05), dict(swa_lr=0.5, anneal_epochs=4, anneal_strategy="linear"),
               dict(swa_lr=[0.01, 0.2], anneal_epochs=0), dict(swa_lr=0.02, anneal_epochs=1)]


@pytest.mark.parametrize("kwargs", SWALR_CASES)
def test_swalr_follows_torch(kwargs):
    lrs = []
    for lib, mod in ((kiln, ko), (torch, torch.optim)):
        opt = mod.SGD([{"params": [one(lib)]}, {"params": [one(lib)], "lr": 0.3}], lr=1.0)
        sched = mod.swa_utils.SWALR(opt, **kwargs)
        seq = [sched.get_last_lr()]
        for _ in range(15):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        state = sched.state_dict()
        assert "anneal_func" not in state
        sched.load_state_dict(state)
        assert sched.anneal_func is not None
        seq.append(sched.get_last_lr())
        lrs.append(seq)
    np.testing.assert_allclose(np.array(lrs[0]), np.array(lrs[1]), rtol=1e-13, atol=1e-15)


def test_swalr_errors_match_torch():
    for kwargs in (dict(swa_lr=0.1, anneal_strategy="exp"), dict(swa_lr=0.1, anneal_epochs=-1),
                   dict(swa_lr=0.1, anneal_epochs=2.5), dict(swa_lr=[0.1, 0.2])):
        assert_same_error(lambda: ko.swa_utils.SWALR(ko.SGD([one(kiln)], lr=1.0), **kwargs),
                          lambda: torch.optim.swa_utils.SWALR(torch.optim.SGD([one(torch)], lr=1.0), **kwargs))


# -------------------------------------------------------------------- swap_in_optimizer_params_and_state
def test_swap_in_params_and_state_follows_torch():
    results = []
    for lib, mod in ((kiln, ko), (torch, torch.optim)):
        live = [lib.nn.Parameter(lib.tensor(w)) for w in initial(np.float64)]
        opt = mod.Adam(live, lr=0.1)
        for p in live:
            p.grad = lib.ones(*p.shape, dtype=lib.float64)
        opt.step()
        saved = opt.state_dict()
        saved["param_groups"][0]["lr"] = 0.5
        other = {f"p{i}": lib.tensor(w * 2) for i, w in enumerate(initial(np.float64, seed=9))}
        for p in other.values():
            p.grad = lib.full(tuple(p.shape), 0.5, dtype=lib.float64)
        live_state = opt.state
        with mod.swap_in_optimizer_params_and_state(opt, other, saved):
            assert opt.param_groups[0]["params"][0] is other["p0"]
            assert opt.param_groups[0]["lr"] == 0.5
            opt.step()
        assert opt.state is live_state and opt.param_groups[0]["params"][0] is live[0]
        assert opt.param_groups[0]["lr"] == 0.1
        results.append(([values(p) for p in other.values()], values(saved["state"][0]["exp_avg"]),
                        values(live[0]), float(saved["state"][0]["step"])))
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, **TIGHT)
    np.testing.assert_allclose(results[0][1], results[1][1], **TIGHT)  # in-place state edits reached saved
    np.testing.assert_allclose(results[0][2], results[1][2], **TIGHT)
    assert results[0][3] == results[1][3] == 2.0


def test_swap_in_errors_match_torch():
    def setup(lib, mod, stepped_=True):
        p = one(lib)
        opt = mod.SGD([p], lr=0.1, momentum=0.9)
        if stepped_:
            p.grad = lib.ones(2, 2)
            opt.step()
        return opt, {"w": one(lib)}

    def attempt(lib, mod, mutate, stepped_=True):
        def run():
            opt, params = setup(lib, mod, stepped_)
            sd = opt.state_dict()
            sd = mutate(sd)
            with mod.swap_in_optimizer_params_and_state(opt, params, sd):
                pass
        return run

    mutations = [lambda sd: sd, lambda sd: [], lambda sd: {**sd, "state": []},
                 lambda sd: {**sd, "param_groups": sd["param_groups"] * 2},
                 lambda sd: {**sd, "state": {0: 1}},
                 lambda sd: {**sd, "state": {**sd["state"], 7: {}}},
                 lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "extra": 1}]},
                 lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "params": [0, 1]}]},
                 lambda sd: {**sd, "param_groups": [{**sd["param_groups"][0], "params": ["a"]}]}]
    assert_same_error(attempt(kiln, ko, mutations[0], stepped_=False), attempt(torch, torch.optim, mutations[0],
                                                                                 stepped_=False))
    for mutate in mutations[1:]:
        assert_same_error(attempt(kiln, ko, mutate), attempt(torch, torch.optim, mutate))


def test_no_torch_import_in_kiln_optim():
    import pathlib
    root = pathlib.Path(ko.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import torch" not in text and "from torch" not in text, path.name


def test_warnings_clean_for_plain_steps():
    kp, tp = pair_params()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in CASES:
            opt = getattr(ko, name)(kp)
            set_grads(kp, tp, 0)
            opt.step()
