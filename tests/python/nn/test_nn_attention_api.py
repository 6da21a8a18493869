"""kiln.nn.attention (SDPBackend, sdpa_kernel, the flash-impl registry),
kiln.nn.attention.bias (causal biases through scaled_dot_product_attention),
kiln.nn.parallel, kiln.nn.grad and kiln.nn.common_types against torch."""

import logging
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.nn.attention.bias as kbias
import torch.nn.attention.bias as tbias
from kiln.nn.attention import SDPBackend, sdpa_kernel
from torch_compare import assert_same_error

kattn = kiln.nn.attention
tattn = torch.nn.attention


def backend_names(backends):
    return [b.name for b in backends]


# --- SDPBackend and sdpa_kernel --------------------------------------------------------------------

def test_sdpbackend_members():
    assert [(n, int(m)) for n, m in SDPBackend.__members__.items()] == \
        [(n, int(m)) for n, m in tattn.SDPBackend.__members__.items()]
    for member in SDPBackend:
        torch_member = getattr(tattn.SDPBackend, member.name)
        assert (repr(member), str(member), member.value) == (repr(torch_member), str(torch_member), torch_member.value)
    assert SDPBackend(1) is SDPBackend.FLASH_ATTENTION and [0, 1][SDPBackend.FLASH_ATTENTION] == 1


def test_public_names():
    assert set(kattn.__all__) == set(tattn.__all__)
    assert kattn.WARN_FOR_UNFUSED_KERNELS is tattn.WARN_FOR_UNFUSED_KERNELS is False


def run_selection(module, selections):
    """The enabled backends (in priority order) inside and after each nested selection."""
    seen = []
    B = module.SDPBackend

    def resolve(selection):
        return [getattr(B, n) for n in selection] if isinstance(selection, list) else getattr(B, selection)

    def enter(level):
        if level == len(selections):
            seen.append(backend_names(module._cur_sdpa_kernel_backends(with_priority=True)))
            return
        selection, priority = selections[level]
        with module.sdpa_kernel(resolve(selection), set_priority=priority) as context:
            assert context == {}
            seen.append(backend_names(module._cur_sdpa_kernel_backends()))
            enter(level + 1)
        seen.append(backend_names(module._cur_sdpa_kernel_backends(with_priority=True)))

    enter(0)
    return seen


@pytest.mark.parametrize("selections", [
    [("MATH", False)],
    [(["FLASH_ATTENTION", "MATH"], False), ("MATH", False)],
    [(["CUDNN_ATTENTION", "FLASH_ATTENTION"], True)],
    [(["MATH", "MATH", "EFFICIENT_ATTENTION"], True), (["OVERRIDEABLE"], False)],
    [([], False)],
    [("ERROR", False)],
])
def test_sdpa_kernel_flags_match_torch(selections):
    assert run_selection(kattn, selections) == run_selection(tattn, selections)
    assert backend_names(kattn._cur_sdpa_kernel_backends(with_priority=True)) == \
        ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION", "OVERRIDEABLE"]


def test_sdpa_kernel_restores_after_error():
    with pytest.raises(ZeroDivisionError):
        with sdpa_kernel(SDPBackend.MATH):
            1 / 0
    assert len(kattn._cur_sdpa_kernel_backends()) == 5


@pytest.mark.parametrize("backends", ["math", (0,), None, 1])
def test_sdpa_kernel_validation(backends):
    def enter(module):
        arg = backends
        if isinstance(backends, tuple):
            arg = (module.SDPBackend.MATH,)
        with module.sdpa_kernel(arg):
            pass

    assert_same_error(lambda: enter(kattn), lambda: enter(tattn))


