// Loads cuBLAS and runs GEMMs through it.
#include "eager/cuda/Cublas.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/DynamicLibrary.h"

namespace kiln::cuda {

namespace {

using cublasStatus_t = int;
struct cublasContext;
using cublasHandle_t = cublasContext*;

// cuBLAS's and library_types.h's enum values (CUDA 13.0).
constexpr int kOpN = 0;
constexpr int kOpT = 1;
constexpr int kGemmDefault = -1;
constexpr int kComputeFloat = 68;   // CUBLAS_COMPUTE_32F
constexpr int kComputeDouble = 70;  // CUBLAS_COMPUTE_64F
constexpr int kDataFloat = 0;       // CUDA_R_32F
constexpr int kDataDouble = 1;      // CUDA_R_64F
constexpr int kDataHalf = 2;        // CUDA_R_16F
constexpr int kDataBFloat16 = 14;   // CUDA_R_16BF

const LibrarySpec kCublasSpec{
    "cuBLAS", "libcublas.so.13", "KILN_CUBLAS_LIBRARY",
    "Install it with `pip install \"nvidia-cublas==13.0.*\"` (scripts/setup.sh installs it into .venv).", nullptr};

struct CublasApi {
  cublasStatus_t (*cublasCreate)(cublasHandle_t*);
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream);
  const char* (*cublasGetStatusString)(cublasStatus_t);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*, int,
                                               int, long long, const void*, int, int, long long, const void*, void*,
                                               int, int, long long, int, int, int);
  std::string path;
};

const CublasApi& cublas() {
  static std::mutex mutex;
  static std::unique_ptr<CublasApi> api;
  std::lock_guard<std::mutex> lock(mutex);
  if (api) return *api;
  DynamicLibrary lib(kCublasSpec);
  auto a = std::make_unique<CublasApi>();
  lib.resolve(a->cublasCreate, "cublasCreate_v2");
  lib.resolve(a->cublasSetStream, "cublasSetStream_v2");
  lib.resolve(a->cublasGetStatusString, "cublasGetStatusString");
  lib.resolve(a->cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  a->path = lib.path();
  api = std::move(a);
  return *api;
}

/// One handle per device and thread (cuBLAS handles are not thread-safe to share).
cublasHandle_t handle_for(int device) {
  thread_local std::unordered_map<int, cublasHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasHandle_t h = nullptr;
  const CublasApi& a = cublas();
  const cublasStatus_t r = a.cublasCreate(&h);
  KILN_CHECK(r == 0, "cuBLAS error in cublasCreate: ", a.cublasGetStatusString(r));
  handles.emplace(device, h);
  return h;
}

int data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return kDataFloat;
    case DType::Float64:
      return kDataDouble;
    case DType::Float16:
      return kDataHalf;
    case DType::BFloat16:
      return kDataBFloat16;
    default:
      KILN_FAIL(NotImplemented, "cuBLAS matrix products on CUDA do not support ", scalar_type_name(dtype));
  }
}

}  // namespace

void gemm(const Stream& stream, DType dtype, const GemmArgs& g) {
  const CublasApi& a = cublas();
  DeviceGuard guard(stream.device());
  cublasHandle_t h = handle_for(stream.device());
  cublasStatus_t r = a.cublasSetStream(h, stream.handle());
  KILN_CHECK(r == 0, "cuBLAS error in cublasSetStream: ", a.cublasGetStatusString(r));
  const int type = data_type(dtype);
  const bool is_double = dtype == DType::Float64;
  const double alpha_d = g.alpha;
  const double beta_d = g.beta;
  const float alpha_f = static_cast<float>(g.alpha);
  const float beta_f = static_cast<float>(g.beta);
  const void* alpha = is_double ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = is_double ? static_cast<const void*>(&beta_d) : &beta_f;
  r = a.cublasGemmStridedBatchedEx(h, g.transa ? kOpT : kOpN, g.transb ? kOpT : kOpN, static_cast<int>(g.m),
                                   static_cast<int>(g.n), static_cast<int>(g.k), alpha, g.a, type,
                                   static_cast<int>(g.lda), g.stride_a, g.b, type, static_cast<int>(g.ldb),
                                   g.stride_b, beta, g.c, type, static_cast<int>(g.ldc), g.stride_c,
                                   static_cast<int>(g.batch), is_double ? kComputeDouble : kComputeFloat,
                                   kGemmDefault);
  KILN_CHECK(r == 0, "cuBLAS error in cublasGemmStridedBatchedEx: ", a.cublasGetStatusString(r));
}

const char* cublas_library_path() { return cublas().path.c_str(); }

}  // namespace kiln::cuda
