"""copy_ between strided tensors of one dtype (the layout-copy path of
eager/kernels/cpu/copy/Copy.cpp) against torch: sliced, transposed, expanded,
flipped-stride and channels-last sources and destinations, rows shorter and
longer than a vector, and a destination that overlaps its source (the element
loop keeps that case)."""

import numpy as np
import pytest
import torch

import kiln


def pair(shape, dtype="float32", seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 10
    t = torch.tensor(values).to(getattr(torch, dtype))
    return kiln.tensor(t.double().numpy(), dtype=getattr(kiln, dtype)), t


def same(k, t):
    assert tuple(k.shape) == tuple(t.shape)
    np.testing.assert_array_equal(np.array(k.to(kiln.float64).tolist()), t.double().numpy())


VIEWS = {
    "narrow_cols": lambda x: x[:, 3:],
    "narrow_rows": lambda x: x[2:],
    "step": lambda x: x[:, ::2],
    "transpose": lambda x: x.t(),
    "row_of_3": lambda x: x[:, :3],
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "bool"])
@pytest.mark.parametrize("src_view", list(VIEWS))
@pytest.mark.parametrize("cols", [5, 40, 300])
def test_copy_into_strided_destination(dtype, src_view, cols):
    kx, tx = pair((37, cols + 8), dtype)
    ks, ts = VIEWS[src_view](kx), VIEWS[src_view](tx)
    shape = tuple(ts.shape)
    kd_base, td_base = pair((shape[0] + 2, shape[1] + 5), dtype, seed=1)
    kd, td = kd_base[1:shape[0] + 1, 2:shape[1] + 2], td_base[1:shape[0] + 1, 2:shape[1] + 2]
    kd.copy_(ks)
    td.copy_(ts)
    same(kd_base, td_base)  # the padding around the view is untouched too


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_copy_from_expanded_and_transposed(dtype):
    kr, tr = pair((1, 64), dtype)
    kd, td = kiln.zeros(48, 64, dtype=getattr(kiln, dtype)).t(), torch.zeros(48, 64, dtype=getattr(torch, dtype)).t()
    kd.copy_(kr.expand(48, 64).t())
    td.copy_(tr.expand(48, 64).t())
    same(kd, td)
    k4, t4 = pair((2, 3, 5, 7), dtype, seed=2)
    kcl = kiln.empty(2, 5, 7, 3, dtype=getattr(kiln, dtype)).permute(0, 3, 1, 2)  # channels-last destination
    tcl = torch.empty(2, 3, 5, 7, dtype=getattr(torch, dtype)).to(memory_format=torch.channels_last)
    kcl.copy_(k4)
    tcl.copy_(t4)
    same(kcl, tcl)


def test_copy_between_overlapping_views_as_torch():
    # dst and src share storage: kiln keeps the element-by-element loop (no
    # layout-copy shortcut), which gives torch's result on these.
    kr, tr = kiln.arange(12, dtype=kiln.float32).view(3, 4), torch.arange(12, dtype=torch.float32).view(3, 4)
    kr[:, 1:].copy_(kr[:, :3])
    tr[:, 1:].copy_(tr[:, :3])
    same(kr, tr)
    message = "some elements of the input tensor and the written-to tensor refer to a single memory location"
    for lib in (kiln, torch):  # dense partial overlap: both refuse
        b = lib.arange(20, dtype=lib.float32)
        with pytest.raises(RuntimeError, match=message):
            b[2:12].copy_(b[0:10])


def test_copy_onto_the_same_view_is_allowed_as_torch():
    for lib in (kiln, torch):
        a = lib.arange(12, dtype=lib.float32).view(3, 4)
        a.copy_(a)
        a[:].copy_(a[:])  # distinct views of the same elements: a full overlap, not a partial one
        assert a.tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
