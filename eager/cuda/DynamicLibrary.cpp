// dlopen with errors that say what is missing and how to get it.
#include "eager/cuda/DynamicLibrary.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "eager/core/Error.h"

namespace kiln::cuda {

namespace {

std::mutex g_dirs_mutex;
std::vector<std::string>& search_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

/// dlopen `path`, or nullptr with the reason appended to `tried`.
void* open_one(const std::string& path, std::ostringstream& tried) {
  // RTLD_GLOBAL: NVRTC finds its builtins library, loaded first, by soname.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    tried << "\n  " << path << ": " << (why ? why : "unknown dlopen error");
  }
  return handle;
}

}  // namespace

void add_library_search_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_dirs_mutex);
  for (const auto& d : search_dirs()) {
    if (d == dir) return;
  }
  search_dirs().push_back(dir);
}

std::vector<std::string> library_search_dirs() {
  std::lock_guard<std::mutex> lock(g_dirs_mutex);
  return search_dirs();
}

DynamicLibrary::DynamicLibrary(const LibrarySpec& spec) : spec_(spec) {
  std::ostringstream tried;
  const char* override_path = spec.env_var ? std::getenv(spec.env_var) : nullptr;
  std::vector<std::string> candidates;  // (folder or "", full path)
  std::vector<std::string> folders;
  if (override_path != nullptr && *override_path != '\0') {
    candidates.emplace_back(override_path);
    const std::string p(override_path);
    const auto slash = p.rfind('/');
    folders.push_back(slash == std::string::npos ? std::string() : p.substr(0, slash));
  } else {
    for (const auto& dir : library_search_dirs()) {
      candidates.push_back(dir + "/" + spec.soname);
      folders.push_back(dir);
    }
    candidates.emplace_back(spec.soname);  // the dynamic linker's search (LD_LIBRARY_PATH, ldconfig)
    folders.emplace_back();
  }
  for (size_t i = 0; i < candidates.size() && handle_ == nullptr; ++i) {
    if (spec.companion != nullptr && !folders[i].empty()) {
      // Loaded by full path first so the library's own dlopen of it by soname succeeds.
      dlopen((folders[i] + "/" + spec.companion).c_str(), RTLD_NOW | RTLD_GLOBAL);
    }
    handle_ = open_one(candidates[i], tried);
    if (handle_ != nullptr) path_ = candidates[i];
  }
  if (handle_ == nullptr) {
    KILN_FAIL(Runtime, "kiln.cuda: could not load ", spec.what, " (", spec.soname, "). Tried:", tried.str(), "\n",
              spec.how_to_get,
              spec.env_var ? std::string(" Or set ") + spec.env_var + " to the library's full path." : std::string());
  }
}

void* DynamicLibrary::try_symbol(const char* name) const { return dlsym(handle_, name); }

void* DynamicLibrary::symbol(const char* name) const {
  void* p = try_symbol(name);
  KILN_CHECK(p != nullptr, "kiln.cuda: ", spec_.what, " (", path_, ") has no symbol ", name,
             "; it is older than kiln needs. ", spec_.how_to_get);
  return p;
}

}  // namespace kiln::cuda
