// Loading the CUDA libraries with dlopen at first use (DESIGN.md, decision 6).
#pragma once

#include <string>
#include <vector>

namespace kiln::cuda {

/// What kiln needs to know to find one library and to say how to get it.
struct LibrarySpec {
  const char* what;         ///< "the NVIDIA driver (libcuda)", "NVRTC", "cuBLAS": for messages
  const char* soname;       ///< "libnvrtc.so.13"
  const char* env_var;      ///< a full path that overrides the search: "KILN_NVRTC_LIBRARY"
  const char* how_to_get;   ///< one sentence: which package or driver provides it
  const char* companion;    ///< a library loaded first from the same folder (nvrtc's builtins), or nullptr
};

/// One dlopen'ed library. Never unloaded (the process keeps CUDA until exit).
class DynamicLibrary {
 public:
  /// Loads `spec`: from $env_var when set, else from each folder given to
  /// add_library_search_dir (the NVIDIA wheels' lib folders, which kiln.cuda
  /// passes on), else by soname through the dynamic linker's own search.
  /// Throws kiln::Error (RuntimeError) naming the library, every path tried and
  /// its dlerror, and spec.how_to_get.
  explicit DynamicLibrary(const LibrarySpec& spec);

  /// The address of `name`; RuntimeError naming the library and the symbol when absent.
  [[nodiscard]] void* symbol(const char* name) const;
  /// The address of `name`, or nullptr.
  [[nodiscard]] void* try_symbol(const char* name) const;
  /// Stores the address of `name` in `slot`, a function pointer of the entry point's type;
  /// RuntimeError as symbol() when absent.
  template <typename Fn>
  void resolve(Fn& slot, const char* name) const {
    slot = reinterpret_cast<Fn>(symbol(name));
  }
  /// The file it was loaded from (as given to dlopen).
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  const LibrarySpec& spec_;
  void* handle_ = nullptr;
  std::string path_;
};

/// Folders searched (first, in order) for the CUDA user-space libraries.
void add_library_search_dir(const std::string& dir);
[[nodiscard]] std::vector<std::string> library_search_dirs();

}  // namespace kiln::cuda
