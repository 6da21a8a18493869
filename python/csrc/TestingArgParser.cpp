// Test-only bindings over PythonArgParser (tests/python/tooling/test_arg_parser.py):
//   _test_parse_args(signatures, *args, **kwargs) -> (index, [values])
//   _test_arg_parser_builtin(signatures, parse_only=False) -> a METH_FASTCALL
//       builtin with a __text_signature__, called like a generated binding
//   _test_text_signature(signatures, index, is_method) -> str
//   _test_noop(*args, **kwargs) -> None (the call-overhead baseline)
#include <Python.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyGenerator.h"
#include "python/csrc/PyMemoryFormat.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgParser.h"

namespace kiln::python {

namespace {

std::vector<std::string> signature_strings(PyObject* signatures) {
  KILN_CHECK_TYPE(PyList_Check(signatures) || PyTuple_Check(signatures),
                  "signatures must be a list of str, not ", Py_TYPE(signatures)->tp_name);
  std::vector<std::string> out;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(signatures); ++i) {
    PyObject* s = PySequence_Fast_GET_ITEM(signatures, i);
    KILN_CHECK_TYPE(PyUnicode_Check(s), "signatures must be a list of str");
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(s, &size);
    if (data == nullptr) throw python_error_already_set();
    out.emplace_back(data, static_cast<size_t>(size));
  }
  return out;
}

/// Parsers stay alive for the process, as a generated binding's static one does.
const PythonArgParser& cached_parser(PyObject* signatures) {
  static std::vector<std::unique_ptr<PythonArgParser>> parsers;
  static PyObject* cache = PyDict_New();  // tuple(signatures) -> index into parsers
  PyObject* key = PySequence_Tuple(signatures);
  if (key == nullptr) throw python_error_already_set();
  PyObject* hit = PyDict_GetItemWithError(cache, key);
  if (hit != nullptr) {
    Py_DECREF(key);
    return *parsers[PyLong_AsSize_t(hit)];
  }
  try {
    parsers.push_back(std::make_unique<PythonArgParser>(signature_strings(key)));
  } catch (...) {
    Py_DECREF(key);
    throw;
  }
  PyObject* index = PyLong_FromSize_t(parsers.size() - 1);
  const int rc = index ? PyDict_SetItem(cache, key, index) : -1;
  Py_XDECREF(index);
  Py_DECREF(key);
  if (rc < 0) throw python_error_already_set();
  return *parsers.back();
}

PyObject* scalar_to_python(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return PyBool_FromLong(s.to_bool());
    case Scalar::Kind::Int:
      return PyLong_FromLongLong(s.to_int64());
    case Scalar::Kind::Double:
      return PyFloat_FromDouble(s.to_double());
    case Scalar::Kind::Complex: {
      const std::complex<double> c = s.to_complex_double();
      return PyComplex_FromDoubles(c.real(), c.imag());
    }
  }
  Py_RETURN_NONE;
}

PyObject* int_list_to_python(IntArrayRef values) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(values.size()));
  if (list == nullptr) return nullptr;
  for (size_t k = 0; k < values.size(); ++k) {
    PyObject* v = PyLong_FromLongLong(values[k]);
    if (v == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), v);
  }
  return list;
}

PyObject* tensor_or_none(const std::optional<Tensor>& t) {
  if (!t) Py_RETURN_NONE;
  return wrap_tensor(*t);
}

template <typename T, typename Fn>
PyObject* optional_to_python(const std::optional<T>& v, Fn&& fn) {
  if (!v) Py_RETURN_NONE;
  return fn(*v);
}

