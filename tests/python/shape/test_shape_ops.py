"""Shape ops against torch: every case in every dtype and input layout.

A case is (id, input shapes, fn(module, *inputs)). Each runs on kiln and torch
with equal inputs (shape_cases.make) and must agree: values, shape, dtype,
strides and contiguity, and for views, storage sharing at the same offset, a
shared version counter and write-through (shape_cases.compare_outcome); where
torch raises, kiln raises the same exception with the same text.
"""

import pytest
import torch

import kiln
from shape_cases import DTYPES, LAYOUTS, compare_outcome, make


def _idx(m, values):
    return m.tensor(values)


# (id, input shapes, fn(module, *inputs))
VIEW_CASES = [
    ("view", [(2, 3, 4)], lambda m, x: x.view(6, 4)),
    ("view_infer", [(2, 3, 4)], lambda m, x: x.view(-1)),
    ("view_split_dims", [(2, 3, 4)], lambda m, x: x.view(2, 3, 2, 2)),
    ("view_zero_dim", [()], lambda m, x: x.view(1, 1)),
    ("view_empty", [(0, 4)], lambda m, x: x.view(4, 0)),
    ("view_as", [(2, 3, 4)], lambda m, x: x.view_as(m.zeros(4, 6))),
    ("view_dtype_same_size", [(2, 4)], lambda m, x: x.view(m.int16 if x.element_size() == 2 else x.dtype)),
    ("view_dtype_smaller", [(2, 4)], lambda m, x: x.view(m.uint8)),
    ("view_dtype_larger", [(2, 4)], lambda m, x: x.view(m.int64)),
    ("reshape", [(2, 3, 4)], lambda m, x: x.reshape(4, 6)),
    ("reshape_function", [(2, 3, 4)], lambda m, x: m.reshape(x, (3, -1))),
    ("reshape_flat", [(2, 3, 4)], lambda m, x: x.reshape(-1)),
    ("reshape_same", [(2, 3, 4)], lambda m, x: x.reshape(2, 3, 4)),
    ("reshape_zero_dim", [()], lambda m, x: x.reshape(1, 1, 1)),
    ("reshape_empty", [(0, 4)], lambda m, x: x.reshape(2, 0, 2)),
    ("reshape_as", [(2, 3, 4)], lambda m, x: x.reshape_as(m.zeros(6, 4))),
    ("flatten", [(2, 3, 4)], lambda m, x: x.flatten()),
    ("flatten_range", [(2, 3, 4)], lambda m, x: m.flatten(x, 1, 2)),
    ("flatten_negative", [(2, 3, 4, 1)], lambda m, x: x.flatten(-3, -2)),
    ("flatten_one_dim", [(2, 3, 4)], lambda m, x: x.flatten(1, 1)),
    ("flatten_zero_dim", [()], lambda m, x: x.flatten()),
    ("flatten_empty", [(0, 1, 3, 0)], lambda m, x: x.flatten(1, 2)),
    ("unflatten", [(2, 12)], lambda m, x: x.unflatten(1, (3, 4))),
    ("unflatten_infer", [(2, 12)], lambda m, x: m.unflatten(x, -1, (-1, 2))),
    ("unflatten_front", [(2, 12)], lambda m, x: x.unflatten(0, (1, 2, 1))),
    ("ravel", [(2, 3, 4)], lambda m, x: m.ravel(x)),
    ("permute", [(2, 3, 4)], lambda m, x: x.permute(2, 0, 1)),
    ("permute_function", [(2, 3, 4)], lambda m, x: m.permute(x, (-1, 0, 1))),
    ("permute_zero_dim", [()], lambda m, x: x.permute(())),
    ("transpose", [(2, 3, 4)], lambda m, x: x.transpose(0, 2)),
    ("transpose_negative", [(2, 3, 4)], lambda m, x: m.transpose(x, -1, -2)),
    ("swapaxes", [(2, 3, 4)], lambda m, x: m.swapaxes(x, 0, 1)),
    ("swapdims", [(2, 3, 4)], lambda m, x: x.swapdims(-3, -1)),
    ("t", [(3, 4)], lambda m, x: x.t()),
    ("t_1d", [(4,)], lambda m, x: m.t(x)),
    ("t_0d", [()], lambda m, x: x.t()),
    ("T", [(3, 4)], lambda m, x: x.T),
    ("mT", [(2, 3, 4)], lambda m, x: x.mT),
    ("mH", [(2, 3, 4)], lambda m, x: x.mH),
    ("H", [(3, 4)], lambda m, x: x.H),
    ("adjoint", [(2, 3, 4)], lambda m, x: m.adjoint(x)),
    ("squeeze", [(1, 3, 1, 4)], lambda m, x: x.squeeze()),
    ("squeeze_dim", [(1, 3, 1, 4)], lambda m, x: x.squeeze(2)),
    ("squeeze_dim_not_one", [(1, 3, 1, 4)], lambda m, x: m.squeeze(x, 1)),
    ("squeeze_dims", [(1, 3, 1, 4)], lambda m, x: x.squeeze((0, -2))),
    ("squeeze_zero_dim", [()], lambda m, x: x.squeeze(0)),
    ("squeeze_empty", [(0, 1, 2)], lambda m, x: x.squeeze()),
    ("unsqueeze", [(2, 3)], lambda m, x: x.unsqueeze(1)),
    ("unsqueeze_last", [(2, 3)], lambda m, x: m.unsqueeze(x, -1)),
    ("unsqueeze_front", [(2, 3)], lambda m, x: x.unsqueeze(-3)),
    ("unsqueeze_zero_dim", [()], lambda m, x: x.unsqueeze(0)),
    ("expand", [(1, 3)], lambda m, x: x.expand(4, 3)),
    ("expand_keep", [(2, 1, 3)], lambda m, x: x.expand(5, -1, 4, -1)),
    ("expand_zero_dim", [()], lambda m, x: x.expand(2, 2)),
    ("expand_to_empty", [(1, 3)], lambda m, x: x.expand(0, 3)),
    ("expand_as", [(3, 1)], lambda m, x: x.expand_as(m.zeros(2, 3, 4))),
    ("broadcast_to", [(3, 1)], lambda m, x: m.broadcast_to(x, (2, 3, 4))),
    ("broadcast_tensors", [(2, 1), (3,)], lambda m, a, b: m.broadcast_tensors(a, b)),
    ("broadcast_tensors_same", [(2, 3), (2, 3)], lambda m, a, b: m.broadcast_tensors(a, b)),
    ("narrow", [(4, 5)], lambda m, x: x.narrow(1, 1, 3)),
    ("narrow_negative_start", [(4, 5)], lambda m, x: m.narrow(x, 0, -2, 2)),
    ("narrow_empty", [(4, 5)], lambda m, x: x.narrow(1, 5, 0)),
    ("narrow_tensor_start", [(4, 5)], lambda m, x: x.narrow(1, m.tensor(2), 2)),
    ("select", [(2, 3, 4)], lambda m, x: x.select(1, -1)),
    ("select_function", [(2, 3, 4)], lambda m, x: m.select(x, 2, 0)),
    ("split", [(5, 4)], lambda m, x: x.split(2)),
    ("split_dim", [(5, 4)], lambda m, x: m.split(x, 3, 1)),
    ("split_sizes", [(5, 4)], lambda m, x: x.split([1, 4])),
    ("split_sizes_function", [(5, 4)], lambda m, x: m.split(x, [2, 0, 3], 0)),
    ("split_larger", [(5, 4)], lambda m, x: x.split(10)),
    ("split_empty_dim", [(0, 4)], lambda m, x: x.split(0)),
    ("split_with_sizes", [(5, 4)], lambda m, x: m.split_with_sizes(x, [1, 3], 1)),
    ("chunk", [(5, 4)], lambda m, x: x.chunk(2)),
    ("chunk_dim", [(5, 4)], lambda m, x: m.chunk(x, 3, -1)),
    ("chunk_many", [(5, 4)], lambda m, x: x.chunk(7)),
    ("chunk_empty", [(0, 3)], lambda m, x: x.chunk(3)),
    ("unbind", [(2, 3)], lambda m, x: x.unbind()),
    ("unbind_dim", [(2, 3)], lambda m, x: m.unbind(x, -1)),
    ("tensor_split_sections", [(7, 3)], lambda m, x: x.tensor_split(3)),
    ("tensor_split_indices", [(7, 3)], lambda m, x: m.tensor_split(x, [1, 4])),
    ("tensor_split_unordered", [(7, 3)], lambda m, x: x.tensor_split([5, 2, 9])),
    ("tensor_split_tensor", [(7, 3)], lambda m, x: x.tensor_split(_idx(m, [2, 5]))),
    ("tensor_split_tensor_sections", [(7, 3)], lambda m, x: x.tensor_split(_idx(m, 2), 1)),
    ("movedim", [(2, 3, 4)], lambda m, x: x.movedim(0, 2)),
    ("movedim_lists", [(2, 3, 4)], lambda m, x: m.movedim(x, (0, 1), (2, 0))),
    ("moveaxis", [(2, 3, 4)], lambda m, x: m.moveaxis(x, -1, 0)),
    ("movedim_zero_dim", [()], lambda m, x: x.movedim(0, -1)),
    ("as_strided", [(3, 4)], lambda m, x: x.as_strided((2, 2), (1, 2))),
    ("as_strided_offset", [(3, 4)], lambda m, x: m.as_strided(x, (2,), (3,), 1)),
    ("diagonal", [(3, 4)], lambda m, x: x.diagonal()),
    ("diagonal_above", [(3, 4)], lambda m, x: m.diagonal(x, 1)),
    ("diagonal_below", [(3, 4)], lambda m, x: x.diagonal(-1)),
    ("diagonal_dims", [(2, 3, 4)], lambda m, x: x.diagonal(0, 0, 2)),
    ("diagonal_reversed_dims", [(2, 3, 4)], lambda m, x: x.diagonal(2, -1, 0)),
    ("diagonal_off_the_end", [(3, 4)], lambda m, x: x.diagonal(5)),
    ("detach", [(2, 3)], lambda m, x: x.detach()),
    ("detach_function", [(2, 3)], lambda m, x: m.detach(x)),
    ("contiguous", [(2, 3, 4)], lambda m, x: x.contiguous()),
]

