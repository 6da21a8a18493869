"""Views against torch: geometry, shared storage and version counter, and the errors.

Every view is built the same way from the same data in kiln and torch; the test
compares shape, strides, storage offset and values, then checks that the kiln view
aliases its base.
"""

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error, assert_same_outcome, assert_same_tensor


def base(m):
    return m.arange(24.0).view(2, 3, 4)


# (id, fn(module, base) -> view)
VIEWS = [
    ("view", lambda m, b: b.view(6, 4)),
    ("view_infer", lambda m, b: b.view(-1)),
    ("view_tuple", lambda m, b: b.view((4, -1))),
    ("transpose", lambda m, b: b.transpose(0, 2)),
    ("transpose_negative", lambda m, b: b.transpose(-1, -2)),
    ("select", lambda m, b: b.select(1, 2)),
    ("select_negative", lambda m, b: b.select(-1, -1)),
    ("getitem_int", lambda m, b: b[1]),
    ("getitem_slice", lambda m, b: b[:, 1:]),
    ("getitem_step", lambda m, b: b[..., ::2]),
    ("getitem_none", lambda m, b: b[None, 0]),
    ("getitem_element", lambda m, b: b[1, 2, 3]),
    ("chained", lambda m, b: b[1][2][1:3]),
    ("as_strided", lambda m, b: b.as_strided((3, 3), (4, 1), 2)),
    ("as_strided_overlapping", lambda m, b: b.as_strided((3, 4), (1, 1), 5)),
    ("transpose_then_select", lambda m, b: b.transpose(0, 1).select(0, 1)),
    ("view_of_slice", lambda m, b: b[1].view(12)),
]
VIEW_IDS = [i for i, _ in VIEWS]
VIEW_FNS = [f for _, f in VIEWS]


@pytest.mark.parametrize("make", VIEW_FNS, ids=VIEW_IDS)
def test_view_geometry_matches_torch(make):
    k, t = make(kiln, base(kiln)), make(torch, base(torch))
    assert_same_tensor(k, t)
    assert k.storage_offset() == t.storage_offset()
    assert k.is_contiguous() == t.is_contiguous()


@pytest.mark.parametrize("make", VIEW_FNS, ids=VIEW_IDS)
def test_view_shares_storage(make):
    kb, tb = base(kiln), base(torch)
    k, t = make(kiln, kb), make(torch, tb)
    assert k.data_ptr() == kb.data_ptr() + k.storage_offset() * k.element_size()
    assert k._version == kb._version
    # Writing through the view's numpy array changes the base as torch's view does.
    k.numpy()[...] = -1.0
    t.numpy()[...] = -1.0
    assert kb.tolist() == tb.tolist()
    assert (kb.numpy() == -1.0).sum() == (tb.numpy() == -1.0).sum() > 0


def test_base_writes_show_in_views():
    b = kiln.zeros(3, 4)
    column = b[:, 2]
    b.numpy()[1, 2] = 5.0
    assert column.tolist() == [0.0, 5.0, 0.0]
    assert column.numpy().base is not None and np.shares_memory(column.numpy(), b.numpy())


def test_views_keep_storage_alive():
    b = kiln.arange(10.0)
    v = b[2:5]
    del b
    assert v.tolist() == [2.0, 3.0, 4.0]


def test_version_counter_is_shared():
    b = kiln.zeros(4)
    views = [b[1:], b.view(2, 2), b.transpose(0, 0), b.as_strided((2,), (2,)), b.select(0, 1)]
    assert all(v._version == b._version for v in views)
    before = b._version
    views[0].fill_(1.0)
    assert b._version > before
    assert all(v._version == b._version for v in views)


# --- as_strided ----------------------------------------------------------------------

AS_STRIDED_ERRORS = [
    ("out_of_bounds", ((4, 4), (4, 1))),
    ("offset_out_of_bounds", ((2, 2), (1, 2), 20)),
    ("negative_offset", ((2, 2), (1, 2), -1)),
    ("length_mismatch", ((2, 2), (1,))),
    ("negative_stride", ((2, 2), (-1, 1))),
    ("negative_size", ((2, -2), (1, 1))),
]


@pytest.mark.parametrize("args", [a for _, a in AS_STRIDED_ERRORS], ids=[i for i, _ in AS_STRIDED_ERRORS])
def test_as_strided_errors(args):
    assert_same_error(lambda: kiln.zeros(4, 3).as_strided(*args), lambda: torch.zeros(4, 3).as_strided(*args))


