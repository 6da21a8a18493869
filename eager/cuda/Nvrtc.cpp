// Loads NVRTC and compiles kernel sources with it.
#include "eager/cuda/Nvrtc.h"

#include <memory>
#include <mutex>

#include "eager/core/Error.h"
#include "eager/cuda/DynamicLibrary.h"

namespace kiln::cuda {

namespace {

using nvrtcResult = int;
struct nvrtcProgramImpl;
using nvrtcProgram = nvrtcProgramImpl*;

// Note [NVRTC's builtins]
// -----------------------
// libnvrtc.so.13 dlopens libnvrtc-builtins.so.13.0 by soname when it compiles,
// and the wheel's libnvrtc has no RUNPATH, so the dynamic linker would not look
// beside it. DynamicLibrary loads the companion by full path (RTLD_GLOBAL) from
// the folder it found libnvrtc in, first; NVRTC's own dlopen then finds the
// library already loaded. The soname carries the toolkit's minor version, which
// is why setup.sh pins the wheel to the 13.0 series (the toolkit's ptxas also
// refuses PTX from a newer NVRTC).
const LibrarySpec kNvrtcSpec{
    "NVRTC", "libnvrtc.so.13", "KILN_NVRTC_LIBRARY",
    "Install it with `pip install \"nvidia-cuda-nvrtc==13.0.*\"` (scripts/setup.sh installs it into .venv).",
    "libnvrtc-builtins.so.13.0"};

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  std::string path;
};

const NvrtcApi& nvrtc() {
  // A failed load is not remembered: the next call tries again (and throws again),
  // so a test that points KILN_NVRTC_LIBRARY at a bogus path leaves no trace.
  static std::mutex mutex;
  static std::unique_ptr<NvrtcApi> api;
  std::lock_guard<std::mutex> lock(mutex);
  if (api) return *api;
  DynamicLibrary lib(kNvrtcSpec);
  auto a = std::make_unique<NvrtcApi>();
  lib.resolve(a->nvrtcGetErrorString, "nvrtcGetErrorString");
  lib.resolve(a->nvrtcVersion, "nvrtcVersion");
  lib.resolve(a->nvrtcCreateProgram, "nvrtcCreateProgram");
  lib.resolve(a->nvrtcDestroyProgram, "nvrtcDestroyProgram");
  lib.resolve(a->nvrtcCompileProgram, "nvrtcCompileProgram");
  lib.resolve(a->nvrtcGetPTXSize, "nvrtcGetPTXSize");
  lib.resolve(a->nvrtcGetPTX, "nvrtcGetPTX");
  lib.resolve(a->nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  lib.resolve(a->nvrtcGetCUBIN, "nvrtcGetCUBIN");
  lib.resolve(a->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  lib.resolve(a->nvrtcGetProgramLog, "nvrtcGetProgramLog");
  a->path = lib.path();
  api = std::move(a);
  return *api;
}

void check_nvrtc(const NvrtcApi& a, nvrtcResult r, const char* what) {
  KILN_CHECK(r == 0, "NVRTC error in ", what, ": ", a.nvrtcGetErrorString(r));
}

}  // namespace

std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          NvrtcOutput output) {
  const NvrtcApi& a = nvrtc();
  KILN_CHECK(arch.rfind("sm_", 0) == 0, "nvrtc_compile: arch must look like sm_90, got ", arch);
  nvrtcProgram prog = nullptr;
  check_nvrtc(a, a.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) {
    if (*p != nullptr) nvrtc().nvrtcDestroyProgram(p);
  });
  const std::string arch_option =
      "--gpu-architecture=" + (output == NvrtcOutput::Ptx ? "compute_" + arch.substr(3) : arch);
  const char* options[] = {arch_option.c_str(), "--std=c++17", "-default-device"};
  const nvrtcResult compiled = a.nvrtcCompileProgram(prog, 3, options);
  if (compiled != 0) {
    size_t log_size = 0;
    a.nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) a.nvrtcGetProgramLog(prog, log.data());
    KILN_FAIL(Runtime, "NVRTC could not compile ", name, " for ", arch, ": ", a.nvrtcGetErrorString(compiled), "\n",
              log);
  }
  size_t size = 0;
  std::string out;
  if (output == NvrtcOutput::Ptx) {
    check_nvrtc(a, a.nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
    out.resize(size);
    check_nvrtc(a, a.nvrtcGetPTX(prog, out.data()), "nvrtcGetPTX");
    if (!out.empty() && out.back() == '\0') out.pop_back();
  } else {
    check_nvrtc(a, a.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.resize(size);
    check_nvrtc(a, a.nvrtcGetCUBIN(prog, out.data()), "nvrtcGetCUBIN");
  }
  return out;
}

std::vector<int> nvrtc_version() {
  int major = 0;
  int minor = 0;
  const NvrtcApi& a = nvrtc();
  check_nvrtc(a, a.nvrtcVersion(&major, &minor), "nvrtcVersion");
  return {major, minor};
}

std::string nvrtc_library_path() { return nvrtc().path; }

}  // namespace kiln::cuda
