// Schema-guided conversions between Python objects and IValues.
#include "python/csrc/IValueConversion.h"

#include <cctype>
#include <cstdlib>

#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyGenerator.h"
#include "python/csrc/PyMemoryFormat.h"
#include "python/csrc/PyTensor.h"
#include "python/csrc/PythonArgs.h"

namespace kiln::python {

namespace {

using Kind = SchemaType::Kind;

[[noreturn]] void type_error(PyObject* obj, const SchemaArgument& arg, const std::string& op) {
  KILN_FAIL(Type, op, "(): argument '", arg.name, "' must be ", arg.type.str(), ", not ", Py_TYPE(obj)->tp_name);
}

IValue element_from_python(PyObject* obj, const SchemaArgument& arg, const std::string& op) {
  switch (arg.type.kind) {
    case Kind::Tensor:
      if (!is_tensor(obj)) type_error(obj, arg, op);
      return IValue(unwrap_tensor(obj));
    case Kind::Int:
    case Kind::SymInt:
      return IValue(int_from_object(obj, op.c_str(), arg.name.c_str()));
    case Kind::Float:
      if (PyFloat_Check(obj) || (PyLong_Check(obj) && !PyBool_Check(obj))) return IValue(PyFloat_AsDouble(obj));
      type_error(obj, arg, op);
    case Kind::Bool:
      if (!PyBool_Check(obj)) type_error(obj, arg, op);
      return IValue(obj == Py_True);
    case Kind::Str:
      if (!PyUnicode_Check(obj)) type_error(obj, arg, op);
      return IValue(std::string(PyUnicode_AsUTF8(obj)));
    case Kind::Scalar:
      return IValue(scalar_from_object(obj, op.c_str(), arg.name.c_str()));
    case Kind::ScalarType:
      return IValue(dtype_from_object(obj, arg.name.c_str()));
    case Kind::Device:
      return IValue(device_from_object(obj));
    case Kind::Generator:
      if (!is_generator_object(obj)) type_error(obj, arg, op);
      return IValue(unwrap_generator(obj));
    case Kind::MemoryFormat:  // an int on the stack, as in PyTorch
      if (!is_memory_format_object(obj)) type_error(obj, arg, op);
      return IValue(static_cast<int64_t>(unwrap_memory_format(obj)));
    case Kind::Layout:
      break;
  }
  KILN_FAIL(NotImplemented, op, "(): argument '", arg.name, "' of type ", arg.type.str(),
            " can only be None so far");
}

IValue list_from_python(PyObject* obj, const SchemaArgument& arg, const std::string& op) {
  if (arg.type.fixed_size && !PyList_Check(obj) && !PyTuple_Check(obj) &&
      (arg.type.kind == Kind::Int || arg.type.kind == Kind::SymInt)) {
    // int[2] accepts one int, as PyTorch's kernel_size=3.
    return IValue(DimVector(static_cast<size_t>(*arg.type.fixed_size), int_from_object(obj, op.c_str(), arg.name.c_str())));
  }
  if (!PyList_Check(obj) && !PyTuple_Check(obj)) type_error(obj, arg, op);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  PyObject** items = PySequence_Fast_ITEMS(obj);
  SchemaArgument element = arg;
  element.type.is_list = false;
  element.type.optional = false;
  switch (arg.type.kind) {
    case Kind::Int:
    case Kind::SymInt: {
      DimVector out;
      for (Py_ssize_t i = 0; i < n; ++i) out.push_back(int_from_object(items[i], op.c_str(), arg.name.c_str()));
      return IValue(std::move(out));
    }
    case Kind::Tensor: {
      if (arg.type.element_optional) {
        std::vector<std::optional<Tensor>> out;
        for (Py_ssize_t i = 0; i < n; ++i) {
          if (items[i] == Py_None) {
            out.emplace_back(std::nullopt);
          } else {
            out.emplace_back(element_from_python(items[i], element, op).to_tensor());
          }
        }
        return IValue(std::move(out));
      }
      std::vector<Tensor> out;
      for (Py_ssize_t i = 0; i < n; ++i) out.push_back(element_from_python(items[i], element, op).to_tensor());
      return IValue(std::move(out));
    }
    case Kind::Float: {
      std::vector<double> out;
      for (Py_ssize_t i = 0; i < n; ++i) out.push_back(element_from_python(items[i], element, op).to_double());
      return IValue(std::move(out));
    }
    case Kind::Bool: {
      std::vector<bool> out;
      for (Py_ssize_t i = 0; i < n; ++i) out.push_back(element_from_python(items[i], element, op).to_bool());
      return IValue(std::move(out));
    }
    default:
      break;
  }
  KILN_FAIL(NotImplemented, op, "(): lists of ", arg.type.str(), " are not supported yet");
}

/// Parses a default literal into a Python object, then converts it like an argument.
PyObject* default_literal_to_python(const std::string& text) {
  if (text == "None") Py_RETURN_NONE;
  if (text == "True") Py_RETURN_TRUE;
  if (text == "False") Py_RETURN_FALSE;
  for (int k = 0; k < kNumMemoryFormats; ++k) {  // contiguous_format, preserve_format, ...
    const auto format = static_cast<MemoryFormat>(k);
    if (text == memory_format_name(format)) {
      PyObject* kiln_module = PyImport_ImportModule("kiln._C");
      if (kiln_module == nullptr) return nullptr;
      PyObject* obj = PyObject_GetAttrString(kiln_module, text.c_str());
      Py_DECREF(kiln_module);
      return obj;
    }
  }
  if (!text.empty() && (text.front() == '"' || text.front() == '\'')) {
    return PyUnicode_FromStringAndSize(text.data() + 1, static_cast<Py_ssize_t>(text.size()) - 2);
  }
  if (!text.empty() && text.front() == '[') {
    PyObject* list = PyList_New(0);
    std::string inner = text.substr(1, text.size() - 2);
    size_t start = 0;
    while (start < inner.size()) {
      size_t comma = inner.find(',', start);
      if (comma == std::string::npos) comma = inner.size();
      std::string item = inner.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(' '));
      if (!item.empty()) {
        PyObject* v = default_literal_to_python(item);
        if (v == nullptr) {
          Py_DECREF(list);
          return nullptr;
        }
        PyList_Append(list, v);
        Py_DECREF(v);
      }
      start = comma + 1;
    }
    return list;
  }
  const bool is_float = text.find_first_of(".eE") != std::string::npos && text.find("inf") == std::string::npos;
  if (is_float || text == "inf" || text == "-inf") return PyFloat_FromDouble(std::strtod(text.c_str(), nullptr));
  return PyLong_FromLongLong(std::strtoll(text.c_str(), nullptr, 10));
}

}  // namespace

