// kiln.device bindings.
#include "python/csrc/PyDevice.h"

#include <cctype>
#include <string>

#include <pybind11/pybind11.h>

#include "eager/core/Error.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

/// PyTorch's device-string grammar, `[a-zA-Z_]+(:([1-9][0-9]*|0))?`, checked before the core
/// parses the type and index, so malformed strings get PyTorch's "Invalid device string".
void check_device_string_syntax(std::string_view spec) {
  KILN_CHECK(!spec.empty(), "Device string must not be empty");
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  bool ok = !name.empty();
  for (const char c : name) ok = ok && (std::isalpha(static_cast<unsigned char>(c)) || c == '_');
  if (colon != std::string_view::npos) {
    const std::string_view index = spec.substr(colon + 1);
    ok = ok && !index.empty() && (index.size() == 1 || index[0] != '0');
    for (const char c : index) ok = ok && std::isdigit(static_cast<unsigned char>(c));
  }
  KILN_CHECK(ok, "Invalid device string: '", spec, "'");
}

Device device_from_string(std::string_view spec) {
  check_device_string_syntax(spec);
  return Device(spec);
}

/// kiln.device(int) and device=int name the current accelerator's device, as in PyTorch.
Device device_from_index(int64_t index) {
  KILN_CHECK(index >= 0, "Device index must not be negative");
  // No accelerator backend is built yet (kiln.cuda.is_available() is False).
  KILN_FAIL(Runtime, "Cannot access accelerator device when none is available.");
}

}  // namespace

PyObject* device_object(Device d) { return py::cast(d).release().ptr(); }

Device device_from_object(PyObject* obj, const char* what) {
  py::handle h(obj);
  if (py::isinstance<Device>(h)) return h.cast<Device>();
  if (PyUnicode_Check(obj)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (s == nullptr) throw py::error_already_set();
    return device_from_string(std::string_view(s, static_cast<size_t>(n)));
  }
  if (PyLong_Check(obj) && !PyBool_Check(obj)) return device_from_index(PyLong_AsLongLong(obj));
  KILN_FAIL(Type, what, " must be kiln.device, not ", Py_TYPE(obj)->tp_name);
}

void init_device(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  // pybind11 names a class after its scope's __module__: make it kiln.device, as torch.device.
  m.attr("__module__") = "kiln";
  py::class_<Device> cls(m, "device", "Where a tensor lives: kiln.device('cpu'), kiln.device('cuda', 0).");
  py::delattr(m, "__module__");
  cls.def(py::init([](const std::string& type) { return device_from_string(type); }), py::arg("type"))
      .def(py::init([](const std::string& type, py::object index) {
             Device d = device_from_string(type);
             if (index.is_none()) return d;
             const auto i = index.cast<int64_t>();
             KILN_CHECK(!d.has_index(), "type (string) must not include an index because index was passed "
                        "explicitly: ", type);
             KILN_CHECK(i >= 0, "Device index must not be negative");
             KILN_CHECK(!d.is_cpu() || i == 0, "CPU device index must be -1 or zero, got ", i);
             KILN_CHECK(i < 128, "Device index ", i, " is out of range");
             return d.is_cpu() ? d : Device(d.type(), static_cast<int8_t>(i));
           }),
           py::arg("type"), py::arg("index"))
      .def(py::init([](const Device& d) { return d; }), py::arg("device"))
      .def(py::init([](int64_t index) { return device_from_index(index); }), py::arg("index"))
      .def_property_readonly("type", [](const Device& d) { return std::string(device_type_name(d.type())); })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               if (!d.has_index()) return py::none();
                               return py::int_(d.index());
                             })
      .def("__str__", &Device::str)
      .def("__repr__",
           [](const Device& d) {
             std::string s = "device(type='" + std::string(device_type_name(d.type())) + "'";
             if (d.has_index()) s += ", index=" + std::to_string(d.index());
             return s + ")";
           })
      .def("__eq__", [](const Device& a, py::object b) {
             if (!py::isinstance<Device>(b)) return false;
             return a == b.cast<Device>();
           })
      .def("__hash__", [](const Device& d) {
             return static_cast<int64_t>(d.type()) * 1000 + d.index();
           })
      .def("__reduce__", [](const Device& d) {
             return py::make_tuple(py::module_::import("kiln").attr("device"), py::make_tuple(d.str()));
           });
}

}  // namespace kiln::python
