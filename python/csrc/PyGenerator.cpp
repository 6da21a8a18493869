// kiln.Generator: torch.Generator's Python surface over the CPU Philox
// generator (eager/kernels/random/Generator.h), and kiln._C.default_generator.
#include "python/csrc/PyGenerator.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/random/Generator.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyTensor.h"

namespace kiln::python {

namespace {

PyObject* g_default_generator = nullptr;  // kiln.default_generator, owned forever

PyObject* new_object(PyTypeObject* type, Generator g) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  new (&reinterpret_cast<PyGeneratorObject*>(self)->generator) Generator(std::move(g));
  return self;
}

Generator make_generator(Device device) {
  KILN_CHECK(device.is_cpu(), "Generator(): kiln has no ", device_type_name(device.type()),
             " generator yet (kiln.cuda.is_available() is False on this build)");
  return make_cpu_generator();
}

PyObject* generator_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  KILN_PY_BEGIN
  static const char* keywords[] = {"device", nullptr};
  PyObject* device_obj = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Generator", const_cast<char**>(keywords), &device_obj)) {
    return nullptr;
  }
  const Device device = device_obj == nullptr || device_obj == Py_None
                            ? Device()
                            : device_from_object(device_obj, "Generator(): argument 'device'");
  return new_object(type, make_generator(device));
  KILN_PY_END(nullptr)
}

void generator_dealloc(PyObject* self) {
  reinterpret_cast<PyGeneratorObject*>(self)->generator.~Generator();
  Py_TYPE(self)->tp_free(self);
}

GeneratorImpl& impl_of(PyObject* self) { return *unwrap_generator(self).impl(); }

/// torch's manual_seed argument rule: an int (not a bool) in [-2^63, 2^64);
/// negative seeds wrap to their unsigned 64-bit value.
uint64_t seed_from_object(PyObject* obj) {
  KILN_CHECK(PyLong_Check(obj) && !PyBool_Check(obj), "manual_seed expected a long, but got ", Py_TYPE(obj)->tp_name);
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
  if (overflow == 0) return static_cast<uint64_t>(v);
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return u;
    PyErr_Clear();
  }
  KILN_FAIL(Value, "Overflow when unpacking long long");
}

PyObject* generator_manual_seed(PyObject* self, PyObject* seed) {
  KILN_PY_BEGIN
  impl_of(self).set_current_seed(seed_from_object(seed));
  Py_INCREF(self);
  return self;
  KILN_PY_END(nullptr)
}

PyObject* generator_seed(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  return PyLong_FromUnsignedLongLong(impl_of(self).seed());
  KILN_PY_END(nullptr)
}

PyObject* generator_initial_seed(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  return PyLong_FromUnsignedLongLong(impl_of(self).current_seed());
  KILN_PY_END(nullptr)
}

PyObject* generator_get_offset(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  return PyLong_FromUnsignedLongLong(impl_of(self).offset());
  KILN_PY_END(nullptr)
}

PyObject* generator_set_offset(PyObject* self, PyObject* offset) {
  KILN_PY_BEGIN
  KILN_CHECK_TYPE(PyLong_Check(offset) && !PyBool_Check(offset), "set_offset expected an int, but got ",
                  Py_TYPE(offset)->tp_name);
  const unsigned long long v = PyLong_AsUnsignedLongLong(offset);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
  impl_of(self).set_offset(v);
  Py_INCREF(self);
  return self;
  KILN_PY_END(nullptr)
}

PyObject* generator_get_state(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  const std::vector<uint8_t> bytes = impl_of(self).state();
  Tensor t = empty({static_cast<int64_t>(bytes.size())}, DType::UInt8);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return wrap_tensor(std::move(t));
  KILN_PY_END(nullptr)
}

PyObject* generator_set_state(PyObject* self, PyObject* state) {
  KILN_PY_BEGIN
  KILN_CHECK_TYPE(is_tensor(state), "expected a kiln.ByteTensor, but got ", Py_TYPE(state)->tp_name);
  const Tensor& t = unwrap_tensor(state);
  KILN_CHECK_TYPE(t.dtype() == DType::UInt8 && t.device().is_cpu(), "RNG state must be a kiln.ByteTensor");
  // The state's bytes in logical order, whatever its strides.
  const Tensor dense = t.is_contiguous() ? t : empty(t.sizes(), DType::UInt8).copy_(t);
  const auto* data = static_cast<const uint8_t*>(dense.data_ptr());
  impl_of(self).set_state(std::span<const uint8_t>(data, static_cast<size_t>(dense.numel())));
  Py_INCREF(self);
  return self;
  KILN_PY_END(nullptr)
}