IValue ivalue_from_python(PyObject* obj, const SchemaArgument& arg, const std::string& op) {
  if (obj == Py_None) {
    KILN_CHECK_TYPE(arg.type.optional || arg.type.kind == Kind::Generator || arg.type.kind == Kind::Layout ||
                        arg.type.kind == Kind::MemoryFormat,
                    op, "(): argument '", arg.name, "' must be ", arg.type.str(), ", not NoneType");
    return IValue();
  }
  if (arg.type.is_list) return list_from_python(obj, arg, op);
  return element_from_python(obj, arg, op);
}

IValue ivalue_from_default(const SchemaArgument& arg, const std::string& op) {
  KILN_INTERNAL_ASSERT(arg.default_value.has_value());
  PyObject* obj = default_literal_to_python(*arg.default_value);
  if (obj == nullptr) throw python_error_already_set();
  try {
    IValue v = ivalue_from_python(obj, arg, op);
    Py_DECREF(obj);
    return v;
  } catch (...) {
    Py_DECREF(obj);
    throw;
  }
}

PyObject* ivalue_to_python(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None:
      Py_RETURN_NONE;
    case IValue::Tag::Tensor:
      return wrap_tensor(v.to_tensor());
    case IValue::Tag::Double:
      return PyFloat_FromDouble(v.to_double());
    case IValue::Tag::Int:
      return PyLong_FromLongLong(v.to_int());
    case IValue::Tag::Bool:
      return PyBool_FromLong(v.to_bool());
    case IValue::Tag::String:
      return PyUnicode_FromStringAndSize(v.to_string().data(), static_cast<Py_ssize_t>(v.to_string().size()));
    case IValue::Tag::DType: {
      PyObject* d = dtype_object(v.to_dtype());
      Py_INCREF(d);
      return d;
    }
    case IValue::Tag::Device:
      return device_object(v.to_device());
    case IValue::Tag::Generator:
      return generator_object(v.to_generator());
    case IValue::Tag::ComplexDouble:
      return PyComplex_FromDoubles(v.to_complex_double().real(), v.to_complex_double().imag());
    case IValue::Tag::IntList: {
      const DimVector& l = v.to_int_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(l[i]));
      return out;
    }
    case IValue::Tag::TensorList: {
      const auto& l = v.to_tensor_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), wrap_tensor(l[i]));
      return out;
    }
    default:
      break;
  }
  KILN_FAIL(NotImplemented, "cannot convert an IValue of type ", v.tag_name(), " to Python yet");
}

}  // namespace kiln::python
