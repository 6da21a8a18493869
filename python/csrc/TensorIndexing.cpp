// Python indexing: x[index] and x[index] = value, as the mapping protocol of
// kiln._C.TensorBase. See Note [How x[index] is read].
#include "python/csrc/TensorIndexing.h"

#include <Python.h>

#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/Numpy.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyTensor.h"

namespace kiln::python {

// Note [How x[index] is read]
// ---------------------------
// As PyTorch's python_variable_indexing.cpp, in two steps:
//  1. Basic indexing, always a view: the index (a tuple, or one item taken as a
//     1-tuple) is walked left to right with a cursor `dim` into the tensor.
//     An int selects (the dim goes away), a slice narrows (step > 0), None adds
//     a dim of size 1, Ellipsis skips the dims no other item names, a bool adds
//     a dim of size 1 indexed by [0] (True) or [] (False). A 0-dim integer
//     tensor selects like an int.
//  2. Advanced indexing, a copy: tensors (and lists, converted to int64 or bool
//     tensors) are not applied at once but recorded against the dim they stand
//     at; a k-dim mask stands for k dims. When any were recorded, the view from
//     step 1 goes through the `index` op with them (IndexAdvanced.h: where the
//     result's new dims go), or, for assignment, through `index_put_`.
// Errors are PyTorch's, with the position in the index (not the tensor dim) in
// "index 5 is out of bounds for dimension 1 with size 3", and every index is
// checked before anything is read or written.

namespace {

// --- reading index items ---------------------------------------------------------------

bool is_numpy_integer(PyObject* obj) {
  return is_numpy_scalar(obj) && !is_numpy_bool(obj) && is_integral(dtype_of_numpy_object(obj), false);
}

/// PyTorch's THPUtils_checkLong: a Python int (not bool) or a numpy integer.
bool is_int(PyObject* obj) { return (PyLong_Check(obj) && !PyBool_Check(obj)) || is_numpy_integer(obj); }

int64_t unpack_int(PyObject* obj) {
  int overflow = 0;
  long long v = 0;
  if (PyLong_Check(obj)) {
    v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  } else {
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) throw python_error_already_set();
    v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
  }
  if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
  KILN_CHECK_VALUE(overflow == 0, "Overflow when unpacking long long");
  return v;
}

struct Slice {
  int64_t start, stop, step;
};

/// Smallest slice bound PyTorch keeps (c10::SymInt's smallest plain int); lower ones are clamped with a warning.
constexpr int64_t kMinSliceBound = -(int64_t{1} << 62);

Slice unpack_slice(PyObject* obj) {
  Py_ssize_t start = 0, stop = 0, step = 0;
  if (PySlice_Unpack(obj, &start, &stop, &step) < 0) throw python_error_already_set();
  Slice s{start, stop, step};
  const auto* slice = reinterpret_cast<PySliceObject*>(obj);
  bool truncated = false;
  auto clip = [&](int64_t& v, PyObject* given) {
    if (given != Py_None && v < kMinSliceBound) {
      v = kMinSliceBound;
      truncated = true;
    }
  };
  clip(s.start, slice->start);
  clip(s.stop, slice->stop);
  clip(s.step, slice->step);
  if (truncated) {
    KILN_WARN("Truncating the start/stop/step of slice. This is likely because of saved old models when the "
              "start/stop/step were larger.");
  }
  return s;
}

[[noreturn]] void invalid_index(PyObject* obj) {
  KILN_FAIL(Index, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
            "(got ", Py_TYPE(obj)->tp_name, ")");
}

bool is_mask_dtype(DType t) { return t == DType::Bool || t == DType::UInt8; }

/// A list (or other sequence, numpy arrays too) used as an index: a bool or uint8 tensor when its
/// items say so, else int64 (floats truncated), as PyTorch's indexing_tensor_from_data.
Tensor sequence_to_tensor(PyObject* seq) {
  static PyObject* tensor_fn = [] {
    PyObject* module = PyImport_ImportModule("kiln._C");
    if (module == nullptr) throw python_error_already_set();
    PyObject* fn = PyObject_GetAttrString(module, "_tensor");
    Py_DECREF(module);
    if (fn == nullptr) throw python_error_already_set();
    return fn;  // kept for the life of the process
  }();
  auto make = [&](PyObject* dtype) {
    PyObject* t = PyObject_CallFunctionObjArgs(tensor_fn, seq, dtype, Py_None, Py_False, nullptr);
    if (t == nullptr) throw python_error_already_set();
    Tensor result = unwrap_tensor(t);
    Py_DECREF(t);
    return result;
  };
  Tensor inferred = make(Py_None);
  if (is_mask_dtype(inferred.dtype()) || inferred.dtype() == DType::Int64) return inferred;
  return make(dtype_object(DType::Int64));
}

// --- views -------------------------------------------------------------------------------

/// PyTorch's unsqueeze, as a view through the dispatcher.
Tensor unsqueeze_view(const Tensor& t, int64_t dim) {
  KILN_CHECK_INDEX(dim <= t.dim(), "Dimension out of range (expected to be in range of [", -t.dim() - 1, ", ", t.dim(),
                   "], but got ", dim, ")");
  DimVector sizes(t.sizes());
  DimVector strides(t.strides());
  const int64_t stride = dim >= t.dim() ? 1 : sizes[static_cast<size_t>(dim)] * strides[static_cast<size_t>(dim)];
  sizes.insert(static_cast<size_t>(dim), 1);
  strides.insert(static_cast<size_t>(dim), stride);
  return kiln::as_strided(t, sizes, strides, t.storage_offset());
}

/// A new view with the same geometry (PyTorch's alias: x[...] is not x).
Tensor alias(const Tensor& t) { return kiln::as_strided(t, t.sizes(), t.strides(), t.storage_offset()); }

Tensor apply_select(const Tensor& t, int64_t dim, int64_t index, int64_t real_dim) {
  KILN_CHECK_INDEX(!(index == 0 && dim == 0 && t.dim() == 0),
                   "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
                   "convert a 0-dim tensor to a number");
  const int64_t size = t.dim() == 0 ? 0 : t.size(dim);
  KILN_CHECK_INDEX(size > -1 - index && size > index, "index ", index, " is out of bounds for dimension ", real_dim,
                   " with size ", size);
  return kiln::select(t, dim, index);
}

Tensor apply_slice(const Tensor& t, int64_t dim, const Slice& s) {
  KILN_CHECK_VALUE(s.step > 0, "step must be greater than zero");
  KILN_CHECK_INDEX(t.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  if (s.start == 0 && s.step == 1 && s.stop == t.size(dim)) return t;  // PyTorch's no-op slice
  return kiln::slice(t, dim, s.start, s.stop, s.step);
}

/// A bool index as an index tensor over a new dim of size 1: [0] for True, [] for False.
Tensor bool_index(bool value, Device device) {
  return value ? zeros(IntArrayRef{1}, DType::Int64, device) : empty(IntArrayRef{0}, DType::Int64, device);
}

// Note [A lone bool index is a view]
// ----------------------------------
// PyTorch reads x[True] as x.unsqueeze(0)[tensor([0])] and x[False] as
// x.unsqueeze(0)[tensor([], dtype=long)]: advanced indexing, so a copy. When the
// bool is the only advanced index, that copy has the shape and values of the view
// x.unsqueeze(0) (True) or x.unsqueeze(0)[0:0] (False) (and, for a contiguous x,
// its strides), so kiln returns the view, as basic indexing: cheaper, and writes
// through it reach x. With other advanced indices the bool takes part in their
// broadcast and goes through `index` as in PyTorch.

/// The view a lone bool index stands for: `view` (the bool's dim already added at `dim`),
/// narrowed to nothing along it for False.
Tensor bool_view(const Tensor& view, int64_t dim, bool value) {
  return value ? view : kiln::slice(view, dim, 0, 0, 1);
}

// --- the index as a tuple --------------------------------------------------------------------

/// PyTorch's (numpy's) rule for a non-tuple sequence: a short list holding slices, None,
/// Ellipsis, sequences or tensors is read as a tuple; any other list is one index.
bool sequence_is_tuple(PyObject* index) {
  if (PyTuple_Check(index)) return true;
  if (is_tensor(index) || !PySequence_Check(index)) return false;
  const Py_ssize_t n = PySequence_Size(index);
  if (n < 0) {
    PyErr_Clear();
    return false;
  }
  if (n >= 32) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(index, i);
    if (item == nullptr) {
      PyErr_Clear();
      return false;
    }
    const bool tuple_like = is_tensor(item) || PySequence_Check(item) || PySlice_Check(item) || item == Py_Ellipsis ||
                            item == Py_None;
    Py_DECREF(item);
    if (tuple_like) return true;
  }
  return false;
}

/// A new reference to the index as a tuple.
PyObject* as_tuple(PyObject* index) {
  PyObject* tuple = nullptr;
  if (sequence_is_tuple(index)) {
    if (!PyTuple_Check(index)) {
      KILN_WARN("Using a non-tuple sequence for multidimensional indexing is deprecated and will change in a future "
                "release (as it did in PyTorch 2.9); use x[tuple(seq)] instead of x[seq]. It will then be read as a "
                "tensor index, x[kiln.tensor(seq)], which will result either in an error or a different result");
    }
    tuple = PySequence_Tuple(index);
  } else {
    tuple = PyTuple_Pack(1, index);
  }
  if (tuple == nullptr) throw python_error_already_set();
  return tuple;
}

/// Owns a new reference.
struct PyRef {
  PyObject* obj;
  explicit PyRef(PyObject* o) : obj(o) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { Py_XDECREF(obj); }
};

/// The dims an index tuple names: everything but None, Ellipsis and bools, a mask counting its dims.
int64_t count_specified_dims(PyObject* tuple) {
  int64_t count = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    PyObject* obj = PyTuple_GET_ITEM(tuple, i);
    if (is_tensor(obj)) {
      const Tensor& t = unwrap_tensor(obj);
      count += is_mask_dtype(t.dtype()) ? t.dim() : 1;
    } else if (obj != Py_None && obj != Py_Ellipsis && obj != Py_True && obj != Py_False) {
      ++count;
    }
  }
  return count;
}

