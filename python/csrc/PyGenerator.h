// kiln.Generator (kiln._C.Generator): a Python handle on a kiln::Generator,
// built like torch.Generator.
#pragma once

#include <Python.h>

#include "eager/core/GeneratorImpl.h"

namespace kiln::python {

struct PyGeneratorObject {
  PyObject_HEAD
  Generator generator;
};

extern PyTypeObject PyGenerator_Type;

[[nodiscard]] inline bool is_generator_object(PyObject* obj) { return PyObject_TypeCheck(obj, &PyGenerator_Type); }
[[nodiscard]] inline const Generator& unwrap_generator(PyObject* obj) {
  return reinterpret_cast<PyGeneratorObject*>(obj)->generator;
}
/// New reference to a kiln.Generator for `g` (kiln.default_generator itself for the default one).
[[nodiscard]] PyObject* generator_object(const Generator& g);

/// Creates the type and adds kiln._C.Generator and kiln._C.default_generator.
void init_generator(PyObject* module);

}  // namespace kiln::python
