// TensorBase object lifecycle, kiln.Size, and wrapping C++ tensors.
#include "python/csrc/PyTensor.h"

#include <new>
#include <string>

#include "eager/kernels/cpu/creation/Factories.h"
#include "python/csrc/Exceptions.h"

namespace kiln::python {

// Note [Tensor and its Python object]
// -----------------------------------
// A Python tensor object owns one reference to its TensorImpl; the impl keeps
// a borrowed pointer back (TensorImpl::pyobj). Wrapping an impl that already
// has a live Python object returns that object, so `t.grad is t.grad` and
// attributes set from Python stick while the object lives. When the Python
// object dies it clears the back pointer; if C++ still holds the impl, a later
// wrap makes a fresh object. All of this runs with the GIL held.
// Results are created as instances of kiln.Tensor (the Python subclass), which
// kiln/_tensor.py registers through _C._set_tensor_class.

namespace {

PyTypeObject* g_tensor_class = &PyTensorBase_Type;

// Note [Deallocating kiln.Tensor, a heap subclass of a static type]
// ------------------------------------------------------------------
// Tensors are created as kiln.Tensor, a Python class deriving from the static
// TensorBase. CPython's subtype_dealloc/subtype_traverse/subtype_clear already
// handle what the subclass adds: they clear and visit its __dict__ and they own
// the instance's reference to the heap type (visiting it and dropping it after
// calling our tp_dealloc). TensorBase's own slots must therefore touch only
// what TensorBase owns: dropping the type or visiting the dict here too would
// free kiln.Tensor after a few tensors die, or make the cycle collector
// over-count and free live objects.

void tensor_dealloc(PyObject* self) {
  auto* obj = reinterpret_cast<PyTensorObject*>(self);
  PyObject_GC_UnTrack(self);
  if (obj->weakreflist != nullptr) PyObject_ClearWeakRefs(self);
  if (obj->tensor.defined() && obj->tensor.impl()->pyobj() == self) obj->tensor.impl()->set_pyobj(nullptr);
  obj->tensor.~Tensor();
  Py_TYPE(self)->tp_free(self);
}

/// The C++ tensor holds no Python references yet (autograd hooks will).
int tensor_traverse(PyObject*, visitproc, void*) { return 0; }
int tensor_clear(PyObject*) { return 0; }

PyObject* allocate_tensor_object(PyTypeObject* type, Tensor t) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) throw python_error_already_set();
  auto* obj = reinterpret_cast<PyTensorObject*>(self);
  new (&obj->tensor) Tensor(std::move(t));
  obj->weakreflist = nullptr;
  obj->tensor.impl()->set_pyobj(self);
  return self;
}

/// TensorBase() from Python makes an empty float tensor (kiln.Tensor() as in
/// PyTorch); other construction goes through kiln.tensor and the factories.
PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  KILN_CHECK_TYPE(nargs == 0 && (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0),
                  "kiln.Tensor(): use kiln.tensor(data) or kiln.empty(size) to create tensors");
  const int64_t zero = 0;
  Tensor t = empty(IntArrayRef(&zero, 1), default_dtype());
  // A fresh object of exactly `type` (which may be a subclass).
  return allocate_tensor_object(type, std::move(t));
  KILN_PY_END(nullptr)
}

PyTypeObject make_tensor_base_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "kiln._C.TensorBase";
  t.tp_basicsize = sizeof(PyTensorObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  t.tp_doc = "The C++ tensor behind kiln.Tensor.";
  t.tp_dealloc = tensor_dealloc;
  t.tp_traverse = tensor_traverse;
  t.tp_clear = tensor_clear;
  t.tp_weaklistoffset = offsetof(PyTensorObject, weakreflist);
  t.tp_new = tensor_new;
  return t;
}

// --- kiln.Size ---------------------------------------------------------------

PyObject* size_repr(PyObject* self) {
  std::string s = "kiln.Size([";
  const Py_ssize_t n = PyTuple_GET_SIZE(self);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item_repr = PyObject_Repr(PyTuple_GET_ITEM(self, i));
    if (item_repr == nullptr) return nullptr;
    if (i) s += ", ";
    s += PyUnicode_AsUTF8(item_repr);
    Py_DECREF(item_repr);
  }
  s += "])";
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
}

