// Loads cuBLASLt and runs GEMMs with a bias epilogue through it.
#include "eager/cuda/CublasLt.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/DynamicLibrary.h"

namespace kiln::cuda {

namespace {

using cublasStatus_t = int;
struct cublasLtContext;
using cublasLtHandle_t = cublasLtContext*;
struct cublasLtMatmulDescOpaque;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque*;
struct cublasLtMatrixLayoutOpaque;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque*;
struct cublasLtMatmulPreferenceOpaque;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque*;

// cublasLt.h's and library_types.h's values (CUDA 13.0).
struct MatmulAlgo {
  uint64_t data[8];
};
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspace_size;
  cublasStatus_t state;
  float waves_count;
  int reserved[4];
};
constexpr int kDescTransA = 3;        // CUBLASLT_MATMUL_DESC_TRANSA (int32_t)
constexpr int kDescTransB = 4;        // CUBLASLT_MATMUL_DESC_TRANSB (int32_t)
constexpr int kDescEpilogue = 7;      // CUBLASLT_MATMUL_DESC_EPILOGUE (uint32_t)
constexpr int kDescBiasPointer = 8;   // CUBLASLT_MATMUL_DESC_BIAS_POINTER (void*)
constexpr uint32_t kEpilogueBias = 4;  // CUBLASLT_EPILOGUE_BIAS
constexpr int kPrefMaxWorkspace = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64_t)
constexpr int kComputeFloat = 68;     // CUBLAS_COMPUTE_32F
constexpr int kDataFloat = 0;         // CUDA_R_32F
constexpr int kDataHalf = 2;          // CUDA_R_16F
constexpr int kDataBFloat16 = 14;     // CUDA_R_16BF

const LibrarySpec kCublasLtSpec{
    "cuBLASLt", "libcublasLt.so.13", "KILN_CUBLASLT_LIBRARY",
    "Install it with `pip install \"nvidia-cublas==13.0.*\"` (scripts/setup.sh installs it into .venv).", nullptr};

struct CublasLtApi {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t*);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t*, int, int);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int, const void*, size_t);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t*, int, uint64_t, uint64_t, int64_t);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t*);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, int, const void*, size_t);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                                   HeuristicResult*, int*);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                                   cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                                   const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                   const MatmulAlgo*, void*, size_t, CUstream);
  const char* (*cublasLtGetStatusString)(cublasStatus_t);
  std::string path;
};