COPY_CASES = [
    ("clone", [(2, 3, 4)], lambda m, x: x.clone()),
    ("clone_contiguous", [(2, 3, 4)], lambda m, x: m.clone(x, memory_format=m.contiguous_format)),
    ("clone_preserve", [(2, 3, 4)], lambda m, x: x.clone(memory_format=m.preserve_format)),
    ("clone_channels_last", [(2, 3, 4, 5)], lambda m, x: x.clone(memory_format=m.channels_last)),
    ("contiguous_channels_last", [(2, 3, 4, 5)], lambda m, x: x.contiguous(memory_format=m.channels_last)),
    ("clone_zero_dim", [()], lambda m, x: x.clone()),
    ("clone_empty", [(2, 0, 3)], lambda m, x: x.clone()),
    ("cat", [(2, 3), (4, 3)], lambda m, a, b: m.cat([a, b])),
    ("cat_dim1", [(2, 3), (2, 5)], lambda m, a, b: m.cat((a, b), 1)),
    ("cat_negative_dim", [(2, 3), (2, 5)], lambda m, a, b: m.cat([a, b], dim=-1)),
    ("cat_three", [(2, 1, 3), (2, 4, 3), (2, 2, 3)], lambda m, a, b, c: m.cat([a, b, c], 1)),
    ("cat_skips_empty_1d", [(2, 3), (0,)], lambda m, a, b: m.cat([b, a, b], 1)),
    ("cat_all_empty_1d", [(0,), (0,)], lambda m, a, b: m.cat([a, b])),
    ("cat_empty_dim", [(2, 0, 3), (2, 1, 3)], lambda m, a, b: m.cat([a, b], 1)),
    ("cat_one", [(2, 3)], lambda m, a: m.cat([a])),
    ("concat", [(2, 3), (1, 3)], lambda m, a, b: m.concat([a, b])),
    ("concatenate", [(2, 3), (2, 1)], lambda m, a, b: m.concatenate([a, b], -1)),
    ("stack", [(2, 3), (2, 3)], lambda m, a, b: m.stack([a, b])),
    ("stack_dim1", [(2, 3), (2, 3)], lambda m, a, b: m.stack([a, b], 1)),
    ("stack_last", [(2, 3), (2, 3)], lambda m, a, b: m.stack([a, b], -1)),
    ("stack_zero_dim", [(), ()], lambda m, a, b: m.stack([a, b])),
    ("hstack", [(3,), (2,)], lambda m, a, b: m.hstack([a, b])),
    ("hstack_2d", [(2, 3), (2, 1)], lambda m, a, b: m.hstack([a, b])),
    ("vstack", [(3,), (3,)], lambda m, a, b: m.vstack([a, b])),
    ("vstack_2d", [(2, 3), (1, 3)], lambda m, a, b: m.vstack([a, b])),
    ("dstack", [(2, 3), (2, 3)], lambda m, a, b: m.dstack([a, b])),
    ("dstack_1d", [(3,), (3,)], lambda m, a, b: m.dstack([a, b])),
    ("column_stack", [(3,), (3, 2)], lambda m, a, b: m.column_stack([a, b])),
    ("column_stack_zero_dim", [(), (1,)], lambda m, a, b: m.column_stack([a, b])),
    ("repeat", [(2, 3)], lambda m, x: x.repeat(2, 2)),
    ("repeat_new_dims", [(2, 3)], lambda m, x: x.repeat(3, 1, 2)),
    ("repeat_ones", [(2, 3)], lambda m, x: x.repeat(1, 1)),
    ("repeat_zero", [(2, 3)], lambda m, x: x.repeat(0, 2)),
    ("repeat_zero_dim", [()], lambda m, x: x.repeat(3)),
    ("repeat_empty", [(0, 3)], lambda m, x: x.repeat(2, 2)),
    ("repeat_interleave", [(2, 3)], lambda m, x: x.repeat_interleave(2)),
    ("repeat_interleave_dim", [(2, 3)], lambda m, x: m.repeat_interleave(x, 3, dim=0)),
    ("repeat_interleave_tensor", [(2, 3)], lambda m, x: x.repeat_interleave(_idx(m, [1, 0, 2]), dim=1)),
    ("repeat_interleave_scalar_tensor", [(2, 3)], lambda m, x: x.repeat_interleave(_idx(m, 2), dim=-1)),
    ("repeat_interleave_tensor_flat", [(2, 3)], lambda m, x: m.repeat_interleave(x, _idx(m, [1]))),
    ("repeat_interleave_zero", [(2, 3)], lambda m, x: x.repeat_interleave(0, dim=1)),
    ("repeat_interleave_zero_dim", [()], lambda m, x: x.repeat_interleave(2)),
    ("repeat_interleave_output_size", [(2, 3)], lambda m, x: x.repeat_interleave(2, dim=1, output_size=6)),
    ("flip", [(2, 3, 4)], lambda m, x: x.flip(0)),
    ("flip_two", [(2, 3, 4)], lambda m, x: m.flip(x, (0, 2))),
    ("flip_last", [(2, 3, 4)], lambda m, x: x.flip(-1)),
    ("flip_none", [(2, 3, 4)], lambda m, x: x.flip(())),
    ("flip_zero_dim", [()], lambda m, x: x.flip(0)),
    ("fliplr", [(2, 3, 4)], lambda m, x: m.fliplr(x)),
    ("flipud", [(2, 3)], lambda m, x: x.flipud()),
    ("roll", [(2, 3, 4)], lambda m, x: x.roll(1)),
    ("roll_dim", [(2, 3, 4)], lambda m, x: m.roll(x, -1, 0)),
    ("roll_dims", [(2, 3, 4)], lambda m, x: x.roll((1, 2), (0, 2))),
    ("roll_large_shift", [(2, 3, 4)], lambda m, x: x.roll(5, -1)),
    ("roll_same_dim_twice", [(2, 3, 4)], lambda m, x: x.roll((1, 1), (1, 1))),
    ("roll_zero_dim", [()], lambda m, x: x.roll(1)),
    ("roll_empty", [(0, 3)], lambda m, x: x.roll(1, 1)),
    ("rot90", [(3, 4)], lambda m, x: x.rot90()),
    ("rot90_twice", [(3, 4)], lambda m, x: m.rot90(x, 2)),
    ("rot90_negative", [(3, 4)], lambda m, x: x.rot90(-1)),
    ("rot90_dims", [(2, 3, 4)], lambda m, x: x.rot90(3, [2, 0])),
    ("rot90_zero", [(3, 4)], lambda m, x: x.rot90(4)),
    ("tril", [(3, 4)], lambda m, x: x.tril()),
    ("tril_above", [(3, 4)], lambda m, x: m.tril(x, 1)),
    ("tril_below", [(3, 4)], lambda m, x: x.tril(-2)),
    ("tril_far", [(3, 4)], lambda m, x: x.tril(100)),
    ("tril_batched", [(2, 3, 4)], lambda m, x: x.tril()),
    ("triu", [(3, 4)], lambda m, x: x.triu()),
    ("triu_above", [(3, 4)], lambda m, x: m.triu(x, 2)),
    ("triu_far_below", [(3, 4)], lambda m, x: x.triu(-10)),
    ("triu_batched", [(2, 4, 3)], lambda m, x: x.triu(-1)),
    ("tril_empty", [(0, 3)], lambda m, x: x.tril()),
    ("diag_embed", [(3,)], lambda m, x: x.diag_embed()),
    ("diag_embed_offset", [(2, 3)], lambda m, x: m.diag_embed(x, 1)),
    ("diag_embed_dims", [(2, 3)], lambda m, x: x.diag_embed(-1, 0, 2)),
    ("diag_vector", [(3,)], lambda m, x: m.diag(x)),
    ("diag_vector_offset", [(3,)], lambda m, x: x.diag(-2)),
    ("diag_matrix", [(3, 4)], lambda m, x: x.diag()),
    ("diag_matrix_offset", [(3, 4)], lambda m, x: m.diag(x, 1)),
]

