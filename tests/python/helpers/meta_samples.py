"""Hand-written sample calls for the ops whose schema alone does not say which arguments
their CPU kernel accepts (meta_cases.py builds the others): complex inputs, int32 pivots,
saved statistics of another shape, RNN and attention tensors whose sizes must agree, a
`reduce` name other than the generic "mean". meta_cases.candidates tries an op's entry
here before the generated candidates.

Each entry maps an op's full name to a function returning (args, kwargs); the function
builds fresh CPU tensors each call.
"""

from __future__ import annotations

import kiln


def _rand(*shape, dtype=None):
    t = kiln.rand(shape) * 0.5 + 0.5
    return t if dtype is None else t.to(dtype)


def _complex(*shape):
    return _rand(*shape, dtype=kiln.complex64)


def _int32(values):
    return kiln.tensor(values, dtype=kiln.int32)


def _index(*shape):
    return kiln.zeros(shape, dtype=kiln.int64)


def _scalar(value, dtype=kiln.float32):
    return kiln.tensor(value, dtype=dtype)


def _group_norm_backward(with_weight=True):
    grad_out, x = _rand(2, 4, 3, 3), _rand(2, 4, 3, 3)
    stats = (_rand(2, 2), _rand(2, 2))
    return ([grad_out, x, _rand(4)] if with_weight else [grad_out, x]) + [*stats, 2], {}


def _lstm_sequence_backward():
    T, B, H = 3, 2, 4
    return [_rand(T, B, H), _rand(B, H), _rand(B, H), _rand(B, H), _rand(B, H), _rand(H, 4 * H), _rand(T, B, H),
            _rand(T, B, 4 * H), _rand(T, B, H), False], {}


def _flash_dropout_backward():
    q = _rand(2, 3, 4, 5)
    return [_rand(2, 3, 4, 5), q, _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4), 0.5, False,
            _scalar(0, kiln.int64), _scalar(0, kiln.int64)], {}


def _batch_norm_stats():
    return [_rand(4), _rand(4)]


def _max_pool_backward():
    x = _rand(2, 3, 6, 6)
    _, indices = kiln.nn.functional.max_pool2d(x, 2, return_indices=True)
    return [_rand(2, 3, 3, 3), x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices], {}


def _flash_backward():
    return [_rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5), _rand(2, 3, 4, 5),
            _rand(2, 3, 4), 0.0, False], {}


def _out():
    return kiln.empty(0)


