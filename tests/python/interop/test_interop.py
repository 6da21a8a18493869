"""Zero-copy exchange with numpy and torch: from_numpy, Tensor.numpy(), __array__, DLPack.

Sharing is proven twice: the data pointers are equal, and a write on either side
is seen on the other.
"""

import gc
import weakref

import numpy as np
import pytest
import torch

import kiln
from torch_compare import DTYPE_NAMES, NUMPY_DTYPE_NAMES, assert_same_error, kiln_dtype, torch_dtype


@pytest.fixture(scope="module", autouse=True)
def frozen_heap():
    """gc.collect() here scans only this module's objects: what exists before is frozen."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def sample(name: str, shape=(3, 4)) -> np.ndarray:
    """Distinct, exactly representable values of a numpy dtype."""
    n = int(np.prod(shape))
    if name == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100).astype(name).reshape(shape)


def poke(array: np.ndarray, index) -> object:
    """Writes a value unlike the sample's at `index` and returns it."""
    value = True if array.dtype == np.bool_ and not array[index] else (False if array.dtype == np.bool_ else 123)
    array[index] = value
    return array[index].item()


# --- from_numpy ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NUMPY_DTYPE_NAMES)
def test_from_numpy_zero_copy(name):
    array = sample(name)
    t = kiln.from_numpy(array)
    assert t.dtype is kiln_dtype(name)
    assert t.data_ptr() == array.ctypes.data
    assert tuple(t.shape) == array.shape and t.stride() == torch.from_numpy(array).stride()
    assert t.tolist() == array.tolist()
    value = poke(array, (1, 2))  # numpy -> kiln
    assert t[1, 2].item() == value
    t.numpy()[2, 3] = array[0, 0]  # kiln -> numpy
    assert array[2, 3] == array[0, 0]


NONCONTIGUOUS_ARRAYS = [
    ("column_step", lambda: np.arange(12.0).reshape(3, 4)[:, ::2]),
    ("offset_block", lambda: np.arange(12, dtype=np.int32).reshape(3, 4)[1:, 1:]),
    ("transposed", lambda: np.arange(12, dtype=np.int16).reshape(3, 4).T),
    ("zero_stride", lambda: np.broadcast_to(np.arange(3.0), (4, 3))),
    ("empty", lambda: np.zeros((0, 3), np.float32)),
    ("zero_dim", lambda: np.array(2.5)),
]


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
@pytest.mark.parametrize("make", [m for _, m in NONCONTIGUOUS_ARRAYS], ids=[i for i, _ in NONCONTIGUOUS_ARRAYS])
def test_from_numpy_strided(make):
    array = make()
    k, t = kiln.from_numpy(array), torch.from_numpy(array)
    assert tuple(k.shape) == tuple(t.shape) and k.stride() == t.stride()
    assert k.storage_offset() == t.storage_offset() == 0
    assert k.tolist() == t.tolist()
    assert k.data_ptr() == array.ctypes.data


NEGATIVE_STRIDES = [
    ("reversed", lambda: np.arange(4.0)[::-1]),
    ("reversed_columns", lambda: np.zeros((2, 3))[:, ::-1]),
]


@pytest.mark.parametrize("make", [m for _, m in NEGATIVE_STRIDES], ids=[i for i, _ in NEGATIVE_STRIDES])
def test_from_numpy_negative_strides(make):
    assert_same_error(lambda: kiln.from_numpy(make()), lambda: torch.from_numpy(make()))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "object", ">f4"])
def test_from_numpy_unsupported_dtypes(dtype):
    array = np.array([1, 2], dtype=dtype) if dtype != "object" else np.array([object()])
    error = pytest.raises((TypeError, ValueError), kiln.from_numpy, array).value
    if dtype == ">f4":
        assert_same_error(lambda: kiln.from_numpy(array), lambda: torch.from_numpy(array))
        return
    assert isinstance(error, TypeError)
    assert f"can't convert np.ndarray of type numpy.{array.dtype.type.__name__}." in str(error)
    if dtype == "object":  # torch supports the others; its message for object arrays names kiln's list
        assert str(error).split(".")[0] == str(pytest.raises(TypeError, torch.from_numpy, array).value).split(".")[0]