CASES = VIEW_CASES + COPY_CASES
# Every case runs in every dtype and layout (a layout that a shape cannot take,
# such as "transposed" for a 1-D input, gives the contiguous one).
CASE_COUNT = len(CASES) * len(DTYPES) * len(LAYOUTS)


def _inputs(shapes, dtype, layout):
    pairs = [make(shape, dtype, layout, seed=i) for i, shape in enumerate(shapes)]
    return [k for k, _ in pairs], [t for _, t in pairs]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_shape_op_matches_torch(case, layout):
    name, shapes, fn = case
    for dtype in DTYPES:
        ks, ts = _inputs(shapes, dtype, layout)
        try:
            compare_outcome(lambda: fn(kiln, *ks), lambda: fn(torch, *ts), ks, ts)
        except AssertionError as error:
            raise AssertionError(f"{name} [{dtype}, {layout}]: {error}") from error


@pytest.mark.parametrize("case", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_views_never_copy_contiguous_inputs(case):
    """On contiguous float inputs every view op returns views (torch agrees), never copies."""
    name, shapes, fn = case
    ks, ts = _inputs(shapes, "float32", "contiguous")
    kind = compare_outcome(lambda: fn(kiln, *ks), lambda: fn(torch, *ts), ks, ts)
    if all(k.numel() > 0 for k in ks) and name not in ("diagonal_off_the_end", "diagonal_reversed_dims", "narrow_empty", "expand_to_empty"):
        assert kind == "view", name


# --- type promotion across cat's inputs ---------------------------------------------------

PROMOTIONS = [
    ("float32", "float64"), ("int32", "float16"), ("bool", "uint8"), ("uint8", "int8"), ("int64", "bfloat16"),
    ("float16", "bfloat16"), ("bool", "bool"), ("int16", "int32"),
]


@pytest.mark.parametrize("a,b", PROMOTIONS)
@pytest.mark.parametrize("op", ["cat", "stack", "hstack", "vstack"])
def test_cat_promotes_across_inputs(op, a, b):
    ka, ta = make((2, 3), a, "contiguous", seed=1)
    kb, tb = make((2, 3), b, "transposed", seed=2)
    compare_outcome(lambda: getattr(kiln, op)([ka, kb]), lambda: getattr(torch, op)([ta, tb]), [ka, kb], [ta, tb])


def test_cat_promotes_with_skipped_empty_input():
    ka, ta = make((2, 3), "int32", seed=1)
    kb, tb = make((0,), "float64", seed=2)
    compare_outcome(lambda: kiln.cat([ka, kb]), lambda: torch.cat([ta, tb]), [ka, kb], [ta, tb])


def test_cat_channels_last_inputs_give_channels_last():
    k1, t1 = make((2, 3, 4, 5), "float32")
    k2, t2 = make((1, 3, 4, 5), "float32", seed=3)
    ks = [k.contiguous(memory_format=kiln.channels_last) for k in (k1, k2)]
    ts = [t.contiguous(memory_format=torch.channels_last) for t in (t1, t2)]
    compare_outcome(lambda: kiln.cat(ks), lambda: torch.cat(ts), ks, ts)
    mixed_k, mixed_t = [ks[0], k2], [ts[0], t2]
    compare_outcome(lambda: kiln.cat(mixed_k), lambda: torch.cat(mixed_t), mixed_k, mixed_t)


# --- errors --------------------------------------------------------------------------------

def _x(m):
    return m.arange(24.0).view(2, 3, 4)


ERROR_CASES = [
    ("permute_length", lambda m: _x(m).permute(0, 1)),
    ("permute_duplicate", lambda m: _x(m).permute(0, 1, 1)),
    ("permute_range", lambda m: _x(m).permute(0, 1, 3)),
    ("permute_zero_dim", lambda m: m.tensor(1.0).permute(0)),
    ("t_3d", lambda m: _x(m).t()),
    ("t__3d", lambda m: _x(m).t_()),
    ("transpose_range", lambda m: _x(m).transpose(0, 3)),
    ("swapaxes_range", lambda m: _x(m).swapaxes(0, 3)),
    ("squeeze_range", lambda m: _x(m).squeeze(3)),
    ("squeeze_dims_duplicate", lambda m: _x(m).squeeze((0, 0))),
    ("squeeze_zero_dim_range", lambda m: m.tensor(1.0).squeeze(1)),
    ("unsqueeze_range", lambda m: _x(m).unsqueeze(4)),
    ("unsqueeze_negative_range", lambda m: _x(m).unsqueeze(-5)),
    ("expand_fewer_sizes", lambda m: _x(m).expand(3, 4)),
    ("expand_mismatch", lambda m: _x(m).expand(2, 5, 4)),
    ("expand_leading_minus_one", lambda m: _x(m).expand(-1, 2, 3, 4)),
    ("expand_minus_two", lambda m: _x(m).expand(2, -2, 4)),
    ("expand_negative_singleton", lambda m: m.zeros(1).expand(-2)),
    ("expand_zero_dim_minus_one", lambda m: m.tensor(1.0).expand(-1)),
    ("expand_fewer_int16", lambda m: m.zeros(2, 3, dtype=m.int16).expand(3)),
    ("expand_fewer_bool", lambda m: m.zeros(2, 3, dtype=m.bool).expand(3)),
    ("broadcast_to_fewer", lambda m: _x(m).broadcast_to((3, 4))),
    ("expand_as_fewer", lambda m: _x(m).expand_as(m.zeros(3))),
    ("broadcast_tensors_mismatch", lambda m: m.broadcast_tensors(m.zeros(2), m.zeros(3))),
    ("narrow_too_long", lambda m: _x(m).narrow(1, 2, 2)),
    ("narrow_negative_length", lambda m: _x(m).narrow(1, 0, -1)),
    ("narrow_zero_dim", lambda m: m.tensor(1.0).narrow(0, 0, 1)),
    ("narrow_start_range", lambda m: _x(m).narrow(1, 4, 0)),
    ("narrow_start_negative_range", lambda m: _x(m).narrow(1, -4, 1)),
    ("narrow_tensor_float_start", lambda m: _x(m).narrow(1, m.tensor(1.0), 1)),
    ("narrow_dim_range", lambda m: _x(m).narrow(3, 0, 1)),
    ("select_range", lambda m: _x(m).select(1, 3)),
    ("split_negative", lambda m: _x(m).split(-1)),
    ("split_zero", lambda m: _x(m).split(0, 1)),
    ("split_zero_dim", lambda m: m.tensor(1.0).split(1)),
    ("split_sizes_sum", lambda m: _x(m).split([1, 1], 1)),
    ("split_sizes_negative", lambda m: _x(m).split([4, -1], 1)),
    ("split_dim_range", lambda m: _x(m).split(1, 3)),
    ("chunk_zero", lambda m: _x(m).chunk(0)),
    ("chunk_zero_dim", lambda m: m.tensor(1.0).chunk(1)),
    ("unbind_zero_dim", lambda m: m.tensor(1.0).unbind()),
    ("unbind_range", lambda m: _x(m).unbind(3)),
    ("tensor_split_zero", lambda m: _x(m).tensor_split(0)),
    ("tensor_split_float", lambda m: _x(m).tensor_split(m.tensor([1.0]))),
    ("tensor_split_2d", lambda m: _x(m).tensor_split(m.tensor([[1]]))),
    ("tensor_split_zero_dim", lambda m: m.tensor(1.0).tensor_split(1)),
    ("movedim_length", lambda m: _x(m).movedim((0, 1), (1,))),
    ("movedim_repeated_source", lambda m: _x(m).movedim((0, 0), (1, 2))),
    ("movedim_repeated_destination", lambda m: _x(m).movedim((0, 1), (1, 1))),
    ("movedim_range", lambda m: _x(m).movedim(3, 0)),
    ("cat_zero_dim", lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)])),
    ("cat_zero_dim_second", lambda m: m.cat([_x(m), m.tensor(2.0)])),
    ("cat_sizes", lambda m: m.cat([m.zeros(2, 2), m.zeros(3, 3)], 1)),
    ("cat_sizes_dim0", lambda m: m.cat([m.zeros(2, 2), m.zeros(3, 3)], 0)),
    ("cat_ranks", lambda m: m.cat([m.zeros(2, 2), m.zeros(2, 2, 2)])),
    ("cat_dim_range", lambda m: m.cat([m.zeros(2, 2), m.zeros(2, 2)], 2)),
    ("cat_dim_range_after_skipped", lambda m: m.cat([m.zeros(0), m.zeros(2, 3)], 2)),
    ("cat_empty_not_skipped", lambda m: m.cat([m.zeros(2, 0), m.zeros(2, 3)], 0)),
    ("cat_out_cast", lambda m: m.cat([m.zeros(2, 2)], out=m.zeros(2, 2, dtype=m.int64))),
    ("cat_out_overlap", lambda m: (lambda a: m.cat([a[:2], a[2:4]], out=a[1:5]))(m.zeros(6))),
    ("cat_out_is_input", lambda m: (lambda a: m.cat([a[:2], a[2:]], out=a))(m.zeros(4))),
    ("cat_out_broadcast", lambda m: m.cat([m.zeros(2), m.ones(2)], out=m.zeros(1).expand(4))),
    ("stack_empty_list", lambda m: m.stack([])),
    ("stack_sizes", lambda m: m.stack([m.zeros(2), m.zeros(3)])),
    ("stack_dim_range", lambda m: m.stack([m.zeros(2), m.zeros(2)], 3)),
    ("hstack_empty_list", lambda m: m.hstack([])),
    ("vstack_empty_list", lambda m: m.vstack([])),
    ("dstack_empty_list", lambda m: m.dstack([])),
    ("column_stack_empty_list", lambda m: m.column_stack([])),
    ("repeat_too_few", lambda m: _x(m).repeat(2, 2)),
    ("repeat_negative", lambda m: _x(m).repeat(2, 2, -1)),
    ("repeat_interleave_negative", lambda m: m.repeat_interleave(m.tensor([1, -1]))),
    ("repeat_interleave_2d", lambda m: m.repeat_interleave(m.tensor([[1]]))),
    ("repeat_interleave_float", lambda m: m.repeat_interleave(m.tensor([1.0]))),
    ("repeat_interleave_int16", lambda m: m.repeat_interleave(m.tensor([1, 2], dtype=m.int16))),
    ("repeat_interleave_bool", lambda m: _x(m).repeat_interleave(m.tensor([True, False, True]), dim=1)),
    ("repeat_interleave_size", lambda m: _x(m).repeat_interleave(m.tensor([1, 2]), dim=1)),
    ("repeat_interleave_size_negative_dim", lambda m: _x(m).repeat_interleave(m.tensor([1, 2]), dim=-1)),
    ("repeat_interleave_repeats_2d", lambda m: _x(m).repeat_interleave(m.tensor([[1, 2]]), dim=1)),
    ("repeat_interleave_int_negative", lambda m: _x(m).repeat_interleave(-1)),
    ("repeat_interleave_int_dim_range", lambda m: _x(m).repeat_interleave(2, dim=5)),
    ("repeat_interleave_zero_dim_dim", lambda m: m.tensor(3.0).repeat_interleave(2, dim=0)),
    ("repeat_interleave_tensor_zero_dim_dim", lambda m: m.tensor(3.0).repeat_interleave(m.tensor(2), dim=0)),
    ("repeat_interleave_output_size", lambda m: _x(m).repeat_interleave(m.tensor([1, 2, 3]), dim=1, output_size=7)),
    ("repeat_interleave_int_output_size", lambda m: _x(m).repeat_interleave(2, dim=1, output_size=5)),
    ("repeat_interleave_repeats_output_size", lambda m: m.repeat_interleave(m.tensor([1, 2, 3]), output_size=5)),
    ("repeat_interleave_negative_output_size", lambda m: _x(m).repeat_interleave(m.tensor([1, 2, 3]), dim=-1, output_size=-1)),
    ("flip_duplicate", lambda m: _x(m).flip(0, 0)),
    ("flip_range", lambda m: _x(m).flip(3)),
    ("fliplr_1d", lambda m: m.zeros(3).fliplr()),
    ("flipud_zero_dim", lambda m: m.tensor(1.0).flipud()),
    ("roll_no_dims_many_shifts", lambda m: _x(m).roll((1, 2))),
    ("roll_mismatch", lambda m: _x(m).roll((1, 2), (0,))),
    ("roll_range", lambda m: _x(m).roll(1, 3)),
    ("roll_zero_dim_dim", lambda m: m.tensor(1.0).roll(1, 0)),
    ("rot90_one_dim", lambda m: _x(m).rot90(1, [0])),
    ("rot90_same_dims", lambda m: _x(m).rot90(1, [0, 0])),
    ("rot90_opposite_dims", lambda m: _x(m).rot90(1, [0, -3])),
    ("rot90_1d", lambda m: m.zeros(3).rot90()),
    ("rot90_dim_range", lambda m: _x(m).rot90(1, [0, 3])),
    ("tril_1d", lambda m: m.zeros(3).tril()),
    ("triu_zero_dim", lambda m: m.tensor(1.0).triu()),
    ("tril__1d", lambda m: m.zeros(3).tril_()),
    ("tril_out_dtype", lambda m: m.tril(m.zeros(2, 2), out=m.zeros(2, 2, dtype=m.int64))),
    ("triu_out_dtype_half", lambda m: m.triu(m.zeros(2, 2), out=m.zeros(2, 2, dtype=m.float16))),
    ("diagonal_same_dims", lambda m: _x(m).diagonal(0, 1, 1)),
    ("diagonal_dim_range", lambda m: _x(m).diagonal(0, 0, 3)),
    ("diag_embed_same_dims", lambda m: _x(m).diag_embed(0, 1, 1)),
    ("diag_embed_dim_range", lambda m: _x(m).diag_embed(0, 0, 4)),
    ("diag_embed_zero_dim", lambda m: m.tensor(1.0).diag_embed()),
    ("diag_3d", lambda m: m.diag(_x(m))),
    ("diag_zero_dim", lambda m: m.diag(m.tensor(1.0))),
    ("diag_out_3d", lambda m: m.diag(_x(m), out=m.zeros(0))),
    ("diag_out_cast", lambda m: m.diag(m.tensor([1.0, 2.0]), out=m.zeros(0, dtype=m.int64))),
    ("diag_out_dtype", lambda m: m.diag(m.tensor([1, 2]), out=m.zeros(0))),
    ("diag_out_matrix_dtype", lambda m: m.diag(m.zeros(3, 3), out=m.zeros(0, dtype=m.float64))),
    ("view_incompatible", lambda m: _x(m).transpose(0, 1).view(-1)),
    ("view_bad_numel", lambda m: _x(m).view(5)),
    ("view_dtype_zero_dim", lambda m: m.tensor(1.0).view(m.int16)),
    ("view_dtype_stride", lambda m: _x(m).transpose(1, 2).view(m.int16)),
    ("view_dtype_size", lambda m: m.zeros(2, 3).view(m.float64)),
    ("view_dtype_offset", lambda m: m.zeros(2, 4)[:, 1:3].view(m.float64)),
    ("view_dtype_outer_stride", lambda m: m.zeros(3, 5)[:, :2].view(m.float64)),
    ("view_as_bad", lambda m: _x(m).view_as(m.zeros(5))),
    ("reshape_bad", lambda m: _x(m).reshape(5)),
    ("reshape_two_inferred", lambda m: _x(m).reshape(-1, -1)),
    ("contiguous_preserve", lambda m: _x(m).transpose(1, 2).contiguous(memory_format=m.preserve_format)),
    ("clone_channels_last_3d", lambda m: _x(m).clone(memory_format=m.channels_last)),
    ("contiguous_channels_last_3d", lambda m: _x(m).contiguous(memory_format=m.channels_last)),
    ("clone_channels_last_3d_format", lambda m: _x(m).clone(memory_format=m.channels_last_3d)),
    ("contiguous_bad_format_type", lambda m: _x(m).contiguous(memory_format=1)),
    ("flatten_order", lambda m: _x(m).flatten(2, 1)),
    ("flatten_range", lambda m: _x(m).flatten(0, 3)),
    ("unflatten_product", lambda m: _x(m).unflatten(1, (2, 2))),
    ("unflatten_empty_sizes", lambda m: _x(m).unflatten(1, ())),
    ("unflatten_dim_range", lambda m: _x(m).unflatten(3, (1, 3))),
    ("mT_1d", lambda m: m.zeros(3).mT),
    ("mH_1d", lambda m: m.zeros(3).mH),
    ("H_3d", lambda m: _x(m).H),
    ("H_1d", lambda m: m.zeros(3).H),
    ("adjoint_1d", lambda m: m.zeros(3).adjoint()),
    ("as_strided_out_of_bounds", lambda m: _x(m).as_strided((10, 10), (3, 1))),
]


