"""kiln.library: custom ops defined from Python ride the dispatcher like built-ins."""

import inspect

import numpy as np
import pytest

import kiln
from kiln import Tensor
from kiln.library import custom_op, infer_schema


@pytest.fixture
def scale_op():
    @custom_op("kilntest::scale", mutates_args=())
    def scale(x: Tensor, factor: float, *, offset: int = 0) -> Tensor:
        return kiln.tensor(x.numpy() * factor + offset)

    yield scale
    scale._destroy()


def test_custom_op_is_called_through_the_dispatcher(scale_op):
    x = kiln.tensor([1.0, 2.0, 3.0])
    for call in (scale_op, kiln.ops.kilntest.scale):
        out = call(x, 2.0, offset=1)
        np.testing.assert_allclose(out.numpy(), [3.0, 5.0, 7.0])
    assert kiln.ops.kilntest.scale.schemas == ["scale(Tensor x, float factor, *, int offset=0) -> Tensor"]
    assert scale_op.schema == "scale(Tensor x, float factor, *, int offset=0) -> Tensor"


def test_custom_op_defaults_and_wrong_arguments(scale_op):
    x = kiln.tensor([1.0])
    np.testing.assert_allclose(kiln.ops.kilntest.scale(x, 3).numpy(), [3.0])  # int accepted for float
    with pytest.raises(TypeError, match="kilntest::scale"):
        kiln.ops.kilntest.scale(x)
    with pytest.raises(TypeError, match="must be Tensor"):
        kiln.ops.kilntest.scale("nope", 1.0)


def test_register_fake_and_autograd_are_stored(scale_op):
    @scale_op.register_fake
    def _(x, factor, *, offset=0):
        return kiln.empty_like(x)

    def backward(ctx, grad):
        return grad * ctx.factor, None

    def setup_context(ctx, inputs, output):
        ctx.factor = inputs[1]

    scale_op.register_autograd(backward, setup_context=setup_context)
    stored = kiln.library.get_custom_op("kilntest::scale")
    assert stored is scale_op
    assert stored._fake_fn is _
    assert stored._backward_fn is backward and stored._setup_context_fn is setup_context


def test_mutating_custom_op_bumps_the_version():
    @custom_op("kilntest::fill_ones", mutates_args=("x",))
    def fill_ones(x: Tensor) -> None:
        x.numpy()[...] = 1.0

    try:
        assert fill_ones.schema == "fill_ones(Tensor(a!) x) -> ()"
        x = kiln.zeros(3)
        v = x._version
        assert fill_ones(x) is None
        np.testing.assert_allclose(x.numpy(), [1.0, 1.0, 1.0])
        assert x._version == v + 1
    finally:
        fill_ones._destroy()


def test_multiple_returns_and_lists():
    @custom_op("kilntest::split2", mutates_args=())
    def split2(x: Tensor, sizes: list[int]) -> tuple[Tensor, Tensor]:
        a = x.numpy()
        return kiln.tensor(a[: sizes[0]]), kiln.tensor(a[sizes[0] :])

    try:
        first, second = kiln.ops.kilntest.split2(kiln.arange(5.0), [2, 3])
        assert first.tolist() == [0.0, 1.0] and second.tolist() == [2.0, 3.0, 4.0]
    finally:
        split2._destroy()


def test_python_errors_in_kernels_propagate():
    @custom_op("kilntest::boom", mutates_args=())
    def boom(x: Tensor) -> Tensor:
        raise ValueError("kernel exploded")

    try:
        with pytest.raises(ValueError, match="kernel exploded"):
            boom(kiln.zeros(1))
    finally:
        boom._destroy()


def test_redefining_after_destroy_works_and_duplicates_fail():
    def make():
        @custom_op("kilntest::dup", mutates_args=())
        def dup(x: Tensor) -> Tensor:
            return x

        return dup

    first = make()
    with pytest.raises(RuntimeError, match="already defined"):
        make()
    first._destroy()
    second = make()
    second._destroy()


@pytest.mark.parametrize(
    "fn_src, expected",
    [
        ("def f(x: Tensor, y: Optional[Tensor] = None) -> Tensor: ...", "(Tensor x, Tensor? y=None) -> Tensor"),
        ("def f(xs: list[Tensor], dims: Sequence[int]) -> list[Tensor]: ...", "(Tensor[] xs, int[] dims) -> Tensor[]"),
        ("def f(x: Tensor, flag: bool = True, name: str = 'a') -> None: ...",
         '(Tensor x, bool flag=True, str name="a") -> ()'),
        ("def f(x: Tensor, d: kiln.dtype) -> tuple[Tensor, Tensor]: ...", "(Tensor x, ScalarType d) -> (Tensor, Tensor)"),
    ],
)
def test_infer_schema(fn_src, expected):
    from collections.abc import Sequence  # noqa: F401
    from typing import Optional  # noqa: F401

    scope = {"Tensor": Tensor, "kiln": kiln, "Optional": Optional, "Sequence": Sequence}
    exec(fn_src, scope)
    assert infer_schema(scope["f"], mutates_args=()) == expected


def test_infer_schema_errors():
    def no_annotation(x) -> Tensor: ...

    def no_return(x: Tensor): ...

    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        infer_schema(no_annotation, mutates_args=())
    with pytest.raises(ValueError, match="No return type annotation"):
        infer_schema(no_return, mutates_args=())
    with pytest.raises(ValueError, match="qualified name"):
        custom_op("noname", mutates_args=())


def test_builtin_ops_by_name():
    x = kiln.tensor([1.0, 2.0])
    out = kiln.ops.kiln.add(x, x, alpha=2)
    assert out.tolist() == [3.0, 6.0]
    assert kiln.ops.kiln.add.Tensor(x, x).tolist() == [2.0, 4.0]
    with pytest.raises(AttributeError):
        kiln.ops.kiln.definitely_not_an_op
