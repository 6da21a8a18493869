// The Library API from Python: kiln._C._Library (define ops, register Python
// kernels) and kiln._C._call_op (call any op by name through the boxed path).
// kiln/library.py builds custom_op on these.
#include <Python.h>

#include <memory>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/dispatch/Library.h"
#include "kiln/generated/OpTable.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/IValueConversion.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

DispatchKey dispatch_key_from_name(const std::string& name) {
  for (int i = 0; i < kNumDispatchKeys; ++i) {
    const auto k = static_cast<DispatchKey>(i);
    if (dispatch_key_name(k) == name) return k;
  }
  if (name == "CompositeImplicit" || name == "CompositeImplicitAutograd") return DispatchKey::Undefined;
  KILN_FAIL(Value, "unknown dispatch key '", name, "'");
}

/// A Python callable serving as a boxed kernel. Owned by the _Library that registered it.
struct PythonKernel {
  py::object fn;
};

/// Pops the op's arguments, calls the Python function, pushes its results.
void call_python_kernel(void* ctx, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  auto* kernel = static_cast<PythonKernel*>(ctx);
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  py::gil_scoped_acquire gil;
  // Keyword-only schema arguments are passed by keyword, the rest by position.
  py::list args;
  py::dict kwargs;
  for (size_t i = 0; i < n; ++i) {
    const auto& a = schema.arguments()[i];
    auto value = py::reinterpret_steal<py::object>(ivalue_to_python((*stack)[stack->size() - n + i]));
    if (a.kwarg_only) {
      kwargs[py::str(a.name)] = value;
    } else {
      args.append(value);
    }
  }
  std::vector<Tensor> written;
  for (size_t i = 0; i < n; ++i) {
    const auto& a = schema.arguments()[i];
    const IValue& v = (*stack)[stack->size() - n + i];
    if (a.alias && a.alias->is_write && v.is_tensor()) written.push_back(v.to_tensor());
  }
  stack->resize(stack->size() - n);
  py::object result = kernel->fn(*py::tuple(args), **kwargs);
  for (const Tensor& t : written) t.impl()->bump_version();
  const auto& returns = schema.returns();
  const std::string op_name = schema.name().str();
  if (returns.empty()) return;
  if (returns.size() == 1) {
    stack->push_back(ivalue_from_python(result.ptr(), returns[0], op_name));
    return;
  }
  KILN_CHECK_TYPE(PyTuple_Check(result.ptr()) && PyTuple_GET_SIZE(result.ptr()) == static_cast<Py_ssize_t>(returns.size()),
                  op_name, ": the Python kernel must return a tuple of ", returns.size(), " values");
  for (size_t i = 0; i < returns.size(); ++i) {
    stack->push_back(ivalue_from_python(PyTuple_GET_ITEM(result.ptr(), static_cast<Py_ssize_t>(i)), returns[i], op_name));
  }
}

class PyLibraryHandle {
 public:
  PyLibraryHandle(const std::string& kind, const std::string& ns, std::optional<std::string> key)
      : lib_(std::make_unique<Library>(kind == "DEF"        ? Library::Kind::Def
                                       : kind == "FRAGMENT" ? Library::Kind::Fragment
                                                            : Library::Kind::Impl,
                                       ns, key ? std::optional(dispatch_key_from_name(*key)) : std::nullopt,
                                       "<python>", 0)) {}

  void define(const std::string& schema, std::vector<std::string> tags) { lib_->def(schema, std::move(tags)); }

  void impl(const std::string& name, const std::string& key, py::object fn) {
    kernels_.push_back(std::make_unique<PythonKernel>(PythonKernel{std::move(fn)}));
    lib_->impl_kernel(name, dispatch_key_from_name(key),
                      KernelFunction::from_boxed(&call_python_kernel, kernels_.back().get()));
  }

  /// Undoes every registration now (also done when the object dies).
  void destroy() {
    lib_.reset();
    kernels_.clear();
  }

 private:
  std::unique_ptr<Library> lib_;
  std::vector<std::unique_ptr<PythonKernel>> kernels_;  // after lib_, so kernels die after their registrations
};

