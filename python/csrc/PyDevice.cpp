// kiln.device bindings.
#include "python/csrc/PyDevice.h"

#include <pybind11/operators.h>
#include <pybind11/pybind11.h>

#include "eager/core/Error.h"

namespace py = pybind11;

namespace kiln::python {

PyObject* device_object(Device d) { return py::cast(d).release().ptr(); }

Device device_from_object(PyObject* obj) {
  py::handle h(obj);
  if (py::isinstance<Device>(h)) return h.cast<Device>();
  if (PyUnicode_Check(obj)) return Device(std::string_view(PyUnicode_AsUTF8(obj)));
  if (PyLong_Check(obj) && !PyBool_Check(obj)) {
    const long long index = PyLong_AsLongLong(obj);
    KILN_CHECK(index >= 0, "Device index must not be negative");
    return Device(DeviceType::CUDA, static_cast<int8_t>(index));
  }
  KILN_FAIL(Type, "expected a kiln.device, a string or an int for device, got ", Py_TYPE(obj)->tp_name);
}

void init_device(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  py::class_<Device>(m, "device", "Where a tensor lives: kiln.device('cpu'), kiln.device('cuda', 0).")
      .def(py::init([](const std::string& spec) { return Device(std::string_view(spec)); }), py::arg("type"))
      .def(py::init([](const std::string& type, std::optional<int64_t> index) {
             Device d{std::string_view(type)};
             if (!index) return d;
             KILN_CHECK(!d.has_index(), "type (string) must not include an index because index was passed "
                        "explicitly: ", type);
             KILN_CHECK(*index >= 0, "Device index must not be negative");
             KILN_CHECK(!d.is_cpu() || *index == 0, "CPU device index must be -1 or zero, got ", *index);
             return d.is_cpu() ? d : Device(d.type(), static_cast<int8_t>(*index));
           }),
           py::arg("type"), py::arg("index"))
      .def(py::init([](const Device& d) { return d; }))
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
