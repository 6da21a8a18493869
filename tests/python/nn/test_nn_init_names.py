"""kiln.nn.init's remaining torch.nn.init names against torch: the namespace, dirac_,
sparse_, the deprecated aliases (FutureWarning, same result), the _no_grad_
helpers, calculate_gain for every nonlinearity with its errors, and generator=."""

import math
import warnings

import numpy as np
import pytest
import torch

import kiln
import kiln.nn.init as kinit
from torch_compare import assert_same_error

TYPING_NAMES = {"Callable", "Literal", "ParamSpec", "Tensor", "TypeVar", "_P", "_R", "math", "torch", "warnings"}


def test_namespace_covers_torch():
    torch_names = {n for n in dir(torch.nn.init) if not n.startswith("__")} - TYPING_NAMES
    assert torch_names - set(dir(kinit)) == set()
    assert set(kinit.__all__) == set(torch.nn.init.__all__)
    assert kinit._FanMode.__args__ == torch.nn.init._FanMode.__args__
    assert kinit._NonlinearityType.__args__ == torch.nn.init._NonlinearityType.__args__


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 3, 3, 3), 2), ((2, 5, 4, 4), 1),
                                          ((6, 2, 5), 3), ((3, 3, 2, 2), 1), ((8, 1, 3, 3), 4)])
def test_dirac_matches_torch(shape, groups):
    k = kinit.dirac_(kiln.empty(*shape).fill_(7.0), groups)
    t = torch.nn.init.dirac_(torch.empty(*shape).fill_(7.0), groups)
    assert np.array_equal(k.numpy(), t.numpy())


def test_dirac_preserves_identity_through_conv():
    w = kinit.dirac_(kiln.empty(3, 3, 3, 3))
    x = kiln.randn(1, 3, 5, 5)
    assert np.allclose(kiln.nn.functional.conv2d(x, w, padding=1).numpy(), x.numpy())


def test_dirac_on_parameter_under_no_grad():
    p = kiln.nn.Parameter(kiln.empty(2, 2, 3))
    out = kinit.dirac_(p)
    assert out is p and p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("case", [
    lambda T: T.nn.init.dirac_(T.empty(3, 3)),
    lambda T: T.nn.init.dirac_(T.empty(2, 2, 2, 2, 2, 2)),
    lambda T: T.nn.init.dirac_(T.empty(5, 2, 3), groups=2),
    lambda T: T.nn.init.sparse_(T.empty(3, 3, 3), 0.5),
    lambda T: T.nn.init.sparse_(T.empty(3), 0.5),
])
def test_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


@pytest.mark.parametrize("rows,cols,sparsity", [(10, 6, 0.35), (7, 3, 0.0), (5, 4, 1.0), (300, 40, 0.1)])
def test_sparse_zero_count_per_column(rows, cols, sparsity):
    k = kinit.sparse_(kiln.empty(rows, cols), sparsity)
    t = torch.nn.init.sparse_(torch.empty(rows, cols), sparsity)
    expected = math.ceil(sparsity * rows)
    assert (k.numpy() == 0).sum(0).tolist() == (t.numpy() == 0).sum(0).tolist() == [expected] * cols


def test_sparse_values_are_normal_with_std():
    k = kinit.sparse_(kiln.empty(400, 300), 0.25, std=0.5).numpy()
    nonzero = k[k != 0]
    assert nonzero.size == 300 * 300
    assert abs(nonzero.mean()) < 0.01 and abs(nonzero.std() - 0.5) < 0.01


def test_sparse_generator():
    """The normal values come from generator= (the zero positions, as in torch, from the default generator)."""
    def draw(seed):
        kiln.manual_seed(123)
        return kinit.sparse_(kiln.empty(20, 5), 0.0, generator=kiln.Generator().manual_seed(seed)).numpy()

    assert np.array_equal(draw(1), draw(1)) and not np.array_equal(draw(1), draw(2))


