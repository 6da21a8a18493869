// x[index] and x[index] = value on kiln._C.TensorBase (CPython's mapping
// protocol), in the image of PyTorch's python_variable_indexing.cpp.
#pragma once

namespace kiln::python {

/// Installs mp_length, mp_subscript and mp_ass_subscript on TensorBase. Call before init_tensor_type.
void register_tensor_indexing();

}  // namespace kiln::python
