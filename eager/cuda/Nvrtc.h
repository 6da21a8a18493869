// NVRTC (from PyPI's nvidia-cuda-nvrtc wheel), loaded with dlopen at first use.
#pragma once

#include <string>
#include <vector>

namespace kiln::cuda {

/// What NVRTC produces for one program.
enum class NvrtcOutput {
  Ptx,    ///< PTX for a virtual arch ("compute_90"): what CI assembles with ptxas
  Cubin,  ///< machine code for a real arch ("sm_90"): what kiln loads on a device
};

/// Compiles CUDA C++ `source` (named `name` in messages) for `arch` ("sm_90",
/// "sm_80") to PTX or a cubin. No GPU is needed. Throws RuntimeError with
/// NVRTC's log on a compile error, and the load error (how to install NVRTC)
/// when the library is missing.
[[nodiscard]] std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                                        NvrtcOutput output);

/// NVRTC's version as {major, minor}; loads the library.
[[nodiscard]] std::vector<int> nvrtc_version();
/// The file NVRTC was loaded from; loads the library.
[[nodiscard]] std::string nvrtc_library_path();

}  // namespace kiln::cuda
