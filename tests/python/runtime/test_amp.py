"""kiln.amp / kiln.autocast against torch.amp: the autocast state each region sets
and restores (nesting, decorators, enabled=False regions, cache flag), the
argument errors and warnings, custom_fwd/custom_bwd, the deprecated
kiln.cuda.amp spellings, and GradScaler step for step against torch's with
injected inf/NaN gradients (scale evolution, skipped steps, parameters, the
state dict and every error path)."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.amp
from torch_compare import as_kiln_text, assert_same_error


def state(T, device="cpu"):
    return (T.is_autocast_enabled(device), str(T.get_autocast_dtype(device)).split(".")[-1],
            T.is_autocast_cache_enabled())


@pytest.fixture(autouse=True)
def restore_autocast_state():
    """Every test starts and ends with autocast off (a failing test must not leak its state)."""
    before = (state(kiln), state(kiln, "cuda"))
    yield
    after = (state(kiln), state(kiln, "cuda"))
    kiln.set_autocast_enabled("cpu", False)
    kiln.set_autocast_enabled("cuda", False)
    kiln.set_autocast_dtype("cpu", kiln.bfloat16)
    kiln.set_autocast_dtype("cuda", kiln.float16)
    kiln.set_autocast_cache_enabled(True)
    assert before == after


def record_regions(T):
    seen = []
    with T.autocast("cpu"):
        seen.append(state(T))
        with T.autocast("cpu", dtype=T.float16, cache_enabled=False):
            seen.append(state(T))
            with T.amp.autocast("cpu", enabled=False):
                seen.append(state(T))
            seen.append(state(T))
        seen.append(state(T))
    seen.append(state(T))
    return seen


def test_nested_regions_match_torch():
    assert record_regions(kiln) == record_regions(torch)
    assert record_regions(kiln)[0] == (True, "bfloat16", True)


def test_autocast_is_amp_autocast_and_returns_itself():
    assert kiln.autocast is kiln.amp.autocast
    region = kiln.autocast("cpu")
    with region as entered:
        assert entered is region
        assert (region.device, region.fast_dtype, region._enabled, region._cache_enabled) == (
            "cpu", kiln.bfloat16, True, True)


def test_state_restored_after_an_exception():
    for T in (kiln, torch):
        with pytest.raises(KeyError, match="inside"):
            with T.autocast("cpu", dtype=T.float16):
                raise KeyError("inside")
        assert state(T) == (False, "bfloat16", True)


def test_decorator_matches_torch():
    def build(T):
        @T.autocast("cpu", dtype=T.float16)
        def inside(x):
            """docstring kept"""
            return state(T), x * 2

        return inside

    k, t = build(kiln), build(torch)
    assert k.__name__ == "inside" and k.__doc__ == "docstring kept"
    assert k(3) == t(3) == ((True, "float16", True), 6)
    assert state(kiln) == state(torch)


def test_ops_run_in_their_input_dtypes():
    """kiln does not autocast: a float32 matmul inside a CPU autocast region stays float32."""
    x = kiln.ones(2, 2)
    with kiln.autocast("cpu"):
        assert (x @ x).dtype is kiln.float32
        assert kiln.nn.functional.linear(x, x).dtype is kiln.float32
        assert kiln.is_autocast_enabled("cpu")


@pytest.mark.parametrize("kwargs", [dict(device_type="cpu", dtype="float32"), dict(device_type="cpu", dtype="float64"),
                                    dict(device_type="cuda"), dict(device_type="cuda", dtype="bfloat16"),
                                    dict(device_type="cpu", dtype="float16", enabled=False)])
def test_disabling_warnings_match_torch(kwargs):
    def build(T):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(T, kw["dtype"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            region = T.autocast(**kw)
        return region._enabled, [(w.category, str(w.message)) for w in caught], caught

    k_enabled, k_warnings, k_caught = build(kiln)
    t_enabled, t_warnings, _ = build(torch)
    assert k_enabled == t_enabled
    assert [c for c, _ in k_warnings] == [c for c, _ in t_warnings]
    for (_, k_text), (_, t_text) in zip(k_warnings, t_warnings):
        # kiln's CUDA warning leaves out torch_xla, which kiln can never have imported.
        assert k_text == as_kiln_text(t_text).replace(" or kiln_xla is imported", "")
    assert all(w.filename == __file__ for w in k_caught)


def test_disabled_region_sets_the_flag_off():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for T in (kiln, torch):
            with T.autocast("cpu", dtype=T.float32):
                assert state(T) == (False, "float32", True)


@pytest.mark.parametrize("case", [
    lambda T: T.autocast(1),
    lambda T: T.autocast(T.device("cpu")),
    lambda T: T.autocast("foo"),
    lambda T: T.autocast("meta", dtype=T.float16),
    lambda T: T.autocast("lazy", dtype=T.bfloat16),
    lambda T: T.autocast("cpu")(3),
    lambda T: T.autocast("cpu", enabled=1).__enter__(),
    lambda T: T.amp.is_autocast_available("foo"),
    lambda T: T.amp.custom_fwd(lambda ctx: 0, device_type=1),
    lambda T: T.amp.custom_bwd(lambda ctx: 0, device_type=None),
], ids=["int_device", "device_object", "unknown_device", "meta", "lazy", "decorate_non_callable", "int_enabled",
        "available_unknown", "custom_fwd_device", "custom_bwd_device"])
def test_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


def test_string_dtype_fails_on_entry_like_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda: kiln.autocast("cpu", dtype="float16").__enter__(),
                          lambda: torch.autocast("cpu", dtype="float16").__enter__())
    assert not kiln.is_autocast_enabled("cpu")
    # Neither raised the nesting depth (the dtype check comes before it).
    assert kiln.autocast_increment_nesting() == torch.autocast_increment_nesting() == 1
    assert kiln.autocast_decrement_nesting() == torch.autocast_decrement_nesting() == 0


def test_is_autocast_available():
    for device in ("cpu", "cuda", "cuda:1", "cpu:0"):
        assert kiln.amp.is_autocast_available(device) and torch.amp.is_autocast_available(device)
    for device in ("meta", "lazy", "vulkan"):  # torch says False; kiln too
        assert not kiln.amp.is_autocast_available(device) and not torch.amp.is_autocast_available(device)
    # Device types kiln does not have: torch keeps autocast state for them, kiln refuses them.
    assert not kiln.amp.is_autocast_available("xpu") and torch.amp.is_autocast_available("xpu")
    with pytest.raises(RuntimeError, match="User specified an unsupported autocast device_type 'xpu'"):
        kiln.autocast("xpu")


def test_cuda_index_device_string():
    """torch only treats the exact string "cuda" as CUDA when deciding to disable: "cuda:0" stays enabled."""
    for T in (kiln, torch):
        region = T.autocast("cuda:0")
        assert region._enabled
        with region:
            assert T.is_autocast_enabled("cuda") and T.get_autocast_dtype("cuda") == T.float16
        assert not T.is_autocast_enabled("cuda")


def test_enter_exit_unmanaged():
    for T in (kiln, torch):
        mode = T.amp._enter_autocast("cpu", T.float16, True, False)
        assert state(T) == (True, "float16", False)
        T.amp._exit_autocast(mode)
        assert state(T) == (False, "bfloat16", True)


def make_scaled_function(T, cast_inputs):
    seen = {}

    class Scaled(T.autograd.Function):
        @staticmethod
        @T.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, y=None):
            seen["forward"] = (str(x.dtype).split(".")[-1], T.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * 3

        @staticmethod
        @T.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            seen["backward"] = (T.is_autocast_enabled("cpu"), str(T.get_autocast_dtype("cpu")).split(".")[-1])
            return grad * 3, None

    return Scaled, seen


@pytest.mark.parametrize("cast_inputs", [None, "float16", "bfloat16"])
@pytest.mark.parametrize("in_autocast", [False, True])
def test_custom_fwd_bwd_match_torch(cast_inputs, in_autocast):
    results = []
    for T in (kiln, torch):
        Scaled, seen = make_scaled_function(T, None if cast_inputs is None else getattr(T, cast_inputs))
        x = T.ones(3, requires_grad=True)
        if in_autocast:
            with T.autocast("cpu", dtype=T.float16):
                y = Scaled.apply(x, T.ones(1, dtype=T.float64))
        else:
            y = Scaled.apply(x)
        y.sum().backward()
        results.append((seen["forward"], seen["backward"], str(y.dtype).split(".")[-1], x.grad.tolist()))
    assert results[0] == results[1]


def test_cast_helper():
    from kiln.amp.autocast_mode import _cast

    values = {"a": [kiln.ones(1), kiln.ones(1, dtype=kiln.float64), kiln.ones(1, dtype=kiln.int32)],
              "b": (kiln.ones(1), "text", np.ones(1, dtype=np.float32))}
    cast = _cast(values, "cpu", kiln.float16)
    assert [t.dtype for t in cast["a"]] == [kiln.float16, kiln.float64, kiln.int32]
    assert isinstance(cast["b"], tuple) and cast["b"][0].dtype is kiln.float16 and cast["b"][1] == "text"
    assert cast["b"][2].dtype == np.float32
    assert _cast(kiln.ones(1), "cuda", kiln.float16).dtype is kiln.float32  # other device: left alone


def test_cuda_amp_spellings_warn():
    import kiln.cuda.amp as kca
    from kiln.cuda.amp import GradScaler, autocast  # noqa: F401  (the common import line works)

    assert kiln.cuda.amp is kca and kca.amp_definitely_not_available()
    checks = [(lambda M: M.cuda.amp.autocast(), 2), (lambda M: M.cuda.amp.GradScaler(), 2),
              (lambda M: M.cuda.amp.custom_fwd(lambda ctx: 0), 1), (lambda M: M.cuda.amp.custom_bwd(lambda ctx: 0), 1),
              (lambda M: M.cpu.amp.autocast() if M is torch else kiln.amp._cpu_amp.autocast(), 1),
              (lambda M: M.cpu.amp.GradScaler() if M is torch else kiln.amp._cpu_amp.GradScaler(), 1)]
    for build, count in checks:
        texts = []
        for M in (kiln, torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                made = build(M)
            assert len(caught) == count and caught[0].category is FutureWarning
            texts.append([str(w.message) for w in caught])
            if isinstance(made, M.amp.autocast):
                assert (made.device, made._enabled) in (("cpu", True), ("cuda", False))
        assert texts[0][0] == as_kiln_text(texts[1][0])
    assert issubclass(kiln.amp._cpu_amp.autocast, kiln.amp.autocast)
    assert issubclass(kiln.cuda.amp.GradScaler, kiln.amp.GradScaler)


# --- GradScaler ------------------------------------------------------------------------------------

W0 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def train(T, *, init_scale, growth_factor, backoff_factor, growth_interval, bad_steps, steps=12, optimizer="SGD",
          unscale_every=3):
    """A scaled training loop with NaN/inf injected into one gradient on ``bad_steps``."""
    p = T.nn.Parameter(T.tensor(W0))
    q = T.nn.Parameter(T.tensor([0.5, -0.25]))
    opt = T.optim.SGD([p, q], lr=0.25) if optimizer == "SGD" else T.optim.Adam([p, q], lr=0.01)
    scaler = T.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                              backoff_factor=backoff_factor, growth_interval=growth_interval)
    history = []
    for i in range(steps):
        opt.zero_grad()
        loss = (p * p).sum() * 0.37 + (q * 3).sum()
        scaler.scale(loss).backward()
        if i in bad_steps:
            p.grad[0, 1] = float("inf") if i % 2 else float("nan")
        unscaled = None
        if i % unscale_every == 0:
            scaler.unscale_(opt)
            unscaled = q.grad.tolist()
        returned = scaler.step(opt)
        found_inf = sum(v.item() for v in scaler._found_inf_per_device(opt).values())
        scaler.update()
        history.append(dict(scale=scaler.get_scale(), tracker=scaler._get_growth_tracker(), returned=returned,
                            found_inf=found_inf, unscaled=unscaled, p=p.detach().numpy().tolist(),
                            q=q.detach().numpy().tolist()))
    steps_taken = [s["step"] for s in opt.state_dict()["state"].values()] if optimizer == "Adam" else None
    return history, scaler.state_dict(), steps_taken


SCALER_CONFIGS = {
    "defaults_interval3": dict(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=3),
    "odd_factors": dict(init_scale=1000.0, growth_factor=1.7, backoff_factor=0.3, growth_interval=2),
    "overflowing_scale": dict(init_scale=3.4e38, growth_factor=2.0, backoff_factor=0.5, growth_interval=1),
    "growth_every_step": dict(init_scale=1.5, growth_factor=3.0, backoff_factor=0.9, growth_interval=1),
}


@pytest.mark.parametrize("config", list(SCALER_CONFIGS))
def test_scaler_matches_torch_sgd(config):
    kwargs = dict(SCALER_CONFIGS[config], bad_steps={1, 2, 6, 7})
    k_history, k_state, _ = train(kiln, **kwargs)
    t_history, t_state, _ = train(torch, **kwargs)
    assert k_state == t_state
    for step, (k, t) in enumerate(zip(k_history, t_history)):
        assert k == t, f"step {step}: kiln {k} != torch {t}"
    skipped = [s for s in k_history if s["found_inf"]]
    assert skipped and all(s["returned"] is None for s in skipped)


def test_scaler_skips_adam_steps_like_torch():
    kwargs = dict(SCALER_CONFIGS["odd_factors"], bad_steps={0, 3, 4}, optimizer="Adam")
    k_history, k_state, k_steps = train(kiln, **kwargs)
    t_history, t_state, t_steps = train(torch, **kwargs)
    assert k_state == t_state
    assert [float(s) for s in k_steps] == [float(s) for s in t_steps] == [9.0, 9.0]  # 12 steps, 3 skipped
    for k, t in zip(k_history, t_history):
        assert (k["scale"], k["tracker"], k["found_inf"]) == (t["scale"], t["tracker"], t["found_inf"])
        np.testing.assert_allclose(k["p"], t["p"], rtol=1e-5, atol=1e-6)  # Adam's own rounding


def test_scale_of_outputs():
    for T in (kiln, torch):
        scaler = T.amp.GradScaler("cpu", init_scale=8.0)
        assert scaler.get_scale() == 8.0 and scaler._scale is None
        scaled = scaler.scale([T.ones(2), (T.ones(1, dtype=T.float16), T.ones(1, dtype=T.float64))])
        assert isinstance(scaled, list) and isinstance(scaled[1], tuple)
        assert [str(t.dtype).split(".")[-1] for t in (scaled[0], *scaled[1])] == ["float32", "float16", "float64"]
        assert scaled[0].tolist() == [8.0, 8.0] and scaled[1][0].item() == 8.0
        assert list(scaler.scale(iter([T.ones(1)])))[0].item() == 8.0
        assert str(scaler._scale.dtype).endswith("float32") and str(scaler._growth_tracker.dtype).endswith("int32")
    assert_same_error(lambda: kiln.amp.GradScaler("cpu").scale([kiln.ones(1), 3]),
                      lambda: torch.amp.GradScaler("cpu").scale([torch.ones(1), 3]))


def scaler_and_optimizer(T, **kwargs):
    p = T.nn.Parameter(T.ones(2))
    opt = T.optim.SGD([p], lr=0.1)
    scaler = T.amp.GradScaler("cpu", **kwargs)
    return p, opt, scaler


def after_backward(T):
    p, opt, scaler = scaler_and_optimizer(T)
    scaler.scale((p * 2).sum()).backward()
    return p, opt, scaler


def unscale_twice(T):
    p, opt, scaler = after_backward(T)
    scaler.unscale_(opt)
    scaler.unscale_(opt)


def unscale_after_step(T):
    p, opt, scaler = after_backward(T)
    scaler.step(opt)
    scaler.unscale_(opt)


def step_twice(T):
    p, opt, scaler = after_backward(T)
    scaler.step(opt)
    scaler.step(opt)


def fp16_grads(T):
    p = T.nn.Parameter(T.ones(2, dtype=T.float16))
    opt = T.optim.SGD([p], lr=0.1)
    scaler = T.amp.GradScaler("cpu")
    scaler.scale(T.ones(1))
    p.grad = T.ones(2, dtype=T.float16)
    scaler.step(opt)


def update_without_step(T):
    p, opt, scaler = after_backward(T)
    scaler.update()


def pickle_mid_iteration(T):
    p, opt, scaler = after_backward(T)
    scaler.step(opt)
    pickle.dumps(scaler)


def new_scale_tensor(T, tensor):
    p, opt, scaler = after_backward(T)
    scaler.update(tensor(T))


@pytest.mark.parametrize("case", [
    lambda T: scaler_and_optimizer(T)[2].unscale_(scaler_and_optimizer(T)[1]),
    lambda T: scaler_and_optimizer(T)[2].step(scaler_and_optimizer(T)[1]),
    lambda T: scaler_and_optimizer(T)[2].update(),
    unscale_twice, unscale_after_step, step_twice, fp16_grads, update_without_step,
    lambda T: after_backward(T)[2].step(after_backward(T)[1], closure=lambda: 0),
    lambda T: new_scale_tensor(T, lambda M: M.ones(2)),
    lambda T: new_scale_tensor(T, lambda M: M.ones(1, requires_grad=True)),
    lambda T: T.amp.GradScaler("cpu", growth_factor=1.0),
    lambda T: T.amp.GradScaler("cpu", backoff_factor=1.0),
    lambda T: T.amp.GradScaler("cpu").load_state_dict({}),
    pickle_mid_iteration,
], ids=["unscale_before_scale", "step_before_scale", "update_before_scale", "unscale_twice", "unscale_after_step",
        "step_twice", "fp16_grads", "update_without_step", "closure", "new_scale_two_elements",
        "new_scale_requires_grad", "growth_factor", "backoff_factor", "empty_state_dict", "pickle_mid_iteration"])
def test_scaler_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


def test_update_with_new_scale():
    for T in (kiln, torch):
        p, opt, scaler = after_backward(T)
        scaler.step(opt)
        scaler.update(1024.0)
        assert scaler.get_scale() == 1024.0
        scaler.scale(T.ones(1))
        scaler.update(T.full((), 96.0))
        assert scaler.get_scale() == 96.0 and scaler._scale.shape == ()


def test_new_scale_of_shape_one_fails_in_copy():
    """A [1] new_scale passes the checks, then copy_ into the 0-dim scale refuses it (RuntimeError in both)."""
    assert_same_error(lambda: new_scale_tensor(kiln, lambda M: M.ones(1)),
                      lambda: new_scale_tensor(torch, lambda M: M.ones(1)), message=False)


def test_state_dict_round_trip_and_pickle():
    for T in (kiln, torch):
        kwargs = dict(SCALER_CONFIGS["odd_factors"], bad_steps={1}, steps=3)
        history, saved, _ = train(T, **kwargs)
        fresh = T.amp.GradScaler("cpu")
        fresh.load_state_dict(saved)
        assert fresh.state_dict() == saved and fresh._scale is None
        assert fresh.get_scale() == saved["scale"] and fresh._get_growth_tracker() == saved["_growth_tracker"]
        live = T.amp.GradScaler("cpu", init_scale=4.0)
        live.scale(T.ones(1))
        live.load_state_dict(saved)
        assert live._scale.item() == saved["scale"] and live._growth_tracker.item() == saved["_growth_tracker"]
        clone = pickle.loads(pickle.dumps(live))
        assert clone.state_dict() == saved and clone._scale is None
        assert copy.deepcopy(live).state_dict() == saved
        if T is kiln:
            kiln_saved = saved
        else:
            assert kiln_saved == saved


def test_disabled_scaler_is_transparent():
    for T in (kiln, torch):
        p, opt, scaler = scaler_and_optimizer(T, enabled=False)
        loss = (p * 2).sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.unscale_(opt)
        assert scaler.step(opt) is None  # what SGD.step returns
        assert [round(v, 6) for v in p.tolist()] == [0.8, 0.8]
        scaler.update()
        assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
        scaler.load_state_dict({})  # a disabled scaler ignores it
        assert scaler._get_growth_tracker() == 0


def test_default_cuda_scaler_disables_itself():
    texts = []
    for T in (kiln, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scaler = T.amp.GradScaler()
        assert not scaler.is_enabled() and caught[0].category is UserWarning
        texts.append(str(caught[0].message))
    assert texts[0] == as_kiln_text(texts[1])


def test_factor_accessors():
    for T in (kiln, torch):
        scaler = T.amp.GradScaler("cpu", growth_interval=7)
        scaler.set_growth_factor(3.0)
        scaler.set_backoff_factor(0.25)
        scaler.set_growth_interval(5)
        assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 5)


def test_optimizer_that_unscales_itself():
    """An optimizer with _step_supports_amp_scaling gets grad_scale and found_inf for its step."""
    def run(T):
        seen = {}

        class SelfScaling(T.optim.SGD):
            _step_supports_amp_scaling = True

            def step(self, closure=None):
                seen["grad_scale"] = self.grad_scale.item()
                seen["found_inf"] = self.found_inf.item()
                return "stepped"

        p = T.nn.Parameter(T.ones(2))
        opt = SelfScaling([p], lr=0.1)
        scaler = T.amp.GradScaler("cpu", init_scale=32.0)
        scaler.scale((p * 2).sum()).backward()
        p.grad[0] = float("inf")
        returned = scaler.step(opt)
        scaler.update()
        return returned, seen, scaler.get_scale(), hasattr(opt, "grad_scale"), p.grad.tolist()

    assert run(kiln) == run(torch)

