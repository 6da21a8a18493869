"""nn.Module machinery against torch.nn.Module: registration, traversal,
state_dict, hooks (order, removal, always_call), modes, repr, dtype moves."""

import pytest
import torch

import kiln
from kiln.nn.modules import Module
from kiln.nn.parameter import Parameter


def build(lib, Mod, Param):
    class Leaf(Mod):
        def __init__(self, i, o):
            super().__init__()
            self.weight = Param(lib.ones(o, i))
            self.bias = Param(lib.zeros(o))
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)

        def forward(self, x):
            return lib.addmm(self.bias, x, self.weight.transpose(0, 1))

        def extra_repr(self):
            return f"in={self.weight.shape[1]}, out={self.weight.shape[0]}"

    class Net(Mod):
        def __init__(self):
            super().__init__()
            self.first = Leaf(3, 4)
            self.second = Leaf(4, 2)
            self.tied = self.first  # shared submodule: counted once

        def forward(self, x):
            return self.second(self.first(x))

    return Net()


def both():
    return build(kiln, Module, Parameter), build(torch, torch.nn.Module, torch.nn.Parameter)


def test_traversal_matches_torch():
    k, t = both()
    assert [n for n, _ in k.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in k.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in k.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in k.named_children()] == [n for n, _ in t.named_children()]
    assert list(k.state_dict()) == list(t.state_dict())
    assert repr(k) == repr(t)
    assert k.get_submodule("first") is k.first and k.get_parameter("second.bias") is k.second.bias


def test_state_dict_round_trip_and_strict_errors():
    k, t = both()
    k.first.weight.data.numpy()[...] = 7.0
    k2, _ = both()
    assert repr(k2.load_state_dict(k.state_dict())) == "<All keys matched successfully>"
    assert k2.first.weight.tolist() == k.first.weight.tolist()
    bad_k = {"first.weight": kiln.ones(4, 3), "extra": kiln.ones(1)}
    bad_t = {"first.weight": torch.ones(4, 3), "extra": torch.ones(1)}
    with pytest.raises(RuntimeError) as ek:
        k2.load_state_dict(bad_k)
    with pytest.raises(RuntimeError) as et:
        t.load_state_dict(bad_t)
    assert str(ek.value) == str(et.value)
    result_k, result_t = k2.load_state_dict(bad_k, strict=False), t.load_state_dict(bad_t, strict=False)
    assert list(result_k.missing_keys) == list(result_t.missing_keys)
    with pytest.raises(RuntimeError, match="size mismatch for first.weight"):
        k2.load_state_dict({**k.state_dict(), "first.weight": kiln.ones(2, 2)})


def test_forward_hooks_order_removal_and_kwargs():
    calls = {"kiln": [], "torch": []}
    for lib, m in zip(("kiln", "torch"), both()):
        log = calls[lib]
        h1 = m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        m.register_forward_hook(lambda mod, args, out: log.append("post"))
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append("post_kw"), with_kwargs=True)
        x = (kiln if lib == "kiln" else torch).ones(2, 3)
        m(x)
        h1.remove()
        m(x)
    assert calls["kiln"] == calls["torch"]


def test_always_call_hook_runs_when_forward_raises():
    for lib, mod_cls in ((kiln, Module), (torch, torch.nn.Module)):
        class Boom(mod_cls):
            def forward(self, x):
                raise ValueError("boom")

        seen = []
        m = Boom()
        m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
        with pytest.raises(ValueError, match="^boom$"):
            m(lib.ones(1))
        assert seen == [None]


def test_train_eval_zero_grad_and_dtype_moves():
    k, t = both()
    k.eval()
    assert not k.training and not k.first.training
    k.train()
    assert k.second.training
    out = k(kiln.ones(2, 3))
    out.backward(kiln.ones(2, 2))
    assert k.first.weight.grad is not None
    k.zero_grad()
    assert k.first.weight.grad is None
    k.double()
    assert k.first.weight.dtype is kiln.float64 and isinstance(k.first.weight, Parameter)
    assert k.first.steps.dtype is kiln.float64


def test_assignment_errors_match_torch():
    k, t = both()
    with pytest.raises(TypeError, match="cannot assign"):
        k.first.weight = kiln.ones(4, 3)
    with pytest.raises(TypeError, match="cannot assign"):
        t.first.weight = torch.ones(4, 3)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        k.nope
    del k.second
    assert "second" not in dict(k.named_children())


def test_full_backward_hook_sees_input_and_output_gradients():
    seen = []
    k, _ = both()
    k.second.register_full_backward_hook(lambda mod, gin, gout: seen.append((gin[0].shape, gout[0].shape)))
    x = kiln.ones(2, 3, requires_grad=True)
    k(x).backward(kiln.ones(2, 2))
    assert seen == [(kiln.Size([2, 4]), kiln.Size([2, 2]))]