@pytest.mark.parametrize(
    "args,kwargs",
    [(((0, 2), (100, 100), 12), {}), (((0, 2), (100, 100), 13), {}), (((2, 2), (1, 2)), {"storage_offset": 3}), ((), {"size": (2,), "stride": (5,)}),
     (((1, 1), (5, 7)), {})],
)
def test_as_strided_edges(args, kwargs):
    k = kiln.arange(12.0).view(4, 3).as_strided(*args, **kwargs)
    t = torch.arange(12.0).view(4, 3).as_strided(*args, **kwargs)
    assert_same_tensor(k, t)
    assert k.storage_offset() == t.storage_offset() and k.is_contiguous() == t.is_contiguous()


def test_as_strided_of_a_view_defaults_to_its_offset():
    k = kiln.arange(12.0)[3:].as_strided((2,), (1,))
    t = torch.arange(12.0)[3:].as_strided((2,), (1,))
    assert k.storage_offset() == t.storage_offset() == 3 and k.tolist() == t.tolist()


# --- view ----------------------------------------------------------------------------

VIEW_SHAPES = [
    ("2x3_to_3x2", lambda m: m.zeros(2, 3), (3, 2)),
    ("infer_all", lambda m: m.zeros(2, 3), (-1,)),
    ("infer_first", lambda m: m.zeros(2, 3), (-1, 2)),
    ("infer_last", lambda m: m.zeros(2, 3), ([3, -1],)),
    ("tuple", lambda m: m.zeros(2, 3), ((6,),)),
    ("size_object", lambda m: m.zeros(2, 3), ((1, 6),)),
    ("add_ones", lambda m: m.zeros(2, 3), (1, 2, 1, 3, 1)),
    ("transposed_split_size_one", lambda m: m.zeros(2, 1, 3).transpose(0, 1), (2, 3)),
    ("transposed_keep_dims", lambda m: m.zeros(2, 3).transpose(0, 1), (3, 1, 2)),
    ("slice_rows", lambda m: m.zeros(4, 6)[::2], (2, 2, 3)),
    ("zero_elements", lambda m: m.zeros(0, 3), (-1,)),
    ("zero_elements_reshape", lambda m: m.zeros(0, 3), (3, -1)),
    ("zero_dim_to_ones", lambda m: m.tensor(2.0), (1, 1)),
    ("zero_dim_infer", lambda m: m.tensor(2.0), (-1,)),
    ("to_zero_dim", lambda m: m.zeros(1), ((),)),
    ("transposed_flatten", lambda m: m.zeros(2, 3).transpose(0, 1), (6,)),
    ("transposed_merge", lambda m: m.zeros(2, 3).transpose(0, 1), (3, 2)),
    ("bad_numel", lambda m: m.zeros(2, 3), (7,)),
    ("bad_inferred", lambda m: m.zeros(2, 3), (4, -1)),
    ("two_inferred", lambda m: m.zeros(2, 3), (-1, -1)),
    ("negative_dim", lambda m: m.zeros(2, 3), (-2, 3)),
    ("ambiguous_zero", lambda m: m.zeros(0, 3), (-1, 0)),
    ("zero_dim_too_big", lambda m: m.tensor(1), (2,)),
    ("column_slice", lambda m: m.zeros(4, 6)[:, :3], (12,)),
]


@pytest.mark.parametrize(
    "make,shape", [(m, s) for _, m, s in VIEW_SHAPES], ids=[i for i, _, _ in VIEW_SHAPES]
)
def test_view_shapes_and_errors(make, shape):
    # The view or, for the incompatible ones, the same RuntimeError text as torch
    # ("view size is not compatible with input tensor's size and stride ...").
    assert_same_outcome(lambda: make(kiln).view(*shape), lambda: make(torch).view(*shape))


def test_view_incompatible_message():
    error = assert_same_error(lambda: kiln.zeros(2, 3).transpose(0, 1).view(6),
                              lambda: torch.zeros(2, 3).transpose(0, 1).view(6))
    assert "view size is not compatible" in str(error)


def test_view_size_keyword():
    assert_same_tensor(kiln.zeros(2, 3).view(size=(3, 2)), torch.zeros(2, 3).view(size=(3, 2)))


# --- transpose and select ------------------------------------------------------------

TRANSPOSES = [(0, 1), (1, 0), (0, 2), (-1, 0), (1, 1), (-3, -1), (3, 0), (0, -4)]