SAMPLES = {
    "_fft_c2c": lambda: ([_complex(3, 4), [1], 0, True], {}),
    "_fft_c2r": lambda: ([_complex(3, 3), [1], 0, 4], {}),
    "_fft_r2c": lambda: ([_rand(3, 4), [1], 0, True], {}),
    "view_as_real": lambda: ([_complex(3, 4)], {}),
    "view_as_complex": lambda: ([_rand(3, 2)], {}),
    "one_hot": lambda: ([_index(3, 4), 3], {}),
    "_lu_pivots_to_permutation": lambda: ([_int32([[1, 2, 3], [3, 3, 3]]), 3], {}),
    "linalg_ldl_solve": lambda: ([_rand(3, 3), _int32([1, 2, 3]), _rand(3, 2)], {}),
    "_group_norm_backward": _group_norm_backward,
    "_group_norm_backward_input": _group_norm_backward,
    "_group_norm_backward_weight": lambda: _group_norm_backward(with_weight=False),
    "native_group_norm": lambda: ([_rand(2, 4, 3, 3), _rand(4), _rand(4), 2, 4, 9, 2, 1e-5], {}),
    "group_norm": lambda: ([_rand(2, 4, 3, 3), 2, _rand(4), _rand(4)], {}),
    "_lstm_cell_fused": lambda: ([_rand(2, 12), _rand(2, 3)], {}),
    "_lstm_cell_fused_backward": lambda: ([_rand(2, 3), _rand(2, 3), _rand(2, 12), _rand(2, 3), _rand(2, 3)], {}),
    "_gru_cell_fused": lambda: ([_rand(2, 9), _rand(2, 9), _rand(2, 3)], {}),
    "_gru_cell_fused_backward": lambda: ([_rand(2, 3), _rand(2, 9), _rand(2, 9), _rand(2, 3)], {}),
    "_lstm_sequence": lambda: ([_rand(3, 2, 16), _rand(2, 4), _rand(2, 4), _rand(4, 16), False], {}),
    "_lstm_sequence_backward": _lstm_sequence_backward,
    "_scaled_dot_product_flash_attention_dropout_for_cpu_backward": _flash_dropout_backward,
    "avg_pool2d_backward": lambda: ([_rand(2, 3, 3, 3), _rand(2, 3, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None],
                                    {}),
    "col2im": lambda: ([_rand(2, 4, 9), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]], {}),
    "index_fill.int_Tensor": lambda: ([_rand(3, 4), 0, _index(2), _scalar(2.0)], {}),
    "index_fill_.int_Tensor": lambda: ([_rand(3, 4), 0, _index(2), _scalar(2.0)], {}),
    "index_fill.int_Tensor_out": lambda: ([_rand(3, 4), 0, _index(2), _scalar(2.0)], {"out": _out()}),
    "masked_fill.Tensor": lambda: ([_rand(3, 4), _rand(3, 4) > 0.75, _scalar(2.0)], {}),
    "masked_fill_.Tensor": lambda: ([_rand(3, 4), _rand(3, 4) > 0.75, _scalar(2.0)], {}),
    "scatter.reduce": lambda: ([_rand(3, 4), 0, _index(2, 4), _rand(2, 4)], {"reduce": "add"}),
    "scatter_.reduce": lambda: ([_rand(3, 4), 0, _index(2, 4), _rand(2, 4)], {"reduce": "multiply"}),
    "scatter.reduce_out": lambda: ([_rand(3, 4), 0, _index(2, 4), _rand(2, 4)], {"reduce": "add", "out": _out()}),
    "scatter.value_reduce": lambda: ([_rand(3, 4), 0, _index(2, 4), 2.0], {"reduce": "add"}),
    "scatter_.value_reduce": lambda: ([_rand(3, 4), 0, _index(2, 4), 2.0], {"reduce": "multiply"}),
    "scatter.value_reduce_out": lambda: ([_rand(3, 4), 0, _index(2, 4), 2.0], {"reduce": "add", "out": _out()}),
    "addmv": lambda: ([_rand(3), _rand(3, 4), _rand(4)], {}),
    "addmv_": lambda: ([_rand(3), _rand(3, 4), _rand(4)], {}),
    "addmv.out": lambda: ([_rand(3), _rand(3, 4), _rand(4)], {"out": _out()}),
    "mv": lambda: ([_rand(3, 4), _rand(4)], {}),
    "mv.out": lambda: ([_rand(3, 4), _rand(4)], {"out": _out()}),
    "addr_": lambda: ([_rand(3, 4), _rand(3), _rand(4)], {}),
    "batch_norm": lambda: ([_rand(2, 4, 3), _rand(4), _rand(4), *_batch_norm_stats(), True, 0.1, 1e-5, False], {}),
    "native_batch_norm": lambda: ([_rand(2, 4, 3), _rand(4), _rand(4), *_batch_norm_stats(), True, 0.1, 1e-5], {}),
    "_batch_norm_backward_input": lambda: ([_rand(2, 4, 3), _rand(2, 4, 3), _rand(4), *_batch_norm_stats(),
                                            *_batch_norm_stats(), True, 1e-5], {}),
    "_batch_norm_backward_weight": lambda: ([_rand(2, 4, 3), _rand(2, 4, 3), *_batch_norm_stats(),
                                             *_batch_norm_stats(), True, 1e-5], {}),
    "_conv2d_backward_input": lambda: ([_rand(2, 4, 4, 4), _rand(4, 3, 3, 3), [2, 3, 6, 6], [1, 1], [0, 0], [1, 1], 1],
                                       {}),
    "_conv2d_backward_weight": lambda: ([_rand(2, 4, 4, 4), _rand(2, 3, 6, 6), [4, 3, 3, 3], [1, 1], [0, 0], [1, 1], 1],
                                        {}),
    "_embedding_dense_backward": lambda: ([_rand(2, 3, 5), _index(2, 3), [4, 5], -1, False], {}),
    "_scaled_dot_product_flash_attention_for_cpu_backward": _flash_backward,
    "max_pool2d_with_indices_backward": _max_pool_backward,
    "nll_loss_backward": lambda: ([_rand(), _rand(3, 4), _index(3), None, 1, -100, _rand()], {}),
    "split.sizes": lambda: ([_rand(3, 4), [1, 2]], {}),
    "unflatten.int": lambda: ([_rand(3, 4), 1, [2, 2]], {}),
    "to.device": lambda: ([_rand(3, 4)], {"device": kiln.device("cpu"), "dtype": kiln.float64}),
}