/// The result of step 1 of Note [How x[index] is read]: the view and the recorded advanced indices.
struct Sliced {
  Tensor view;
  std::vector<std::optional<Tensor>> indices;  // one entry per advanced position; a k-dim mask fills one
  int64_t mask_extra_dims = 0;                 // sum of (k - 1) over the masks recorded so far
  int64_t n_recorded = 0;
  std::optional<std::pair<int64_t, bool>> only_bool;  // (dim, value) when the one recorded index is a bool

  void record(const Tensor& index, int64_t& dim) {
    const auto pos = static_cast<size_t>(dim - mask_extra_dims);
    if (indices.size() <= pos) indices.resize(pos + 1);
    indices[pos] = index;
    ++n_recorded;
    only_bool.reset();
    const int64_t spans = is_mask_dtype(index.dtype()) ? index.dim() : 1;
    mask_extra_dims += spans - 1;
    dim += spans;
  }
};

/// One tensor item of the index: a 0-dim integer tensor selects, a 0-dim mask adds a dim
/// indexed by it, any other tensor is recorded.
void apply_tensor(Sliced& s, const Tensor& index, int64_t& dim, int64_t real_dim) {
  if (index.dim() == 0 && (is_integral(index.dtype(), true))) {
    if (!is_mask_dtype(index.dtype())) {
      const int64_t value = index.dtype() == DType::Int64   ? *index.data_ptr<int64_t>()
                            : index.dtype() == DType::Int32 ? *index.data_ptr<int32_t>()
                            : index.dtype() == DType::Int16 ? *index.data_ptr<int16_t>()
                                                            : *index.data_ptr<int8_t>();
      s.view = apply_select(s.view, dim, value, real_dim);
      return;
    }
    s.view = unsqueeze_view(s.view, dim);
    const bool value = index.dtype() == DType::Bool ? *index.data_ptr<bool>() : *index.data_ptr<uint8_t>() != 0;
    const int64_t at = dim;
    s.record(bool_index(value, s.view.device()), dim);
    if (s.n_recorded == 1) s.only_bool = std::make_pair(at, value);
    return;
  }
  s.record(index, dim);
}