/// Parameter `i` read through the accessor a generated binding would use for its
/// type (the optional one for `T?` and None defaults), back as a Python object.
PyObject* value_to_python(const PythonArgs& r, int i) {
  const FunctionParameter& p = r.signature().params[static_cast<size_t>(i)];
  const bool opt = p.allow_none;
  switch (p.type) {
    case ParamType::Tensor:
      return opt ? tensor_or_none(r.optional_tensor(i)) : wrap_tensor(r.tensor(i));
    case ParamType::Scalar:
      return opt ? optional_to_python(r.scalar_optional(i), scalar_to_python) : scalar_to_python(r.scalar(i));
    case ParamType::Int:
      return opt ? optional_to_python(r.to_int64_optional(i), [](int64_t v) { return PyLong_FromLongLong(v); })
                 : PyLong_FromLongLong(r.to_int64(i));
    case ParamType::IntList:
      return opt ? optional_to_python(r.intlist_optional(i), [](const DimVector& v) { return int_list_to_python(v); })
                 : int_list_to_python(r.intlist(i));
    case ParamType::Double:
      return opt ? optional_to_python(r.to_double_optional(i), PyFloat_FromDouble) : PyFloat_FromDouble(r.to_double(i));
    case ParamType::Bool:
      return opt ? optional_to_python(r.to_bool_optional(i), [](bool v) { return PyBool_FromLong(v); })
                 : PyBool_FromLong(r.to_bool(i));
    case ParamType::DType: {
      auto obj = [](DType t) {
        PyObject* o = dtype_object(t);
        Py_INCREF(o);
        return o;
      };
      return opt ? optional_to_python(r.dtype_optional(i), obj) : obj(r.dtype(i));
    }
    case ParamType::Device:
      return opt ? optional_to_python(r.device_optional(i), device_object) : device_object(r.device(i));
    case ParamType::String: {
      auto str = [](std::string_view s) {
        return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
      };
      return opt ? optional_to_python(r.string_optional(i), str) : str(r.string(i));
    }
    case ParamType::TensorList: {
      if (r.is_none(i)) Py_RETURN_NONE;
      const std::vector<Tensor> tensors = r.tensorlist(i);
      PyObject* list = PyList_New(static_cast<Py_ssize_t>(tensors.size()));
      if (list == nullptr) return nullptr;
      for (size_t k = 0; k < tensors.size(); ++k) PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), wrap_tensor(tensors[k]));
      return list;
    }
    case ParamType::OptionalTensorList: {
      if (r.is_none(i)) Py_RETURN_NONE;
      const auto tensors = r.optional_tensorlist(i);
      PyObject* list = PyList_New(static_cast<Py_ssize_t>(tensors.size()));
      if (list == nullptr) return nullptr;
      for (size_t k = 0; k < tensors.size(); ++k) {
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), tensor_or_none(tensors[k]));
      }
      return list;
    }
    case ParamType::Generator: {
      const auto g = r.generator_optional(i);
      if (!g) Py_RETURN_NONE;
      return generator_object(*g);
    }
    case ParamType::MemoryFormat: {
      auto obj = [](MemoryFormat f) {
        PyObject* o = memory_format_object(f);
        Py_INCREF(o);
        return o;
      };
      return opt ? optional_to_python(r.memory_format_optional(i), obj) : obj(r.memory_format(i));
    }
    case ParamType::Layout:
      Py_RETURN_NONE;  // See Note [Parser hooks].
  }
  Py_RETURN_NONE;
}

PyObject* parse_and_convert(const PythonArgParser& parser, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames, bool parse_only) {
  constexpr size_t kInlineSlots = 32;
  PyObject* inline_storage[kInlineSlots];
  std::vector<PyObject*> heap_storage;
  PyObject** storage = inline_storage;
  if (parser.max_params() > kInlineSlots) {
    heap_storage.resize(parser.max_params());
    storage = heap_storage.data();
  }
  const PythonArgs r = parser.parse(nullptr, args, nargs, kwnames, storage);
  if (parse_only) return PyLong_FromLong(r.index);

  const auto n = static_cast<Py_ssize_t>(r.signature().params.size());
  PyObject* values = PyList_New(n);
  if (values == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* v = nullptr;
    try {
      v = value_to_python(r, static_cast<int>(i));
    } catch (...) {
      Py_DECREF(values);
      throw;
    }
    if (v == nullptr) {
      Py_DECREF(values);
      return nullptr;
    }
    PyList_SET_ITEM(values, i, v);
  }
  PyObject* out = Py_BuildValue("(iN)", r.index, values);
  return out;
}