@pytest.mark.parametrize("dims", TRANSPOSES, ids=[str(d) for d in TRANSPOSES])
def test_transpose(dims):
    assert_same_outcome(lambda: base(kiln).transpose(*dims), lambda: base(torch).transpose(*dims))


@pytest.mark.parametrize("dims", [(0, 0), (0, -1), (-1, 0), (0, 1), (1, 0)])
def test_transpose_zero_dim(dims):
    assert_same_outcome(lambda: kiln.tensor(3.0).transpose(*dims), lambda: torch.tensor(3.0).transpose(*dims))


SELECTS = [(0, 0), (0, 1), (0, -1), (0, -2), (1, 2), (2, 3), (-1, -4), (1, 3), (0, 2), (0, -3), (3, 0), (-4, 0)]


@pytest.mark.parametrize("dim,index", SELECTS, ids=[str(s) for s in SELECTS])
def test_select(dim, index):
    assert_same_outcome(lambda: base(kiln).select(dim, index), lambda: base(torch).select(dim, index))


def test_select_zero_dim():
    assert_same_error(lambda: kiln.tensor(1.0).select(0, 0), lambda: torch.tensor(1.0).select(0, 0))


# --- basic indexing ------------------------------------------------------------------

INDICES = [
    1, -1, -2, (0, 1), (1, -1, 2), (-2, -3, -4),
    slice(None), slice(1, None), slice(None, 1), slice(0, 2), slice(-1, None), slice(5, 1), slice(-10, 10),
    slice(3, None), slice(7, None), (slice(None), slice(1, 100, 2)), (slice(None), slice(None, None, 2)),
    (slice(None), 1), (slice(None), slice(None), 3), (Ellipsis, 1), (1, Ellipsis), (1, Ellipsis, slice(1, 3)),
    (Ellipsis,), (), None, (None, 0), (slice(None), None, 1), (Ellipsis, None), (None, Ellipsis, None, 0),
    (None, None, 0, 0, 1), (slice(None), None, Ellipsis, None), (slice(0, 1), slice(None), slice(3, None)),
    True, False, (slice(None), True), (0, False), np.int64(1), (np.int32(1), np.int64(-1)),
    (slice(None), slice(None), slice(None), None),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_torch(index):
    k, t = base(kiln)[index], base(torch)[index]
    assert_same_tensor(k, t)
    assert k.storage_offset() == t.storage_offset()
    kb = base(kiln)
    assert kb[index].data_ptr() == kb.data_ptr() + t.storage_offset() * kb.element_size()


def test_getitem_zero_dim_integer_tensor_index():
    assert_same_tensor(base(kiln)[kiln.tensor(1)], base(torch)[torch.tensor(1)])
    assert_same_tensor(base(kiln)[:, kiln.tensor(-1)], base(torch)[:, torch.tensor(-1)])


INDEX_ERRORS = [
    2, -3, (0, 3), (0, 0, 4), (1, -4), (0, 0, 0, 0), (slice(None),) * 4, (None, 0, 0, 0, 0),
    1.5, (0, 1.5), slice(None, None, -1), (slice(None), slice(None, None, 0)), (Ellipsis, Ellipsis, 0),
]


@pytest.mark.parametrize("index", INDEX_ERRORS, ids=[repr(i) for i in INDEX_ERRORS])
def test_getitem_errors(index):
    if index == (Ellipsis, Ellipsis, 0):
        # torch accepts a second Ellipsis; kiln refuses, as numpy does.
        with pytest.raises(IndexError, match="single ellipsis"):
            base(kiln)[index]
        return
    assert_same_error(lambda: base(kiln)[index], lambda: base(torch)[index])


ZERO_DIM_INDICES = [0, slice(None), None, Ellipsis, True, False, (None, 0), (0,), (None, None)]


@pytest.mark.parametrize("index", ZERO_DIM_INDICES, ids=[repr(i) for i in ZERO_DIM_INDICES])
def test_getitem_zero_dim(index):
    assert_same_outcome(lambda: kiln.tensor(5.0)[index], lambda: torch.tensor(5.0)[index])


@pytest.mark.parametrize("index", [slice(None), 0, slice(5, None), (slice(None), 1)])
def test_getitem_empty(index):
    assert_same_outcome(lambda: kiln.zeros(0, 3)[index], lambda: torch.zeros(0, 3)[index])