Sliced apply_slicing(const Tensor& self, PyObject* tuple) {
  const int64_t specified = count_specified_dims(tuple);
  KILN_CHECK_INDEX(specified <= self.dim(), "too many indices for tensor of dimension ", self.dim());
  Sliced s{self, {}, 0};
  int64_t dim = 0;
  bool seen_ellipsis = false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) {
    PyObject* obj = PyTuple_GET_ITEM(tuple, i);
    const int64_t real_dim = i;
    if (is_int(obj)) {
      s.view = apply_select(s.view, dim, unpack_int(obj), real_dim);
    } else if (PySlice_Check(obj)) {
      s.view = apply_slice(s.view, dim, unpack_slice(obj));
      ++dim;
    } else if (obj == Py_Ellipsis) {
      // PyTorch lets a second Ellipsis skip nothing; kiln refuses it, as numpy does.
      KILN_CHECK_INDEX(!seen_ellipsis, "an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
      dim += self.dim() - specified;
    } else if (obj == Py_None) {
      s.view = unsqueeze_view(s.view, dim);
      ++dim;
    } else if (PyBool_Check(obj)) {
      s.view = unsqueeze_view(s.view, dim);
      const int64_t at = dim;
      s.record(bool_index(obj == Py_True, self.device()), dim);
      if (s.n_recorded == 1) s.only_bool = std::make_pair(at, obj == Py_True);
    } else if (is_tensor(obj)) {
      apply_tensor(s, unwrap_tensor(obj), dim, real_dim);
    } else if (PySequence_Check(obj)) {
      s.record(sequence_to_tensor(obj), dim);
    } else {
      PyObject* index = PyNumber_Index(obj);
      if (index == nullptr) {
        PyErr_Clear();
        invalid_index(obj);
      }
      PyRef holder(index);
      s.view = apply_select(s.view, dim, unpack_int(index), real_dim);
    }
  }
  return s;
}