PyObject* generator_clone_state(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  return new_object(Py_TYPE(self), Generator(impl_of(self).clone()));
  KILN_PY_END(nullptr)
}

PyObject* generator_get_device(PyObject* self, void*) {
  KILN_PY_BEGIN
  return device_object(unwrap_generator(self).device());
  KILN_PY_END(nullptr)
}

/// Pickling and copy.deepcopy: (Generator, (device,), state bytes), restored by __setstate__.
PyObject* generator_reduce(PyObject* self, PyObject*) {
  KILN_PY_BEGIN
  PyObject* device = device_object(unwrap_generator(self).device());
  const std::vector<uint8_t> bytes = impl_of(self).state();
  PyObject* state = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<Py_ssize_t>(bytes.size()));
  if (device == nullptr || state == nullptr) {
    Py_XDECREF(device);
    Py_XDECREF(state);
    return nullptr;
  }
  return Py_BuildValue("(O(N)N)", reinterpret_cast<PyObject*>(Py_TYPE(self)), device, state);
  KILN_PY_END(nullptr)
}

PyObject* generator_setstate(PyObject* self, PyObject* state) {
  KILN_PY_BEGIN
  KILN_CHECK_TYPE(PyBytes_Check(state), "Generator.__setstate__ expects bytes, not ", Py_TYPE(state)->tp_name);
  const auto* data = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(state));
  impl_of(self).set_state(std::span<const uint8_t>(data, static_cast<size_t>(PyBytes_GET_SIZE(state))));
  Py_RETURN_NONE;
  KILN_PY_END(nullptr)
}

PyMethodDef generator_methods[] = {
    {"manual_seed", generator_manual_seed, METH_O,
     "manual_seed(seed) -> Generator\n\nSeeds the generator (and rewinds its stream); returns it."},
    {"seed", generator_seed, METH_NOARGS,
     "seed() -> int\n\nSeeds the generator from a nondeterministic source; returns the seed."},
    {"initial_seed", generator_initial_seed, METH_NOARGS, "initial_seed() -> int\n\nThe seed last set."},
    {"get_state", generator_get_state, METH_NOARGS,
     "get_state() -> Tensor\n\nThe generator's state as a uint8 tensor (seed and offset of its Philox stream)."},
    {"set_state", generator_set_state, METH_O,
     "set_state(new_state) -> Generator\n\nRestores a state from get_state(); returns the generator."},
    {"get_offset", generator_get_offset, METH_NOARGS,
     "get_offset() -> int\n\nThe Philox blocks (of 128 bits) used since the seed was set."},
    {"set_offset", generator_set_offset, METH_O, "set_offset(offset) -> Generator\n\nMoves the stream's position."},
    {"clone_state", generator_clone_state, METH_NOARGS,
     "clone_state() -> Generator\n\nA new generator with a copy of this one's state."},
    {"__reduce__", generator_reduce, METH_NOARGS, nullptr},
    {"__setstate__", generator_setstate, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef generator_getset[] = {
    {"device", generator_get_device, nullptr, "The device the generator draws for.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject make_generator_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "kiln._C.Generator";
  t.tp_basicsize = sizeof(PyGeneratorObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  t.tp_doc =
      "Generator(device='cpu')\n\nA random number generator: a counter-based Philox4x32-10 stream, so the numbers an "
      "op draws do not depend on the thread count. Pass it as generator= to random ops.";
  t.tp_new = generator_new;
  t.tp_dealloc = generator_dealloc;
  t.tp_methods = generator_methods;
  t.tp_getset = generator_getset;
  return t;
}

}  // namespace

PyTypeObject PyGenerator_Type = make_generator_type();

PyObject* generator_object(const Generator& g) {
  if (g == default_cpu_generator()) {
    Py_INCREF(g_default_generator);
    return g_default_generator;
  }
  return new_object(&PyGenerator_Type, g);
}

void init_generator(PyObject* module) {
  if (PyType_Ready(&PyGenerator_Type) < 0) throw python_error_already_set();
  Py_INCREF(&PyGenerator_Type);
  if (PyModule_AddObject(module, "Generator", reinterpret_cast<PyObject*>(&PyGenerator_Type)) < 0) {
    throw python_error_already_set();
  }
  g_default_generator = new_object(&PyGenerator_Type, default_cpu_generator());
  if (g_default_generator == nullptr) throw python_error_already_set();
  Py_INCREF(g_default_generator);
  if (PyModule_AddObject(module, "default_generator", g_default_generator) < 0) throw python_error_already_set();
}

}  // namespace kiln::python