DEPRECATED = [("uniform", (), dict(a=-1, b=1)), ("normal", (), dict(std=0.5)), ("constant", (0.25,), {}),
              ("eye", (), {}), ("dirac", (), {}), ("xavier_uniform", (), dict(gain=2.0)), ("xavier_normal", (), {}),
              ("kaiming_uniform", (), dict(a=0.1)), ("kaiming_normal", (), dict(mode="fan_out")),
              ("orthogonal", (), {}), ("sparse", (0.5,), {})]


@pytest.mark.parametrize("name,args,kwargs", DEPRECATED, ids=[d[0] for d in DEPRECATED])
def test_deprecated_aliases(name, args, kwargs):
    shape = (4, 3, 3) if name == "dirac" else (6, 4)
    messages = []
    for module in (kinit, torch.nn.init):
        fn = getattr(module, name)
        assert fn.__name__ == name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tensor = (kiln if module is kinit else torch).empty(*shape)
            assert fn(tensor, *args, **kwargs) is tensor
        assert len(caught) == 1 and caught[0].category is FutureWarning and caught[0].filename == __file__
        messages.append(str(caught[0].message))
    assert messages[0] == messages[1] == f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."


@pytest.mark.parametrize("name", ["uniform", "normal", "xavier_uniform", "kaiming_normal", "orthogonal"])
def test_deprecated_alias_draws_what_the_new_name_draws(name):
    def draw(fn):
        return fn(kiln.empty(5, 4), generator=kiln.Generator().manual_seed(7)).numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = draw(getattr(kinit, name))
    assert np.array_equal(old, draw(getattr(kinit, name + "_")))


def test_no_grad_helpers():
    g = kiln.Generator().manual_seed(3)
    t = kiln.empty(1000)
    kinit._no_grad_uniform_(t, -2.0, -1.0, g)
    assert float(t.min()) >= -2.0 and float(t.max()) < -1.0
    kinit._no_grad_normal_(t, 5.0, 0.1)
    assert abs(float(t.mean()) - 5.0) < 0.05
    kinit._no_grad_trunc_normal_(t, 0.0, 1.0, -0.5, 0.5)
    assert float(t.min()) >= -0.5 and float(t.max()) <= 0.5
    assert kinit._no_grad_fill_(t, 2.5).tolist() == [2.5] * 1000
    assert kinit._no_grad_zero_(t).tolist() == [0.0] * 1000
    p = kiln.nn.Parameter(kiln.empty(3))
    kinit._no_grad_fill_(p, 1.0)
    assert p.grad_fn is None and p.requires_grad


NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                  "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
@pytest.mark.parametrize("param", [None, 0, 0.2, 3, math.sqrt(5)])
def test_calculate_gain_every_nonlinearity(nonlinearity, param):
    k, t = kinit.calculate_gain(nonlinearity, param), torch.nn.init.calculate_gain(nonlinearity, param)
    assert k == t and type(k) is type(t)


@pytest.mark.parametrize("nonlinearity,param", [("swish", None), ("gelu", None), ("leaky_relu", True),
                                                ("leaky_relu", "0.1"), ("leaky_relu", [0.1]), ("Relu", None),
                                                (None, None)])
def test_calculate_gain_errors(nonlinearity, param):
    assert_same_error(lambda: kinit.calculate_gain(nonlinearity, param),
                      lambda: torch.nn.init.calculate_gain(nonlinearity, param))


@pytest.mark.parametrize("name,kwargs", [("uniform_", {}), ("normal_", {}), ("trunc_normal_", {}),
                                         ("xavier_uniform_", {}), ("xavier_normal_", {}), ("kaiming_uniform_", {}),
                                         ("kaiming_normal_", {}), ("orthogonal_", {}), ("sparse_", dict(sparsity=0.0))])
def test_generator_argument(name, kwargs):
    """Every initialiser torch gives generator= takes it: one seed, one draw."""
    import inspect

    assert "generator" in inspect.signature(getattr(torch.nn.init, name)).parameters
    assert "generator" in inspect.signature(getattr(kinit, name)).parameters

    def draw(seed):
        return getattr(kinit, name)(kiln.empty(6, 5), generator=kiln.Generator().manual_seed(seed), **kwargs).numpy()

    assert np.array_equal(draw(11), draw(11)) and not np.array_equal(draw(11), draw(12))