@pytest.mark.parametrize("obj", [[1, 2], 3, "abc", None], ids=["list", "int", "str", "none"])
def test_from_numpy_non_array(obj):
    assert_same_error(lambda: kiln.from_numpy(obj), lambda: torch.from_numpy(obj))


def test_from_numpy_read_only_warns():
    array = np.zeros(3)
    array.flags.writeable = False
    with pytest.warns(UserWarning, match="The given NumPy array is not writable, and kiln does not support"):
        kiln.from_numpy(array)


def test_from_numpy_keeps_array_alive():
    t = kiln.from_numpy(np.arange(5.0))
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# --- Tensor.numpy() and __array__ ----------------------------------------------------


@pytest.mark.parametrize("name", NUMPY_DTYPE_NAMES)
def test_numpy_zero_copy(name):
    t = kiln.tensor(sample(name).tolist(), dtype=kiln_dtype(name))
    array = t.numpy()
    assert array.dtype == np.dtype(name)
    assert array.ctypes.data == t.data_ptr()
    assert array.tolist() == t.tolist()
    value = poke(array, (0, 1))
    assert t[0, 1].item() == value


@pytest.mark.parametrize(
    "view", [lambda t: t.transpose(0, 1), lambda t: t[:, 1::2], lambda t: t[2], lambda t: t[1, 1]],
    ids=["transposed", "stepped", "row", "element"],
)
def test_numpy_of_views(view):
    k = view(kiln.arange(12.0).view(3, 4))
    t = view(torch.arange(12.0).view(3, 4))
    assert k.numpy().strides == t.numpy().strides
    assert k.numpy().tolist() == t.numpy().tolist()
    assert k.numpy().ctypes.data == k.data_ptr()


def test_numpy_base_outlives_the_tensor():
    t = kiln.arange(4.0)
    array = t.numpy()
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None  # the array's base keeps the tensor object alive
    assert isinstance(array.base, kiln.Tensor)
    array[0] = 9.0
    assert array.tolist() == [9.0, 1.0, 2.0, 3.0]
    del array
    gc.collect()
    assert ref() is None


def test_numpy_errors():
    assert_same_error(lambda: kiln.ones(2, dtype=kiln.bfloat16).numpy(), lambda: torch.ones(2, dtype=torch.bfloat16).numpy())
    assert_same_error(lambda: kiln.ones(2, requires_grad=True).numpy(), lambda: torch.ones(2, requires_grad=True).numpy())
    assert kiln.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]


def test_array_protocol():
    t = kiln.tensor([1.0, 2.0])
    assert np.asarray(t).ctypes.data == t.data_ptr()
    assert np.array(t).ctypes.data != t.data_ptr()  # np.array copies, as for torch
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.asarray(t, dtype=np.float64).tolist() == [1.0, 2.0]
    assert np.array(t, copy=False).ctypes.data == t.data_ptr()
    # numpy's first line (torch's __array__ takes no copy= keyword, so numpy adds a migration hint after it)
    with pytest.raises(ValueError, match=r"^Unable to avoid copy while creating an array as requested\.$"):
        np.array(t, dtype=np.float64, copy=False)
    assert t.__array__(np.float16).dtype == np.float16
    assert_same_error(lambda: np.asarray(kiln.ones(2, dtype=kiln.bfloat16)),
                      lambda: np.asarray(torch.ones(2, dtype=torch.bfloat16)))
    assert_same_error(lambda: np.asarray(kiln.ones(2, requires_grad=True)),
                      lambda: np.asarray(torch.ones(2, requires_grad=True)))