/// The API, or nullptr when the library does not load (remembered: tried once).
const CublasLtApi* cublaslt() {
  static std::once_flag once;
  static std::unique_ptr<CublasLtApi> api;
  std::call_once(once, [] {
    try {
      DynamicLibrary lib(kCublasLtSpec);
      auto a = std::make_unique<CublasLtApi>();
      lib.resolve(a->cublasLtCreate, "cublasLtCreate");
      lib.resolve(a->cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
      lib.resolve(a->cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
      lib.resolve(a->cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
      lib.resolve(a->cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
      lib.resolve(a->cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
      lib.resolve(a->cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
      lib.resolve(a->cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
      lib.resolve(a->cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
      lib.resolve(a->cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
      lib.resolve(a->cublasLtMatmul, "cublasLtMatmul");
      lib.resolve(a->cublasLtGetStatusString, "cublasLtGetStatusString");
      a->path = lib.path();
      api = std::move(a);
    } catch (const std::exception&) {
      api.reset();
    }
  });
  return api.get();
}

/// One handle per device (cublasLt handles may be shared across threads).
cublasLtHandle_t handle_for(const CublasLtApi& a, int device) {
  static std::mutex mutex;
  static std::unordered_map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t r = a.cublasLtCreate(&h);
  KILN_CHECK(r == 0, "cuBLASLt error in cublasLtCreate: ", a.cublasLtGetStatusString(r));
  handles.emplace(device, h);
  return h;
}

int data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kDataFloat;
    case DType::Float16: return kDataHalf;
    case DType::BFloat16: return kDataBFloat16;
    default: return -1;
  }
}

/// Destroys the descriptors of one call on every path.
struct Descriptors {
  const CublasLtApi& a;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  explicit Descriptors(const CublasLtApi& api) : a(api) {}
  ~Descriptors() {
    if (pref) a.cublasLtMatmulPreferenceDestroy(pref);
    if (lc) a.cublasLtMatrixLayoutDestroy(lc);
    if (lb) a.cublasLtMatrixLayoutDestroy(lb);
    if (la) a.cublasLtMatrixLayoutDestroy(la);
    if (op) a.cublasLtMatmulDescDestroy(op);
  }
};

// The algorithm per (device, dtype, transa, transb, m, n, k, lda, ldb, ldc, workspace), nullopt
// when cuBLASLt has none (then the caller falls back every time without asking again).
using AlgoKey = std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, size_t>;

}  // namespace

bool cublaslt_available() { return cublaslt() != nullptr; }

const char* cublaslt_library_path() {
  const CublasLtApi* a = cublaslt();
  return a ? a->path.c_str() : "";
}

bool gemm_bias_epilogue(const Stream& stream, DType dtype, const GemmArgs& g, const void* bias, void* workspace,
                        size_t workspace_bytes) {
  const CublasLtApi* api = cublaslt();
  const int type = data_type(dtype);
  if (api == nullptr || type < 0 || g.batch != 1 || g.m <= 0 || g.n <= 0 || g.k <= 0) return false;
  const CublasLtApi& a = *api;
  DeviceGuard guard(stream.device());
  cublasLtHandle_t h = handle_for(a, stream.device());
  Descriptors d(a);
  auto ok = [](cublasStatus_t r) { return r == 0; };
  const int32_t ta = g.transa ? 1 : 0;
  const int32_t tb = g.transb ? 1 : 0;
  const uint32_t epilogue = kEpilogueBias;
  const uint64_t max_workspace = workspace_bytes;
  const auto rows = [](bool trans, int64_t r, int64_t c) { return static_cast<uint64_t>(trans ? c : r); };
  const auto cols = [](bool trans, int64_t r, int64_t c) { return static_cast<uint64_t>(trans ? r : c); };
  if (!ok(a.cublasLtMatmulDescCreate(&d.op, kComputeFloat, kDataFloat)) ||
      !ok(a.cublasLtMatmulDescSetAttribute(d.op, kDescTransA, &ta, sizeof(ta))) ||
      !ok(a.cublasLtMatmulDescSetAttribute(d.op, kDescTransB, &tb, sizeof(tb))) ||
      !ok(a.cublasLtMatmulDescSetAttribute(d.op, kDescEpilogue, &epilogue, sizeof(epilogue))) ||
      !ok(a.cublasLtMatmulDescSetAttribute(d.op, kDescBiasPointer, &bias, sizeof(bias))) ||
      // op(A) is m x k, op(B) k x n, D m x n, all column-major.
      !ok(a.cublasLtMatrixLayoutCreate(&d.la, type, rows(g.transa, g.m, g.k), cols(g.transa, g.m, g.k), g.lda)) ||
      !ok(a.cublasLtMatrixLayoutCreate(&d.lb, type, rows(g.transb, g.k, g.n), cols(g.transb, g.k, g.n), g.ldb)) ||
      !ok(a.cublasLtMatrixLayoutCreate(&d.lc, type, static_cast<uint64_t>(g.m), static_cast<uint64_t>(g.n), g.ldc))) {
    return false;
  }
  static std::mutex mutex;
  static std::map<AlgoKey, std::optional<MatmulAlgo>> algos;
  const AlgoKey key{stream.device(), type, g.transa, g.transb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, workspace_bytes};
  std::optional<MatmulAlgo> algo;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = algos.find(key);
    if (it != algos.end()) {
      algo = it->second;
    } else {
      HeuristicResult result{};
      int found = 0;
      if (ok(a.cublasLtMatmulPreferenceCreate(&d.pref)) &&
          ok(a.cublasLtMatmulPreferenceSetAttribute(d.pref, kPrefMaxWorkspace, &max_workspace,
                                                    sizeof(max_workspace))) &&
          ok(a.cublasLtMatmulAlgoGetHeuristic(h, d.op, d.la, d.lb, d.lc, d.lc, d.pref, 1, &result, &found)) &&
          found > 0 && result.state == 0 && result.workspace_size <= workspace_bytes) {
        algo = result.algo;
      }
      algos.emplace(key, algo);
    }
  }
  if (!algo) return false;
  const float alpha = static_cast<float>(g.alpha);
  const float beta = 0.0f;
  const cublasStatus_t r = a.cublasLtMatmul(h, d.op, &alpha, g.a, d.la, g.b, d.lb, &beta, g.c, d.lc, g.c, d.lc,
                                            &*algo, workspace, workspace_bytes, stream.handle());
  KILN_CHECK(r == 0, "cuBLASLt error in cublasLtMatmul: ", a.cublasLtGetStatusString(r));
  return true;
}

}  // namespace kiln::cuda