PyObject* size_numel(PyObject* self, PyObject*) {
  long long n = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); ++i) n *= PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
  if (PyErr_Occurred()) return nullptr;
  return PyLong_FromLongLong(n);
}

/// A new kiln.Size holding the items of `tuple` (a tuple of Python ints).
PyObject* size_from_tuple(PyObject* tuple) {
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  PyObject* size = PySize_Type.tp_alloc(&PySize_Type, n);
  if (size == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    Py_INCREF(item);
    PyTuple_SET_ITEM(size, i, item);
  }
  return size;
}

/// Size(iterable of ints), like torch.Size: items may be anything with __index__
/// (numpy integers, one-element integer tensors).
PyObject* size_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* tuple = PyTuple_Type.tp_new(&PyTuple_Type, args, kwargs);
  if (tuple == nullptr) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  PyObject* size = type->tp_alloc(type, n);
  if (size == nullptr) {
    Py_DECREF(tuple);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    PyObject* index = PyLong_CheckExact(item) ? (Py_INCREF(item), item)
                      : PyIndex_Check(item)   ? PyNumber_Index(item)
                                              : nullptr;
    if (index == nullptr) {
      if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "kiln.Size() takes an iterable of 'int' (item %zd is '%s')", i,
                     Py_TYPE(item)->tp_name);
      }
      Py_DECREF(tuple);
      Py_DECREF(size);
      return nullptr;
    }
    PyTuple_SET_ITEM(size, i, index);
  }
  Py_DECREF(tuple);
  return size;
}

/// Turns a tuple produced by a tuple operation on a Size back into a Size (as torch.Size does
/// for slicing, + and *); passes anything else (ints, NotImplemented, errors) through.
PyObject* as_size(PyObject* result) {
  if (result == nullptr || !PyTuple_CheckExact(result)) return result;
  PyObject* size = size_from_tuple(result);
  Py_DECREF(result);
  return size;
}

PyObject* size_subscript(PyObject* self, PyObject* key) {
  return as_size(PyTuple_Type.tp_as_mapping->mp_subscript(self, key));
}

PyObject* size_add(PyObject* a, PyObject* b) {
  if (!PyTuple_Check(a) || !PyTuple_Check(b)) Py_RETURN_NOTIMPLEMENTED;
  return as_size(PySequence_Concat(a, b));
}

PyObject* size_multiply(PyObject* a, PyObject* b) {
  PyObject* seq = PyTuple_Check(a) ? a : b;
  PyObject* count = seq == a ? b : a;
  if (!PyIndex_Check(count)) Py_RETURN_NOTIMPLEMENTED;
  const Py_ssize_t n = PyNumber_AsSsize_t(count, PyExc_OverflowError);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  return as_size(PySequence_Repeat(seq, n));
}

PyMappingMethods size_as_mapping = {nullptr, size_subscript, nullptr};

PyNumberMethods make_size_as_number() {
  PyNumberMethods m{};
  m.nb_add = size_add;
  m.nb_multiply = size_multiply;
  return m;
}
PyNumberMethods size_as_number = make_size_as_number();

PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS, "Number of elements a tensor of this size holds."},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject make_size_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "kiln.Size";
  t.tp_basicsize = sizeof(PyTupleObject) - sizeof(PyObject*);
  t.tp_itemsize = sizeof(PyObject*);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_TUPLE_SUBCLASS;
  t.tp_doc = "The shape of a tensor: a tuple of ints.";
  t.tp_repr = size_repr;
  t.tp_methods = size_methods;
  t.tp_new = size_new;
  t.tp_as_mapping = &size_as_mapping;
  t.tp_as_number = &size_as_number;
  t.tp_base = &PyTuple_Type;
  return t;
}

PyObject* set_tensor_class(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), &PyTensorBase_Type)) {
    PyErr_SetString(PyExc_TypeError, "_set_tensor_class expects a subclass of kiln._C.TensorBase");
    return nullptr;
  }
  Py_INCREF(cls);
  g_tensor_class = reinterpret_cast<PyTypeObject*>(cls);
  Py_RETURN_NONE;
}