# --- DLPack --------------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlpack_kiln_to_torch(name):
    k = kiln.tensor(sample("int64" if name == "bfloat16" else name).tolist(), dtype=kiln_dtype(name))
    t = torch.from_dlpack(k)
    assert t.dtype == torch_dtype(name)
    assert t.data_ptr() == k.data_ptr()
    assert t.tolist() == k.tolist() and t.stride() == k.stride()
    t[0, 0] = True if name == "bool" else 42  # torch -> kiln
    assert k[0, 0].item() == t[0, 0].item()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlpack_torch_to_kiln(name):
    t = torch.tensor(sample("int64" if name == "bfloat16" else name).tolist(), dtype=torch_dtype(name))
    k = kiln.from_dlpack(t)
    assert k.dtype is kiln_dtype(name)
    assert k.data_ptr() == t.data_ptr()
    assert k.tolist() == t.tolist() and k.stride() == t.stride()
    t[2, 3] = True if name == "bool" else 42
    assert k[2, 3].item() == t[2, 3].item()


@pytest.mark.parametrize("name", NUMPY_DTYPE_NAMES)
def test_dlpack_numpy_and_kiln(name):
    array = sample(name)
    k = kiln.from_dlpack(array)
    assert k.dtype is kiln_dtype(name) and k.data_ptr() == array.ctypes.data
    assert k.tolist() == array.tolist()
    back = np.from_dlpack(k)
    assert back.dtype == array.dtype and back.ctypes.data == array.ctypes.data
    value = poke(back, (1, 1))
    assert array[1, 1] == value and k[1, 1].item() == value


NONCONTIGUOUS_TENSORS = [
    ("transposed_slice", lambda m: m.arange(12.0).view(3, 4).transpose(0, 1)[1:]),
    ("stepped", lambda m: m.arange(12).view(3, 4)[:, ::2]),
    ("element", lambda m: m.arange(6.0).view(2, 3)[1, 2]),
    ("empty", lambda m: m.zeros(0, 3)),
    ("zero_dim", lambda m: m.tensor(3.0)),
]


@pytest.mark.parametrize("make", [m for _, m in NONCONTIGUOUS_TENSORS], ids=[i for i, _ in NONCONTIGUOUS_TENSORS])
def test_dlpack_strided_both_ways(make):
    k = make(kiln)
    t = torch.from_dlpack(k)
    assert t.shape == tuple(k.shape) and t.stride() == k.stride() and t.tolist() == k.tolist()
    if k.numel():
        assert t.data_ptr() == k.data_ptr()
    source = make(torch)
    k2 = kiln.from_dlpack(source)
    assert tuple(k2.shape) == source.shape and k2.stride() == source.stride() and k2.tolist() == source.tolist()
    if source.numel():
        assert k2.data_ptr() == source.data_ptr()
    array = np.from_dlpack(k)
    assert array.tolist() == k.tolist()


def test_dlpack_capsule_consumed_twice():
    capsule = kiln.ones(3).__dlpack__()
    torch.from_dlpack(capsule)
    assert_same_error(lambda: kiln.from_dlpack(capsule), lambda: torch.from_dlpack(capsule))
    capsule = torch.ones(3).__dlpack__()
    kiln.from_dlpack(capsule)
    assert_same_error(lambda: kiln.from_dlpack(capsule), lambda: torch.from_dlpack(capsule))


def test_dlpack_memory_outlives_the_producer():
    t = torch.arange(5.0)
    k = kiln.from_dlpack(t)
    del t
    gc.collect()
    assert k.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]

    k = kiln.arange(5.0)
    t = torch.from_dlpack(k)
    del k
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]

    array = np.arange(5.0)
    k = kiln.from_dlpack(array)
    del array
    gc.collect()
    assert k.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]

    k = kiln.arange(5.0)
    array = np.from_dlpack(k)
    del k
    gc.collect()
    assert array.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_dlpack_unconsumed_capsule_is_freed():
    k = kiln.arange(4.0)
    ref = weakref.ref(k)
    capsule = k.__dlpack__()
    del capsule, k
    gc.collect()
    assert ref() is None


def test_dlpack_device_and_errors():
    assert tuple(kiln.ones(2).__dlpack_device__()) == tuple(torch.ones(2).__dlpack_device__())
    assert_same_error(lambda: kiln.ones(2, requires_grad=True).__dlpack__(),
                      lambda: torch.ones(2, requires_grad=True).__dlpack__())
    with pytest.raises(TypeError, match="^from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got list$"):
        kiln.from_dlpack([1, 2])
