// DLPack exchange: Tensor.__dlpack__, Tensor.__dlpack_device__, kiln.from_dlpack.
// Tensors move between kiln, numpy and torch without copies.
// See Note [Foreign memory keeps its owner alive].
#include <Python.h>

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

// DLPack 0.8 added a bool type code; Debian's header (0.6) predates it.
constexpr uint8_t kDLBoolCode = 6;
constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

DLDataType dl_dtype(DType t) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(itemsize(t) * 8);
  switch (category(t)) {
    case DTypeCategory::Floating:
      d.code = t == DType::BFloat16 ? kDLBfloat : kDLFloat;
      break;
    case DTypeCategory::Integral:
      d.code = is_signed(t) ? kDLInt : kDLUInt;
      break;
    case DTypeCategory::Bool:
      d.code = kDLBoolCode;
      break;
    case DTypeCategory::Complex:
      d.code = kDLComplex;
      break;
  }
  return d;
}

DType dtype_from_dl(DLDataType d) {
  KILN_CHECK(d.lanes == 1, "from_dlpack: vector dtypes (lanes=", static_cast<int>(d.lanes), ") are not supported");
  const int bits = d.bits;
  switch (d.code) {
    case kDLFloat:
      if (bits == 16) return DType::Float16;
      if (bits == 32) return DType::Float32;
      if (bits == 64) return DType::Float64;
      break;
    case kDLBfloat:
      if (bits == 16) return DType::BFloat16;
      break;
    case kDLInt:
      if (bits == 8) return DType::Int8;
      if (bits == 16) return DType::Int16;
      if (bits == 32) return DType::Int32;
      if (bits == 64) return DType::Int64;
      break;
    case kDLUInt:
      if (bits == 8) return DType::UInt8;
      break;
    case kDLBoolCode:
      if (bits == 8) return DType::Bool;
      break;
    case kDLComplex:
      if (bits == 64) return DType::Complex64;
      if (bits == 128) return DType::Complex128;
      break;
    default:
      break;
  }
  KILN_FAIL(Type, "from_dlpack: unsupported DLPack dtype (code ", static_cast<int>(d.code), ", bits ", bits, ")");
}

// Note [DLPack 1.0 export]
// ------------------------
// Consumers that understand DLPack 1.0 (numpy 2, torch) call
// __dlpack__(max_version=(1, 0)) and take a "dltensor_versioned" capsule, whose
// flags say whether the memory may be written; numpy marks arrays from an
// unversioned "dltensor" capsule read-only. kiln answers in the newest format
// the consumer accepts. Debian's dlpack.h (0.6) predates the versioned struct,
// so its layout (DLPack 1.0, dlpack.h) is spelled out here.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;  // bit 0: read-only, bit 1: a copy; kiln sets neither
  DLTensor dl_tensor;
};

constexpr const char* kVersionedCapsuleName = "dltensor_versioned";

/// What an exported tensor's capsule owns: the tensor (keeping its storage
/// alive) and the shape/stride arrays DLTensor points into. One of the two
/// managed structs is used, by the format the consumer asked for.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
  DLManagedTensorVersioned versioned{};
};

void delete_export(DLManagedTensor* managed) { delete static_cast<ExportContext*>(managed->manager_ctx); }
void delete_versioned_export(DLManagedTensorVersioned* managed) {
  delete static_cast<ExportContext*>(managed->manager_ctx);
}

/// A capsule that was never consumed still owns its tensor.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // consumed (renamed) by the importer
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersionedCapsuleName)) return;  // consumed
  auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

/// Whether __dlpack__'s max_version, a (major, minor) tuple or None, admits DLPack 1.0.
bool wants_versioned(PyObject* max_version) {
  if (max_version == Py_None || !PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1) return false;
  const long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
  if (major == -1 && PyErr_Occurred()) throw python_error_already_set();
  return major >= 1;
}