/// _make_subclass(cls, data, require_grad=False): a new `cls` object (a
/// Tensor subclass such as nn.Parameter) over a detached alias of `data`,
/// sharing its storage, as torch.Tensor._make_subclass.
PyObject* make_subclass(PyObject*, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* kw[] = {"cls", "data", "require_grad", nullptr};
  PyObject *cls = nullptr, *data = nullptr;
  int require_grad = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:_make_subclass", const_cast<char**>(kw), &cls, &data,
                                   &require_grad)) {
    return nullptr;
  }
  KILN_CHECK_TYPE(PyType_Check(cls) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), &PyTensorBase_Type),
                  "_make_subclass: cls must be a subclass of Tensor");
  const Tensor& src = tensor_from_object(data, "data");
  auto impl = make_intrusive<TensorImpl>(src.storage(), src.dtype(), src.sizes(), src.strides(), src.storage_offset());
  impl->share_version_counter(src.impl()->version_counter());
  Tensor alias(std::move(impl));
  if (require_grad) alias.set_requires_grad(true);
  return allocate_tensor_object(reinterpret_cast<PyTypeObject*>(cls), std::move(alias));
  KILN_PY_END(nullptr)
}

PyMethodDef module_methods[] = {
    {"_set_tensor_class", set_tensor_class, METH_O, nullptr},
    {"_make_subclass", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(make_subclass)),
     METH_VARARGS | METH_KEYWORDS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyTypeObject PyTensorBase_Type = make_tensor_base_type();
PyTypeObject PySize_Type = make_size_type();

std::vector<PyMethodDef>& tensor_method_table() {
  static std::vector<PyMethodDef> table;
  return table;
}

std::vector<PyGetSetDef>& tensor_getset_table() {
  static std::vector<PyGetSetDef> table;
  return table;
}

const Tensor& tensor_from_object(PyObject* obj, const char* what) {
  KILN_CHECK_TYPE(is_tensor(obj), what, " must be Tensor, not ", Py_TYPE(obj)->tp_name);
  return unwrap_tensor(obj);
}

PyObject* wrap_tensor(Tensor t) {
  KILN_INTERNAL_ASSERT(t.defined());
  if (auto* existing = static_cast<PyObject*>(t.impl()->pyobj())) {
    Py_INCREF(existing);
    return existing;
  }
  return allocate_tensor_object(g_tensor_class, std::move(t));
}

PyObject* make_size(IntArrayRef sizes) {
  PyObject* size = PySize_Type.tp_alloc(&PySize_Type, static_cast<Py_ssize_t>(sizes.size()));
  if (size == nullptr) throw python_error_already_set();
  for (size_t i = 0; i < sizes.size(); ++i) {
    PyObject* item = PyLong_FromLongLong(sizes[i]);
    if (item == nullptr) {
      Py_DECREF(size);
      throw python_error_already_set();
    }
    PyTuple_SET_ITEM(size, static_cast<Py_ssize_t>(i), item);
  }
  return size;
}

void init_tensor_type(PyObject* module) {
  auto& methods = tensor_method_table();
  methods.push_back({nullptr, nullptr, 0, nullptr});
  PyTensorBase_Type.tp_methods = methods.data();
  auto& getset = tensor_getset_table();
  getset.push_back({nullptr, nullptr, nullptr, nullptr, nullptr});
  PyTensorBase_Type.tp_getset = getset.data();

  if (PyType_Ready(&PyTensorBase_Type) < 0 || PyType_Ready(&PySize_Type) < 0) throw python_error_already_set();
  Py_INCREF(&PyTensorBase_Type);
  if (PyModule_AddObject(module, "TensorBase", reinterpret_cast<PyObject*>(&PyTensorBase_Type)) < 0) {
    throw python_error_already_set();
  }
  Py_INCREF(&PySize_Type);
  if (PyModule_AddObject(module, "Size", reinterpret_cast<PyObject*>(&PySize_Type)) < 0) {
    throw python_error_already_set();
  }
  if (PyModule_AddFunctions(module, module_methods) < 0) throw python_error_already_set();
}

}  // namespace kiln::python