def test_attention_runs_under_any_selection():
    """kiln's one CPU attention runs whatever is selected (torch raises "No viable backend" for [])."""
    q = kiln.randn(1, 2, 4, 8)
    expected = kiln.nn.functional.scaled_dot_product_attention(q, q, q)
    for selection in ([], SDPBackend.EFFICIENT_ATTENTION, [SDPBackend.MATH]):
        with sdpa_kernel(selection):
            assert np.array_equal(kiln.nn.functional.scaled_dot_product_attention(q, q, q).numpy(), expected.numpy())
    with pytest.raises(RuntimeError, match="No viable backend"):
        with tattn.sdpa_kernel([]):
            tq = torch.randn(1, 2, 4, 8)
            torch.nn.functional.scaled_dot_product_attention(tq, tq, tq)


def test_flash_registry(caplog):
    calls = []

    class Handle:
        def remove(self):
            calls.append("removed")

    assert kattn.list_flash_attention_impls() == [] and kattn.current_flash_attention_impl() is None
    try:
        kattn.register_flash_attention_impl("MINE", register_fn=lambda: calls.append("registered") or Handle())
        kattn.register_flash_attention_impl("NOHANDLE", register_fn=lambda: None)
        assert kattn.list_flash_attention_impls() == ["MINE", "NOHANDLE"]
        kattn.activate_flash_attention_impl("MINE")
        assert kattn.current_flash_attention_impl() == "MINE" and calls == ["registered"]
        kattn.activate_flash_attention_impl("NOHANDLE")  # restores MINE first
        assert calls == ["registered", "removed"] and kattn.current_flash_attention_impl() is None
        with caplog.at_level(logging.WARNING):
            kattn.restore_flash_attention_impl()
        assert "Trying to restore default FA2 impl when no custom impl was activated" in caplog.text
        with pytest.raises(ValueError, match=r"Unknown flash attention impl 'FA9'. Available implementations: "
                                             r"\['MINE', 'NOHANDLE'\]"):
            kattn.activate_flash_attention_impl("FA9")
    finally:
        kattn._FLASH_ATTENTION_IMPLS.clear()
        kattn._FLASH_ATTENTION_ACTIVE = None


# --- causal biases ---------------------------------------------------------------------------------