PyObject* tensor_dlpack(PyObject* self, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(kw), &stream,
                                   &max_version, &dl_device, &copy)) {
    return nullptr;
  }
  const Tensor& t = unwrap_tensor(self);
  if (t.requires_grad()) {  // a BufferError, as PyTorch raises
    PyErr_SetString(PyExc_BufferError, "Can't export tensors that require gradient, use tensor.detach()");
    return nullptr;
  }
  KILN_CHECK(copy != Py_True, "__dlpack__: copy=True is not supported; kiln only exports without copying");
  KILN_CHECK_NOT_IMPLEMENTED(t.device().is_cpu(), "__dlpack__: only CPU tensors can be exported so far");
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = t;
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  const bool versioned = wants_versioned(max_version);  // See Note [DLPack 1.0 export].
  DLTensor& dl = versioned ? ctx->versioned.dl_tensor : ctx->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  PyObject* capsule = nullptr;
  if (versioned) {
    ctx->versioned.version = DLPackVersion{1, 0};
    ctx->versioned.manager_ctx = ctx.get();
    ctx->versioned.deleter = &delete_versioned_export;
    ctx->versioned.flags = 0;
    capsule = PyCapsule_New(&ctx->versioned, kVersionedCapsuleName, versioned_capsule_destructor);
  } else {
    ctx->managed.manager_ctx = ctx.get();
    ctx->managed.deleter = &delete_export;
    capsule = PyCapsule_New(&ctx->managed, kCapsuleName, capsule_destructor);
  }
  if (capsule == nullptr) throw python_error_already_set();
  ctx.release();  // now owned by the capsule (or its consumer)
  return capsule;
  KILN_PY_END(nullptr)
}

PyObject* tensor_dlpack_device(PyObject* self, PyObject*) {
  const Tensor& t = unwrap_tensor(self);
  const int type = t.device().is_cuda() ? kDLCUDA : kDLCPU;
  const int index = t.device().has_index() ? t.device().index() : 0;
  return Py_BuildValue("(ii)", type, index);
}

void release_dlpack_producer(void* ctx) {
  auto* managed = static_cast<DLManagedTensor*>(ctx);
  if (managed->deleter == nullptr) return;
  // Producers such as numpy drop Python references in their deleter.
  if (Py_IsInitialized()) {
    PyGILState_STATE state = PyGILState_Ensure();
    managed->deleter(managed);
    PyGILState_Release(state);
  } else {
    managed->deleter(managed);
  }
}

/// kiln.from_dlpack(obj): obj has __dlpack__ (numpy, torch, kiln) or is a capsule.
py::object from_dlpack(py::object ext) {
  py::object capsule = ext;
  if (!PyCapsule_CheckExact(ext.ptr())) {
    KILN_CHECK_TYPE(py::hasattr(ext, "__dlpack__"), "from_dlpack: expected an object with __dlpack__ or a DLPack "
                    "capsule, got ", Py_TYPE(ext.ptr())->tp_name);
    capsule = ext.attr("__dlpack__")();
  }
  KILN_CHECK(PyCapsule_IsValid(capsule.ptr(), kCapsuleName), "from_dlpack received an invalid capsule. Note that "
             "DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it "
             "once.");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  const DLTensor& dl = managed->dl_tensor;
  KILN_CHECK_NOT_IMPLEMENTED(dl.device.device_type == kDLCPU, "from_dlpack: only CPU tensors can be imported so "
                             "far (device type ", static_cast<int>(dl.device.device_type), ")");
  const DType dtype = dtype_from_dl(dl.dtype);
  const int64_t item = itemsize(dtype);
  KILN_CHECK(dl.byte_offset % static_cast<uint64_t>(item) == 0, "from_dlpack: byte_offset ", dl.byte_offset,
             " is not a multiple of the element size ", item);
  const auto ndim = static_cast<size_t>(dl.ndim);
  DimVector sizes(IntArrayRef(dl.shape, ndim));
  DimVector strides = dl.strides ? DimVector(IntArrayRef(dl.strides, ndim)) : contiguous_strides(sizes);
  int64_t extent = 1;
  bool empty = false;
  for (size_t i = 0; i < ndim; ++i) {
    KILN_CHECK(strides[i] >= 0, "from_dlpack: negative strides are not supported");
    if (sizes[i] == 0) empty = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  const size_t nbytes = empty ? 0 : static_cast<size_t>(extent * item);
  // From here the capsule is consumed: the storage owns `managed`.
  if (PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName) < 0) throw python_error_already_set();
  Storage storage = make_intrusive<StorageImpl>(DataPtr(data, managed, &release_dlpack_producer, Device()), nbytes,
                                                /*resizable=*/false);
  Tensor t(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes, strides, 0));
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t)));
}

}  // namespace

void register_dlpack_tensor_methods() {
  auto& m = tensor_method_table();
  m.push_back({"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(tensor_dlpack)),
               METH_VARARGS | METH_KEYWORDS, "Exports the tensor as a DLPack capsule (no copy)."});
  m.push_back({"__dlpack_device__", tensor_dlpack_device, METH_NOARGS, "(device type, index) in DLPack codes."});
}

void init_dlpack(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"),
        "A tensor over another library's memory, through the DLPack protocol (no copy).");
}

}  // namespace kiln::python
