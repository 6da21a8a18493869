"""Bad input to the ops given meta implementations in session 27 (issue 23): on meta
tensors each raises the CPU kernel's exception, type and message, because the checks
that need only metadata are the meta function (Note [Meta kernels], tools/opgen).
Checks that read values (a pivot's range, a negative std, probabilities) cannot run on
meta and are not here; neither can an output size that depends on values
(one_hot with num_classes=-1), which raises the dynamic_output_shape error instead.
"""

from __future__ import annotations

import pytest

import kiln
from meta_cases import to_meta


def _rand(*shape, dtype=None):
    t = kiln.rand(shape)
    return t if dtype is None else t.to(dtype)


def _index(*shape):
    return kiln.zeros(shape, dtype=kiln.int64)


# (op full name, args, kwargs): each call the CPU kernel refuses.
BAD_CALLS = [
    ("_fft_c2c", lambda: ([_rand(3, 4), [1], 0, True], {})),
    ("_fft_c2r", lambda: ([_rand(3, 3, dtype=kiln.complex64), [1], 0, 9], {})),
    ("_fft_r2c", lambda: ([_index(3, 4), [1], 0, True], {})),
    ("view_as_complex", lambda: ([_rand(3, 3)], {})),
    ("view_as_real", lambda: ([_rand(3, 2)], {})),
    ("one_hot", lambda: ([_rand(3), 3], {})),
    ("_lu_pivots_to_permutation", lambda: ([_index(3), 3], {})),
    ("linalg_ldl_solve", lambda: ([_rand(3, 3), kiln.ones(3, dtype=kiln.int32), _rand(2, 2)], {})),
    ("native_group_norm", lambda: ([_rand(2, 4, 3, 3), None, None, 2, 4, 9, 3, 1e-5], {})),
    ("_group_norm_backward", lambda: ([_rand(2, 4, 3), _rand(2, 4, 3), None, _rand(3), _rand(4), 2], {})),
    ("_group_norm_backward_weight", lambda: ([_rand(2, 4, 3), _rand(2, 4, 3), _rand(4), _rand(3), 2], {})),
    ("_lstm_cell_fused", lambda: ([_rand(2, 11), _rand(2, 3)], {})),
    ("_gru_cell_fused", lambda: ([_rand(2, 9), _rand(2, 8), _rand(2, 3)], {})),
    ("_lstm_sequence", lambda: ([_rand(3, 2, 16), _rand(2, 4), _rand(2, 4), _rand(4, 12), False], {})),
    ("_scaled_dot_product_flash_attention_dropout_for_cpu",
     lambda: ([_rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), 1.5], {})),
    ("_scaled_dot_product_flash_attention_dropout_for_cpu_backward",
     lambda: ([_rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5),
               _rand(2, 3, 4), 0.5, False, kiln.tensor(0.0), kiln.tensor(0, dtype=kiln.int64)], {})),
    ("avg_pool2d_backward",
     lambda: ([_rand(2, 3, 2, 2), _rand(2, 3, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None], {})),
    ("col2im", lambda: ([_rand(2, 4, 8), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]], {})),
    ("im2col", lambda: ([_rand(4, 4), [2, 2], [1, 1], [0, 0], [1, 1]], {})),
    ("index_fill.int_Tensor", lambda: ([_rand(3, 4), 0, _index(2), _rand(2)], {})),
    ("masked_fill.Tensor", lambda: ([_rand(3, 4), _rand(3, 4) > 0.5, _rand(2)], {})),
    ("multinomial", lambda: ([_rand(2, 3, 4), 2], {})),
    ("multinomial", lambda: ([_rand(3, 4), 5], {})),
    ("repeat_interleave.self_int", lambda: ([_rand(3, 4), -1], {})),
    ("scatter.reduce", lambda: ([_rand(3, 4), 0, _index(2, 4), _rand(2, 4)], {"reduce": "mean"})),
    ("scatter_reduce.two", lambda: ([_rand(3, 4), 0, _index(2, 4), _rand(2, 4), "avg"], {})),
    ("eye", lambda: ([-1], {})),
    ("logspace", lambda: ([0, 1, -2], {})),
    ("logspace", lambda: ([0, 1, 3], {"dtype": kiln.bool})),
    ("linspace.Tensor_Tensor", lambda: ([_rand(2), kiln.tensor(1.0), 3], {})),
    ("_linalg_eig", lambda: ([_rand(3, 4)], {})),
    ("_linalg_eigh", lambda: ([_rand(3, 3), "X"], {})),
    ("_linalg_svd", lambda: ([_index(3, 3)], {})),
    ("_linalg_solve", lambda: ([_rand(3, 4), _rand(3, 4), "linalg.solve"], {})),
    ("linalg_cholesky_ex", lambda: ([_rand(3, 4)], {})),
    ("linalg_qr", lambda: ([_rand(3, 4), "full"], {})),
    ("linalg_solve_triangular", lambda: ([_rand(3, 3), _rand(2, 4)], {"upper": True})),
    ("linalg_lu_factor_ex", lambda: ([_rand(3)], {})),
    ("linalg_ldl_factor_ex", lambda: ([_rand(3, 4)], {})),
    ("geqrf", lambda: ([_rand(3)], {})),
    ("_mode", lambda: ([_rand(3, 0), 1], {})),
    ("_fused_adam_", lambda: ([[_rand(3)], [_rand(3)], [_rand(3)], [_rand(3)], []],
                              {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0, "eps": 1e-8,
                               "amsgrad": False, "maximize": False, "step": 0})),
    ("_fused_sgd_", lambda: ([[_rand(3)], [_rand(4)], []],
                             {"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
                              "maximize": False, "is_first_step": True})),
    ("addmv.out", lambda: ([_rand(3), _rand(3, 4), _rand(5)], {"out": kiln.empty(0)})),
]


def _call(name, args, kwargs):
    return kiln._C._call_op(f"kiln::{name}", tuple(args), kwargs)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("name,build", BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_CALLS)])
def test_meta_raises_the_cpu_kernels_error(name, build):
    args, kwargs = build()
    cpu = _error(lambda: _call(name, args, kwargs))
    assert cpu is not None, f"{name}: the CPU kernel accepted the bad call"
    meta_kwargs = to_meta(kwargs)
    if name in ("eye", "logspace", "linspace.Tensor_Tensor"):
        meta_kwargs["device"] = kiln.device("meta")
    meta = _error(lambda: _call(name, to_meta(args), meta_kwargs))
    assert meta == cpu


def test_one_hot_without_num_classes_on_meta_is_a_dynamic_output_shape():
    with pytest.raises(NotImplementedError, match="num_classes=-1.*dynamic_output_shape"):
        kiln.nn.functional.one_hot(kiln.zeros(3, dtype=kiln.int64, device="meta"))
    assert kiln.nn.functional.one_hot(kiln.zeros(3, dtype=kiln.int64, device="meta"), 4).shape == (3, 4)


def test_tensor_bounds_on_meta_need_a_meta_result():
    start, end = kiln.tensor(0.0).to("meta"), kiln.tensor(1.0).to("meta")
    assert kiln.linspace(start, end, 5, device="meta").shape == (5,)
    assert kiln.logspace(start, end, 4, device="meta").shape == (4,)
    with pytest.raises(RuntimeError, match="tensor bounds are read on the CPU"):
        kiln.linspace(start, end, 5)