@pytest.mark.parametrize("factory", ["causal_upper_left", "causal_lower_right"])
@pytest.mark.parametrize("size", [(3, 4), (4, 4), (5, 3), (1, 6)])
def test_bias_masks_match_torch(factory, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k, t = getattr(kbias, factory)(*size), getattr(tbias, factory)(*size)
    assert isinstance(k, kbias.CausalBias) and isinstance(k, kiln.Tensor)
    assert (int(k.variant), k.seq_len_q, k.seq_len_kv) == (int(t.variant), t.seq_len_q, t.seq_len_kv)
    assert np.array_equal(k._materialize().numpy(), t._materialize().numpy())
    assert np.array_equal(k.numpy(), t._materialize().numpy())  # kiln's bias is its mask
    assert repr(k) == repr(t).replace("torch", "kiln")


def test_causal_variant():
    assert [(v.name, int(v)) for v in kbias.CausalVariant] == [(v.name, int(v)) for v in tbias.CausalVariant]


@pytest.mark.parametrize("factory", ["causal_upper_left", "causal_lower_right"])
@pytest.mark.parametrize("lq,lkv", [(3, 5), (4, 4), (5, 3)])
@pytest.mark.parametrize("rank", [3, 4])
def test_attention_with_bias_matches_torch(factory, lq, lkv, rank):
    rng = np.random.default_rng(lq * 10 + lkv)
    lead = (2, 3) if rank == 4 else (2,)
    q = rng.standard_normal((*lead, lq, 8)).astype(np.float32)
    k = rng.standard_normal((*lead, lkv, 8)).astype(np.float32)
    v = rng.standard_normal((*lead, lkv, 6)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kb, tb = getattr(kbias, factory)(lq, lkv), getattr(tbias, factory)(lq, lkv)
    expected = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                                                attn_mask=tb)
    through_functional = kiln.nn.functional.scaled_dot_product_attention(kiln.tensor(q), kiln.tensor(k),
                                                                         kiln.tensor(v), attn_mask=kb)
    through_dispatch = kbias.CausalBias._dispatch(kiln.tensor(q), kiln.tensor(k), kiln.tensor(v), kb)
    np.testing.assert_allclose(through_functional.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(through_dispatch.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_bias_gradients_match_torch():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((1, 2, n, 4)).astype(np.float32) for n in (3, 5, 5)]
    kq, kk, kv = (kiln.tensor(a, requires_grad=True) for a in arrays)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    kmask, tmask = kbias.causal_lower_right(3, 5), tbias.causal_lower_right(3, 5)
    kiln.nn.functional.scaled_dot_product_attention(kq, kk, kv, attn_mask=kmask).sum().backward()
    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask).sum().backward()
    for a, b in ((kq, tq), (kk, tk), (kv, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_bias_warning_and_errors():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kbias.causal_lower_right(5, 3)
        tbias.causal_lower_right(5, 3)
        kbias.causal_upper_left(5, 3)  # upper-left never warns
    assert [str(w.message) for w in caught] == ["Lower right causal bias will produce NaNs in the output when "
                                                "seq_len_q > seq_len_kv!"] * 2
    assert_same_error(lambda: kbias.causal_lower_right(3), lambda: tbias.causal_lower_right(3))
    assert_same_error(lambda: kbias.causal_upper_left(1, 2, 3), lambda: tbias.causal_upper_left(1, 2, 3))
    assert_same_error(lambda: kbias.CausalBias(1, 3, 4), lambda: tbias.CausalBias(1, 3, 4))
    q = kiln.randn(1, 1, 3, 4)
    tq = torch.randn(1, 1, 3, 4)
    assert_same_error(lambda: kbias.CausalBias._dispatch(q, q, q, kbias.causal_lower_right(3, 3), is_causal=True),
                      lambda: torch.nn.functional.scaled_dot_product_attention(
                          tq, tq, tq, attn_mask=tbias.causal_lower_right(3, 3), is_causal=True))


# --- nn.parallel ---------------------------------------------------------------------------------

def test_parallel_namespace():
    assert kiln.nn.parallel.DataParallel is kiln.nn.DataParallel
    model = kiln.nn.Linear(3, 2)
    wrapped = kiln.nn.parallel.DataParallel(model)
    x = kiln.randn(4, 3)
    assert np.array_equal(wrapped(x).detach().numpy(), model(x).detach().numpy())
    assert wrapped.device_ids == torch.nn.parallel.DataParallel(torch.nn.Linear(3, 2)).device_ids == []
    assert set(kiln.nn.parallel.__all__) <= set(torch.nn.parallel.__all__)


@pytest.mark.parametrize("case", [
    lambda T: T.nn.parallel.data_parallel(T.nn.Linear(2, 2), T.ones(1, 2)),
    lambda T: T.nn.parallel.data_parallel(T.nn.Linear(2, 2), T.ones(1, 2), device_ids=[0], output_device=-1),
    lambda T: T.nn.parallel.DistributedDataParallel(T.nn.Linear(2, 2)),
])
def test_parallel_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


def test_distributed_data_parallel_cpu_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            kiln.nn.parallel.DistributedDataParallelCPU(kiln.nn.Linear(2, 2))
    assert caught[0].category is FutureWarning
    assert issubclass(kiln.nn.parallel.DistributedDataParallelCPU, kiln.nn.parallel.DistributedDataParallel)


# --- nn.grad ---------------------------------------------------------------------------------------

GRAD_CASES = [
    dict(nd=1, n=2, cin=4, cout=6, size=9, k=3, stride=1, padding=0, dilation=1, groups=1),
    dict(nd=1, n=1, cin=4, cout=6, size=10, k=3, stride=2, padding=1, dilation=2, groups=2),
    dict(nd=2, n=2, cin=3, cout=4, size=7, k=3, stride=1, padding=1, dilation=1, groups=1),
    dict(nd=2, n=1, cin=4, cout=4, size=8, k=3, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=4),
    dict(nd=2, n=2, cin=2, cout=2, size=8, k=2, stride=3, padding=0, dilation=1, groups=1),  # stride drops a row
    dict(nd=3, n=1, cin=2, cout=3, size=5, k=3, stride=1, padding=1, dilation=1, groups=1),
    dict(nd=3, n=2, cin=4, cout=2, size=6, k=2, stride=2, padding=0, dilation=1, groups=2),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[str(i) for i in range(len(GRAD_CASES))])
def test_conv_grads_match_torch(case):
    nd = case["nd"]
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((case["n"], case["cin"]) + (case["size"],) * nd).astype(np.float32)
    w = rng.standard_normal((case["cout"], case["cin"] // case["groups"]) + (case["k"],) * nd).astype(np.float32)
    options = {key: case[key] for key in ("stride", "padding", "dilation", "groups")}
    out = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **options)
    go = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    t_input = getattr(torch.nn.grad, f"conv{nd}d_input")(x.shape, torch.tensor(w), torch.tensor(go), **options)
    k_input = getattr(kiln.nn.grad, f"conv{nd}d_input")(list(x.shape), kiln.tensor(w), kiln.tensor(go), **options)
    t_weight = getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.tensor(x), w.shape, torch.tensor(go), **options)
    k_weight = getattr(kiln.nn.grad, f"conv{nd}d_weight")(kiln.tensor(x), kiln.Size(w.shape), kiln.tensor(go),
                                                          **options)
    assert tuple(k_input.shape) == x.shape and tuple(k_weight.shape) == w.shape
    assert not k_input.requires_grad and not k_weight.requires_grad
    np.testing.assert_allclose(k_input.numpy(), t_input.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k_weight.numpy(), t_weight.numpy(), rtol=1e-5, atol=1e-5)


def test_conv_grad_is_differentiable():
    rng = np.random.default_rng(5)
    w, go = rng.standard_normal((2, 1, 3, 3)).astype(np.float32), rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    kw, tw = kiln.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    (kiln.nn.grad.conv2d_input((1, 1, 6, 6), kw, kiln.tensor(go)) ** 2).sum().backward()
    (torch.nn.grad.conv2d_input((1, 1, 6, 6), tw, torch.tensor(go)) ** 2).sum().backward()
    np.testing.assert_allclose(kw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [
    lambda T: T.nn.grad.conv2d_input((1, 1, 5, 5), T.ones(2, 1, 3, 3), T.ones(1, 2, 4, 4)),
    lambda T: T.nn.grad.conv2d_weight(T.ones(1, 1, 6, 6), (2, 1, 2, 2), T.ones(1, 2, 4, 4)),
    lambda T: T.nn.grad.conv1d_input((1, 1, 9), T.ones(3, 1, 3), T.ones(1, 3, 6)),
    lambda T: T.nn.grad.conv2d_input((1, 1, 5, 5), T.ones(2, 1, 3, 3), T.ones(1, 3, 3, 3)),
    lambda T: T.nn.grad.conv3d_weight(T.ones(1, 1, 4, 4, 4), (3, 1, 3, 3, 3), T.ones(1, 3, 2, 2, 3)),
    lambda T: T.nn.grad.conv2d_input((1, 1, 5, 5), T.ones(2, 1, 3, 3), T.ones(2, 3, 3)),
])
def test_conv_grad_shape_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


def test_common_types():
    import kiln.nn.common_types as kct
    import torch.nn.common_types as tct

    names = {n for n in dir(tct) if n.startswith("_") and not n.startswith("__")} - {"_TypeAlias"}
    assert names <= set(dir(kct))
    for name in names:
        def text(alias, tensor_name):
            return str(alias).replace(tensor_name, "X").replace("typing.Optional[int]", "int | None")

        assert text(getattr(kct, name), "kiln.Tensor") == text(getattr(tct, name), "torch.Tensor"), name