@pytest.mark.parametrize("fn", [c[1] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_error_matches_torch(fn):
    from torch_compare import assert_same_error

    assert_same_error(lambda: fn(kiln), lambda: fn(torch))


def test_unflatten_unexpected_error_keeps_the_cause():
    # torch appends a C++ backtrace after the cause; the first two lines agree.
    from torch_compare import assert_same_error

    error = assert_same_error(lambda: _x(kiln).unflatten(1, (-1, -1)), lambda: _x(torch).unflatten(1, (-1, -1)),
                              message=False)
    assert str(error) == "unflatten got an unexpected error:\nonly one dimension can be inferred"


@pytest.mark.parametrize("op", ["cat", "concat", "concatenate"])
def test_cat_of_no_tensors_raises(op):
    # With no tensor arguments cat's BackendSelect kernel runs the CPU kernel, whose check raises
    # torch's ValueError (Note [cat of an empty list]); stack/hstack/... are composites with their own
    # checks (see ERROR_CASES).
    with pytest.raises(ValueError, match=r"kiln\.cat\(\): expected a non-empty list of Tensors"):
        getattr(kiln, op)([])
    with pytest.raises(ValueError, match=r"torch\.cat\(\): expected a non-empty list of Tensors"):
        getattr(torch, op)([])