// --- assignment ---------------------------------------------------------------------------

/// The assigned value as a tensor: tensors as they are, Python numbers as 0-dim tensors of
/// self's dtype (converted with PyTorch's overflow check).
Tensor value_to_tensor(const Tensor& self, PyObject* value) {
  if (is_tensor(value)) return unwrap_tensor(value);
  if (is_int(value) || PyBool_Check(value)) {
    return full(IntArrayRef{}, Scalar(unpack_int(value)), self.dtype(), self.device());
  }
  if (PyFloat_Check(value)) return full(IntArrayRef{}, Scalar(PyFloat_AS_DOUBLE(value)), self.dtype(), self.device());
  if (PyComplex_Check(value)) {
    const Scalar z(std::complex<double>(PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value)));
    return full(IntArrayRef{}, z, self.dtype(), self.device());
  }
  KILN_FAIL(Type, "can't assign a ", Py_TYPE(value)->tp_name, " to a kiln.", legacy_tensor_name(self.dtype()));
}

/// `value` without its leading dims of size 1 (numpy's rule for assignment).
Tensor strip_leading_ones(const Tensor& value) {
  int64_t first = 0;
  while (first < value.dim() && value.size(first) == 1) ++first;
  if (first == 0) return value;
  const auto sizes = value.sizes().subspan(static_cast<size_t>(first));
  const auto strides = value.strides().subspan(static_cast<size_t>(first));
  return kiln::as_strided(value, IntArrayRef(sizes), IntArrayRef(strides), value.storage_offset());
}

/// PyTorch's copy_to: dst = src, src broadcast to dst's shape and converted to dst's dtype
/// as copy_ converts (a 0-dim src too: PyTorch's fill_ with a tensor is a copy).
void copy_to(const Tensor& dst, const Tensor& src) {
  if (std::equal(dst.sizes().begin(), dst.sizes().end(), src.sizes().begin(), src.sizes().end())) {
    dst.copy_(src);
    return;
  }
  const Tensor stripped = strip_leading_ones(src);
  const int64_t target = dst.dim();
  const int64_t ndim = stripped.dim();
  KILN_CHECK(target >= ndim, "expand(kiln.", legacy_tensor_name(src.dtype()), "{", stripped.sizes(), "}, size=",
             dst.sizes(), "): the number of sizes provided (", target,
             ") must be greater or equal to the number of dimensions in the tensor (", ndim, ")");
  DimVector strides(static_cast<size_t>(target), 0);
  for (int64_t i = target - 1; i >= 0; --i) {
    const int64_t d = i - (target - ndim);
    if (d < 0) break;
    const int64_t size = stripped.size(d);
    KILN_CHECK(size == 1 || size == dst.size(i), "The expanded size of the tensor (", dst.size(i),
               ") must match the existing size (", size, ") at non-singleton dimension ", i,
               ".  Target sizes: ", dst.sizes(), ".  Tensor sizes: ", stripped.sizes());
    strides[static_cast<size_t>(i)] = size == 1 ? 0 : stripped.stride(d);
  }
  dst.copy_(kiln::as_strided(stripped, dst.sizes(), strides, stripped.storage_offset()));
}

