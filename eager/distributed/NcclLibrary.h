// NCCL, the GPU collective library, loaded with dlopen at first use and never linked
// (DESIGN.md, decision 14): the declarations kiln needs and the loaded function table.
#pragma once

#include <cstddef>
#include <string>

namespace kiln::distributed {

// NCCL's C types, declared here as nccl.h has them (kiln does not need its headers).
using ncclResult_t = int;
using ncclDataType_t = int;
using ncclRedOp_t = int;
struct ncclComm;
using ncclComm_t = ncclComm*;
using CudaStreamHandle = void*;  // cudaStream_t
constexpr int kNcclUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};
// nccl.h's enum values (stable since NCCL 2.0; ncclAvg since 2.10, ncclBfloat16 since 2.10).
enum NcclDataType : ncclDataType_t {
  kNcclInt8 = 0, kNcclUint8 = 1, kNcclInt32 = 2, kNcclUint32 = 3, kNcclInt64 = 4, kNcclUint64 = 5,
  kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9
};
enum NcclRedOp : ncclRedOp_t { kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4 };
constexpr ncclResult_t kNcclInProgress = 7;  // ncclInProgress: a non-blocking communicator is still working

/// NCCL's entry points, resolved from libnccl.so.2.
struct NcclApi {
  const char* (*ncclGetErrorString)(ncclResult_t);
  ncclResult_t (*ncclGetVersion)(int*);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId*);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclCommAbort)(ncclComm_t);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*ncclAllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                CudaStreamHandle);
  ncclResult_t (*ncclReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                             CudaStreamHandle);
  ncclResult_t (*ncclBroadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, CudaStreamHandle);
  ncclResult_t (*ncclAllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, CudaStreamHandle);
  ncclResult_t (*ncclReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                    CudaStreamHandle);
  ncclResult_t (*ncclSend)(const void*, size_t, ncclDataType_t, int, ncclComm_t, CudaStreamHandle);
  ncclResult_t (*ncclRecv)(void*, size_t, ncclDataType_t, int, ncclComm_t, CudaStreamHandle);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  std::string path;  ///< the file it was loaded from
};

/// NCCL's function table, loading libnccl.so.2 on first use: from $KILN_NCCL_LIBRARY, the
/// NVIDIA wheels' folders (kiln.distributed adds nvidia-nccl's), then the dynamic linker's
/// search. Throws kiln::Error (RuntimeError) naming every path tried and how to install it.
/// A failed load is not remembered: the next call tries again.
const NcclApi& nccl();

/// Whether NCCL can be loaded; when not, `why` (if given) gets the loader's message. Never throws.
bool nccl_loadable(std::string* why = nullptr);

/// NCCL's version as ncclGetVersion reports it (2.21.5 is 22105). Throws as nccl() does.
int nccl_version();

/// Throws kiln::Error naming NCCL's message for `result` when it is not ncclSuccess.
void check_nccl(ncclResult_t result, const char* what);

}  // namespace kiln::distributed
