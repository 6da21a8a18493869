// kiln.device: a pybind11 class over kiln::Device, built like torch.device.
#pragma once

#include <Python.h>

#include <optional>

#include "eager/core/Device.h"

namespace kiln::python {

/// New reference to a kiln.device object for `d`.
[[nodiscard]] PyObject* device_object(Device d);
/// Accepts a kiln.device, a string ("cuda:0") or an int (an accelerator index), as PyTorch
/// does; TypeError naming `what` ("zeros(): argument 'device'") otherwise.
[[nodiscard]] Device device_from_object(PyObject* obj, const char* what = "device");

void init_device(PyObject* module);

}  // namespace kiln::python
