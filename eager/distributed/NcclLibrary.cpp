// Loads NCCL with dlopen (eager/cuda's DynamicLibrary) and resolves the entry points kiln uses.
#include "eager/distributed/NcclLibrary.h"

#include <memory>
#include <mutex>

#include "eager/core/Error.h"
#include "eager/cuda/DynamicLibrary.h"

namespace kiln::distributed {

namespace {

const cuda::LibrarySpec kNcclSpec{
    "NCCL", "libnccl.so.2", "KILN_NCCL_LIBRARY",
    "NCCL comes with the NVIDIA wheel `nvidia-nccl-cu13` (or -cu12): `pip install nvidia-nccl-cu13`.", nullptr};

template <typename Fn>
void resolve(const cuda::DynamicLibrary& lib, Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(lib.symbol(name));
}

std::mutex g_mutex;
std::unique_ptr<NcclApi> g_api;

}  // namespace

const NcclApi& nccl() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api) return *g_api;
  cuda::DynamicLibrary lib(kNcclSpec);
  auto a = std::make_unique<NcclApi>();
  resolve(lib, a->ncclGetErrorString, "ncclGetErrorString");
  resolve(lib, a->ncclGetVersion, "ncclGetVersion");
  resolve(lib, a->ncclGetUniqueId, "ncclGetUniqueId");
  resolve(lib, a->ncclCommInitRank, "ncclCommInitRank");
  resolve(lib, a->ncclCommDestroy, "ncclCommDestroy");
  resolve(lib, a->ncclCommAbort, "ncclCommAbort");
  resolve(lib, a->ncclAllReduce, "ncclAllReduce");
  resolve(lib, a->ncclBroadcast, "ncclBroadcast");
  resolve(lib, a->ncclAllGather, "ncclAllGather");
  resolve(lib, a->ncclReduceScatter, "ncclReduceScatter");
  resolve(lib, a->ncclSend, "ncclSend");
  resolve(lib, a->ncclRecv, "ncclRecv");
  resolve(lib, a->ncclGroupStart, "ncclGroupStart");
  resolve(lib, a->ncclGroupEnd, "ncclGroupEnd");
  a->path = lib.path();
  g_api = std::move(a);
  return *g_api;
}

bool nccl_loadable(std::string* why) {
  try {
    (void)nccl();
    return true;
  } catch (const std::exception& e) {
    if (why != nullptr) *why = e.what();
    return false;
  }
}

int nccl_version() {
  const NcclApi& api = nccl();
  int version = 0;
  check_nccl(api.ncclGetVersion(&version), "ncclGetVersion");
  return version;
}

void check_nccl(ncclResult_t result, const char* what) {
  if (result == 0) return;
  KILN_FAIL(Runtime, "NCCL error in ", what, ": ", nccl().ncclGetErrorString(result), " (ncclResult_t ", result, ")");
}

}  // namespace kiln::distributed