/// x[index] = value when index holds advanced indices: index_put_ with the value's leading 1s dropped.
Tensor index_put(const Sliced& s, const Tensor& value) {
  return kiln::index_put_(s.view, s.indices, strip_leading_ones(value), false);
}

// --- the protocol ------------------------------------------------------------------------------

/// Runs `fn` without the GIL when the tensor is big enough for that to pay (as the generated
/// bindings do; see Note [When bindings release the GIL] in tools/opgen/python_bindings.py).
template <typename Fn>
auto maybe_without_gil(const Tensor& t, Fn&& fn) {
  constexpr int64_t kReleaseGilElements = int64_t{1} << 15;
  if (t.numel() < kReleaseGilElements) return fn();
  struct Restore {
    PyThreadState* state;
    ~Restore() { PyEval_RestoreThread(state); }
  } restore{PyEval_SaveThread()};
  return fn();
}

PyObject* tensor_getitem(PyObject* self, PyObject* index) {
  KILN_PY_BEGIN
  const Tensor& t = unwrap_tensor(self);
  if (index == Py_None) return wrap_tensor(unsqueeze_view(t, 0));
  if (index == Py_Ellipsis) return wrap_tensor(alias(t));
  if (is_int(index)) return wrap_tensor(apply_select(t, 0, unpack_int(index), 0));
  if (PySlice_Check(index)) {
    const Slice s = unpack_slice(index);
    KILN_CHECK_VALUE(s.step > 0, "step must be greater than zero");
    KILN_CHECK_INDEX(t.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
    return wrap_tensor(kiln::slice(t, 0, s.start, s.stop, s.step));
  }
  if (index == Py_True || index == Py_False) return wrap_tensor(bool_view(unsqueeze_view(t, 0), 0, index == Py_True));
  PyRef tuple(as_tuple(index));
  Sliced s = apply_slicing(t, tuple.obj);
  if (s.indices.empty()) return wrap_tensor(s.view.is_same(t) ? alias(t) : s.view);
  if (s.only_bool) return wrap_tensor(bool_view(s.view, s.only_bool->first, s.only_bool->second));
  return wrap_tensor(maybe_without_gil(s.view, [&] { return kiln::index(s.view, s.indices); }));
  KILN_PY_END(nullptr)
}

int tensor_setitem(PyObject* self, PyObject* index, PyObject* py_value) {
  KILN_PY_BEGIN
  KILN_CHECK_TYPE(py_value != nullptr, "Tensor does not support deleting items");
  const Tensor& t = unwrap_tensor(self);
  const Tensor value = value_to_tensor(t, py_value);
  if (index == Py_False) return 0;  // selects nothing
  if (index == Py_Ellipsis) {
    copy_to(t, value);
    return 0;
  }
  if (index == Py_None || index == Py_True) {
    copy_to(unsqueeze(t, 0), value);
    return 0;
  }
  if (is_int(index)) {
    copy_to(apply_select(t, 0, unpack_int(index), 0), value);
    return 0;
  }
  if (PySlice_Check(index)) {
    const Slice s = unpack_slice(index);
    KILN_CHECK_VALUE(s.step > 0, "step must be greater than zero");
    KILN_CHECK_INDEX(t.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
    copy_to(kiln::slice(t, 0, s.start, s.stop, s.step), value);
    return 0;
  }
  PyRef tuple(as_tuple(index));
  const Sliced s = apply_slicing(t, tuple.obj);
  if (s.indices.empty()) {
    copy_to(s.view, value);
    return 0;
  }
  maybe_without_gil(s.view, [&] { return index_put(s, value); });
  return 0;
  KILN_PY_END(-1)
}

/// len(x): the size of dim 0; TypeError for a 0-dim tensor, as torch.Tensor.__len__.
Py_ssize_t tensor_length(PyObject* self) {
  KILN_PY_BEGIN
  const Tensor& t = unwrap_tensor(self);
  KILN_CHECK_TYPE(t.dim() > 0, "len() of a 0-d tensor");
  return static_cast<Py_ssize_t>(t.size(0));
  KILN_PY_END(-1)
}

PyMappingMethods tensor_as_mapping = {tensor_length, tensor_getitem, tensor_setitem};

}  // namespace

void register_tensor_indexing() { PyTensorBase_Type.tp_as_mapping = &tensor_as_mapping; }

}  // namespace kiln::python
