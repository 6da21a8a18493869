// kiln.device: a pybind11 class over kiln::Device, built like torch.device.
#pragma once

#include <Python.h>

#include <optional>

#include "eager/core/Device.h"

namespace kiln::python {

/// New reference to a kiln.device object for `d`.
[[nodiscard]] PyObject* device_object(Device d);
/// Accepts a kiln.device, a string ("cuda:0") or an int (a CUDA index), as PyTorch does.
[[nodiscard]] Device device_from_object(PyObject* obj);

void init_device(PyObject* module);

}  // namespace kiln::python
