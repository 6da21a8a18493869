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

std::mutex g_mutex;
std::unique_ptr<NcclApi> g_api;

}  // namespace

const NcclApi& nccl() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_api) return *g_api;
  cuda::DynamicLibrary lib(kNcclSpec);
  auto a = std::make_unique<NcclApi>();
  lib.resolve(a->ncclGetErrorString, "ncclGetErrorString");
  lib.resolve(a->ncclGetVersion, "ncclGetVersion");
  lib.resolve(a->ncclGetUniqueId, "ncclGetUniqueId");
  lib.resolve(a->ncclCommInitRank, "ncclCommInitRank");
  lib.resolve(a->ncclCommDestroy, "ncclCommDestroy");
  lib.resolve(a->ncclCommAbort, "ncclCommAbort");
  lib.resolve(a->ncclAllReduce, "ncclAllReduce");
  lib.resolve(a->ncclBroadcast, "ncclBroadcast");
  lib.resolve(a->ncclAllGather, "ncclAllGather");
  lib.resolve(a->ncclReduceScatter, "ncclReduceScatter");
  lib.resolve(a->ncclSend, "ncclSend");
  lib.resolve(a->ncclRecv, "ncclRecv");
  lib.resolve(a->ncclGroupStart, "ncclGroupStart");
  lib.resolve(a->ncclGroupEnd, "ncclGroupEnd");
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