/// Binds Python args to one schema, or returns nullopt with the reason.
std::optional<Stack> bind_arguments(const FunctionSchema& schema, py::tuple args, py::dict kwargs, std::string* why) {
  const auto& params = schema.arguments();
  const std::string op = schema.name().str();
  Stack stack;
  size_t positional = 0;
  size_t used_kwargs = 0;
  try {
    for (const auto& p : params) {
      PyObject* value = nullptr;
      if (!p.kwarg_only && positional < args.size()) {
        value = args[positional++].ptr();
      } else if (kwargs.contains(p.name)) {
        value = PyDict_GetItemString(kwargs.ptr(), p.name.c_str());
        ++used_kwargs;
      }
      if (value != nullptr) {
        stack.push_back(ivalue_from_python(value, p, op));
      } else if (p.default_value) {
        stack.push_back(ivalue_from_default(p, op));
      } else {
        *why = "missing argument '" + p.name + "'";
        return std::nullopt;
      }
    }
  } catch (const Error& e) {
    *why = e.what();
    return std::nullopt;
  }
  if (positional < args.size()) {
    *why = "too many positional arguments";
    return std::nullopt;
  }
  if (used_kwargs < kwargs.size()) {
    *why = "unexpected keyword argument";
    return std::nullopt;
  }
  return stack;
}

py::object call_op(const std::string& qualified_name, py::tuple args, py::dict kwargs) {
  std::vector<OperatorHandle> candidates;
  if (auto dot = qualified_name.rfind('.'); dot != std::string::npos && qualified_name.find("::") < dot) {
    candidates.push_back(Dispatcher::singleton().find_schema_or_throw(qualified_name.substr(0, dot),
                                                                      qualified_name.substr(dot + 1)));
  } else {
    candidates = Dispatcher::singleton().find_overloads(qualified_name);
  }
  KILN_CHECK(!candidates.empty(), "Could not find schema for ", qualified_name);
  std::string reasons;
  for (const auto& op : candidates) {
    std::string why;
    std::optional<Stack> stack = bind_arguments(op.schema(), args, kwargs, &why);
    if (!stack) {
      reasons += "\n * " + op.schema().str() + ": " + why;
      continue;
    }
    {
      py::gil_scoped_release nogil;
      op.call_boxed(&*stack);
    }
    if (stack->empty()) return py::none();
    if (stack->size() == 1) return py::reinterpret_steal<py::object>(ivalue_to_python((*stack)[0]));
    py::tuple out(stack->size());
    for (size_t i = 0; i < stack->size(); ++i) out[i] = py::reinterpret_steal<py::object>(ivalue_to_python((*stack)[i]));
    return out;
  }
  KILN_FAIL(Type, qualified_name, "() received an invalid combination of arguments; tried:", reasons);
}

}  // namespace

void init_library(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::class_<PyLibraryHandle>(m, "_Library")
      .def(py::init<const std::string&, const std::string&, std::optional<std::string>>(), py::arg("kind"),
           py::arg("ns"), py::arg("dispatch_key") = py::none())
      .def("define", &PyLibraryHandle::define, py::arg("schema"), py::arg("tags") = std::vector<std::string>{})
      .def("impl", &PyLibraryHandle::impl, py::arg("name"), py::arg("dispatch_key"), py::arg("fn"))
      .def("_destroy", &PyLibraryHandle::destroy);
  m.def("_call_op", &call_op, py::arg("qualified_name"), py::arg("args"), py::arg("kwargs"));
  m.def("_op_schemas", [](const std::string& qualified_name) {
    std::vector<std::string> out;
    for (const auto& op : Dispatcher::singleton().find_overloads(qualified_name)) out.push_back(op.schema().str());
    return out;
  });
  // The op table with what autograd knows of each op, for the tests that
  // check every differentiable op has a gradient case:
  // [(name, overload, tags, [inputs with formulas], has a generated Autograd kernel)].
  m.def("_op_table", []() {
    py::list out;
    for (const OpInfo& info : op_table()) {
      std::vector<std::string> tags, inputs;
      for (size_t bit = 0; bit < std::size(kOpTagNames); ++bit) {
        if (info.has_tag(1u << bit)) tags.emplace_back(kOpTagNames[bit]);
      }
      for (const Derivative& d : info.derivatives) inputs.emplace_back(d.input);
      const std::string qualified = "kiln::" + std::string(info.name);
      bool generated = false;
      for (const auto& op : Dispatcher::singleton().find_overloads(qualified)) {
        if (op.name().overload == info.overload) generated = op.entry().has_kernel_for(DispatchKey::Autograd);
      }
      out.append(py::make_tuple(std::string(info.name), std::string(info.overload), tags, inputs, generated));
    }
    return out;
  });
  m.def("_op_exists", [](const std::string& qualified_name) {
    return !Dispatcher::singleton().find_overloads(qualified_name).empty();
  });
}

}  // namespace kiln::python