PyObject* test_parse_args(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  KILN_PY_BEGIN
  KILN_CHECK_TYPE(nargs >= 1, "_test_parse_args(signatures, *args, **kwargs): signatures missing");
  return parse_and_convert(cached_parser(args[0]), args + 1, nargs - 1, kwnames, /*parse_only=*/false);
  KILN_PY_END(nullptr)
}

PyObject* test_noop(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) { Py_RETURN_NONE; }

PyObject* test_text_signature(PyObject*, PyObject* args) {
  KILN_PY_BEGIN
  PyObject* signatures = nullptr;
  Py_ssize_t index = 0;
  int is_method = 0;
  if (!PyArg_ParseTuple(args, "Onp", &signatures, &index, &is_method)) return nullptr;
  const std::string s = cached_parser(signatures).text_signature(static_cast<size_t>(index), is_method != 0);
  return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
  KILN_PY_END(nullptr)
}

// A builtin that calls the parser exactly as a generated binding does: its own
// METH_FASTCALL entry point, its docstring carrying the __text_signature__.
struct TestBuiltin {
  const PythonArgParser* parser;
  bool parse_only;
  std::string name;
  std::string doc;
  PyMethodDef def;
};

std::deque<TestBuiltin>& test_builtins() {
  static std::deque<TestBuiltin> builtins;  // stable addresses for PyMethodDef
  return builtins;
}

PyObject* test_builtin_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  KILN_PY_BEGIN
  const auto& b = test_builtins()[PyLong_AsSize_t(self)];
  return parse_and_convert(*b.parser, args, nargs, kwnames, b.parse_only);
  KILN_PY_END(nullptr)
}

PyObject* test_arg_parser_builtin(PyObject*, PyObject* args) {
  KILN_PY_BEGIN
  PyObject* signatures = nullptr;
  int parse_only = 0;
  if (!PyArg_ParseTuple(args, "O|p", &signatures, &parse_only)) return nullptr;
  const PythonArgParser& parser = cached_parser(signatures);
  auto& builtins = test_builtins();
  TestBuiltin& b = builtins.emplace_back();
  b.parser = &parser;
  b.parse_only = parse_only != 0;
  b.name = parser.name();
  b.doc = parser.name() + parser.text_signature(0, /*is_method=*/false) + "\n--\n\nA kiln._C test builtin.";
  b.def = PyMethodDef{b.name.c_str(), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(test_builtin_call)),
                      METH_FASTCALL | METH_KEYWORDS, b.doc.c_str()};
  PyObject* self = PyLong_FromSize_t(builtins.size() - 1);
  if (self == nullptr) return nullptr;
  PyObject* fn = PyCFunction_NewEx(&b.def, self, nullptr);
  Py_DECREF(self);
  return fn;
  KILN_PY_END(nullptr)
}

PyMethodDef testing_methods[] = {
    {"_test_parse_args", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(test_parse_args)),
     METH_FASTCALL | METH_KEYWORDS,
     "_test_parse_args(signatures, *args, **kwargs) -> (index, values): PythonArgParser, for tests."},
    {"_test_noop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(test_noop)),
     METH_FASTCALL | METH_KEYWORDS, "Does nothing: the baseline for timing _test_parse_args."},
    {"_test_text_signature", test_text_signature, METH_VARARGS,
     "_test_text_signature(signatures, index, is_method) -> str"},
    {"_test_arg_parser_builtin", test_arg_parser_builtin, METH_VARARGS,
     "_test_arg_parser_builtin(signatures, parse_only=False): a fast-call builtin over the parser."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void init_testing_arg_parser(PyObject* module) {
  if (PyModule_AddFunctions(module, testing_methods) < 0) throw python_error_already_set();
}

}  // namespace kiln::python
