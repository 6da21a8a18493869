// The memory and disk cache of compiled CUDA modules.
#include "eager/cuda/KernelCache.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/Nvrtc.h"

namespace kiln::cuda {

namespace {

std::atomic<int64_t> g_compiles{0};

/// FNV-1a, 64 bit: a stable hash for file names and the integrity check.
uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("KILN_CUDA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "kiln" / "cuda";
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "kiln" / "cuda";
  }
  return {};
}

// A cache file: "KILNCUBIN1 <size> <hash>\n" then the cubin's bytes.
std::string read_cached(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::string magic;
  size_t size = 0;
  std::string hash;
  in >> magic >> size >> hash;
  in.get();
  if (magic != "KILNCUBIN1" || !in) return {};
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size || hex(fnv1a(bytes)) != hash) return {};
  return bytes;
}

void write_cached(const std::filesystem::path& file, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return;
  const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out << "KILNCUBIN1 " << bytes.size() << " " << hex(fnv1a(bytes)) << "\n";
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return;
  }
  std::filesystem::rename(tmp, file, ec);  // atomic: readers see the old file or the whole new one
  if (ec) std::filesystem::remove(tmp, ec);
}

struct Key {
  int device;
  uint64_t source_hash;
  std::string kernel;
  bool operator<(const Key& o) const {
    return std::tie(device, source_hash, kernel) < std::tie(o.device, o.source_hash, o.kernel);
  }
};

std::mutex g_mutex;
std::map<Key, CUfunction> g_functions;
std::map<std::pair<int, uint64_t>, CUmodule> g_modules;
std::map<int, std::string> g_arch;

}  // namespace

CUfunction get_kernel(int device, const std::string& source, const std::string& kernel_name) {
  const uint64_t h = fnv1a(source);
  std::lock_guard<std::mutex> lock(g_mutex);
  const Key key{device, h, kernel_name};
  if (auto it = g_functions.find(key); it != g_functions.end()) return it->second;
  DeviceGuard guard(device);
  CUmodule& module = g_modules[{device, h}];
  if (module == nullptr) {
    auto arch = g_arch.find(device);
    if (arch == g_arch.end()) arch = g_arch.emplace(device, device_arch(device)).first;
    const std::filesystem::path dir = cache_dir();
    const std::filesystem::path file = dir.empty() ? dir : dir / arch->second / (hex(h) + ".cubin");
    std::string cubin = file.empty() ? std::string() : read_cached(file);
    if (cubin.empty()) {
      cubin = nvrtc_compile(source, kernel_name + ".cu", arch->second, NvrtcOutput::Cubin);
      ++g_compiles;
      if (!file.empty()) write_cached(file, cubin);
    }
    check(driver().cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  }
  CUfunction fn = nullptr;
  check(driver().cuModuleGetFunction(&fn, module, kernel_name.c_str()), "cuModuleGetFunction");
  g_functions.emplace(key, fn);
  return fn;
}

void launch_kernel(CUfunction fn, unsigned grid, unsigned block, unsigned shared_bytes, const Stream& stream,
                   void** params) {
  DeviceGuard guard(stream.device());
  check(driver().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared_bytes, stream.handle(), params, nullptr),
        "cuLaunchKernel");
}

int64_t nvrtc_compile_count() { return g_compiles.load(); }

}  // namespace kiln::cuda
