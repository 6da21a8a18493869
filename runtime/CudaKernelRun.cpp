// Fused kernels on CUDA tensors (CudaKernelRun.h, Note [Compiled graphs on CUDA]).
#include "runtime/CudaKernelRun.h"

#include <algorithm>
#include <cstdlib>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/CudaStream.h"
#include "eager/cuda/DriverApi.h"
#include "eager/cuda/KernelCache.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::runtime {

namespace {

constexpr int64_t kInt32Limit = int64_t{1} << 31;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;  // a grid-stride loop covers the rest

/// Compiles (first use) and launches entry `entry` of `k` with the argument words `words`.
void launch(const CudaKernel& k, const std::string& entry, int device, int64_t blocks, std::vector<uint64_t>& words) {
  KILN_INTERNAL_ASSERT(static_cast<int64_t>(words.size()) == k.source.argument_words, "CUDA kernel ", entry,
                       ": argument words");
  try {
    cuda::DeviceGuard guard(device);
    cuda::CUfunction fn = cuda::get_kernel(device, k.source.source, entry);
    void* params[1] = {words.data()};
    const unsigned grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
    cuda::launch_kernel(fn, grid, codegen::cuda::kCudaBlock, 0, cuda::current_stream(device), params);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::OutOfMemory) throw;
    KILN_FAIL(Runtime, "kiln.compile: the fused CUDA kernel ", entry, " (", k.ops, ") on cuda:", device,
              " failed: ", e.what());
  }
}

}  // namespace

int common_cuda_device(std::span<const Tensor* const> inputs) {
  int device = -1;
  for (const Tensor* t : inputs) {
    if (!t->device().is_cuda()) return -1;
    const int d = t->device().index() < 0 ? cuda::current_device() : t->device().index();
    if (device >= 0 && d != device) return -1;
    device = d;
  }
  if (device >= 0) return device;
  return cuda::driver_available() ? cuda::current_device() : -1;  // no inputs: the current device, if any
}

void launch_cuda_pointwise(const CudaKernel& k, const codegen::Kernel& kernel, int device, std::span<void* const> data,
                           int64_t numel, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  const size_t ni = kernel.input_dtypes.size();
  const int64_t r = std::max(1, kernel.rank);
  std::vector<uint64_t> words;
  for (void* p : data) words.push_back(reinterpret_cast<uint64_t>(p));
  if (data.empty()) words.push_back(0);
  words.push_back(static_cast<uint64_t>(numel));
  // The farthest element each input reaches, to pick 32-bit index math (Note [CUDA kernel arguments]).
  int64_t farthest = numel;
  if (kernel.contiguous) {
    words.push_back(static_cast<uint64_t>(numel));
    for (int64_t i = 1; i < r; ++i) words.push_back(1);
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(ni) * r);
    for (int64_t i = 0; i < n; ++i) words.push_back(0);
  } else {
    KILN_INTERNAL_ASSERT(static_cast<int64_t>(sizes.size()) == r && strides.size() == ni * static_cast<size_t>(r),
                         "CUDA kernel ", kernel.name, ": sizes and strides of rank ", r);
    for (int64_t s : sizes) words.push_back(static_cast<uint64_t>(s));
    for (size_t i = 0; i < ni; ++i) {
      int64_t reach = 0;
      for (int64_t d = 0; d < r; ++d) reach += (sizes[static_cast<size_t>(d)] - 1) * std::abs(strides[i * r + d]);
      farthest = std::max(farthest, reach + 1);
    }
    for (int64_t s : strides) words.push_back(static_cast<uint64_t>(s));
    if (strides.empty()) words.push_back(0);
  }
  const int64_t blocks = (numel + codegen::cuda::kCudaBlock - 1) / codegen::cuda::kCudaBlock;
  const int64_t threads = std::min(blocks, kMaxBlocks) * codegen::cuda::kCudaBlock;
  const bool narrow = numel + threads < kInt32Limit && farthest < kInt32Limit;
  launch(k, narrow ? k.source.entry_i32 : k.source.entry_i64, device, blocks, words);
}

bool run_cuda_row_kernel(const CudaKernel& k, const codegen::RowKernel& rk, const std::vector<Tensor>& inputs,
                         std::vector<Tensor>& outputs) {
  const codegen::Kernel& kernel = rk.kernel;
  if (inputs.size() != kernel.input_dtypes.size()) return false;
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(&t);
  const int device = common_cuda_device(pointers);
  if (device < 0) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.dtype() != kernel.input_dtypes[i]) return false;
    if (kernel.input_roles[i] == codegen::RowOperand::Scalar) {
      if (t.numel() != 1) return false;
      continue;
    }
    const auto& want = rk.input_sizes[i];
    if (!std::equal(t.sizes().begin(), t.sizes().end(), want.begin(), want.end()) || !t.is_contiguous()) return false;
  }
  std::vector<uint64_t> words;
  for (const Tensor& t : inputs) words.push_back(reinterpret_cast<uint64_t>(t.data_ptr()));
  outputs.clear();
  for (size_t o = 0; o < kernel.output_dtypes.size(); ++o) {
    outputs.push_back(kiln::empty_strided(IntArrayRef(rk.output_sizes[o]), IntArrayRef(rk.output_strides[o]),
                                          kernel.output_dtypes[o], Device(DeviceType::CUDA, static_cast<int8_t>(device))));
    words.push_back(reinterpret_cast<uint64_t>(outputs.back().data_ptr()));
  }
  if (words.empty()) words.push_back(0);
  if (rk.rows == 0 || rk.cols == 0) return true;
  words.push_back(static_cast<uint64_t>(rk.rows));
  words.push_back(static_cast<uint64_t>(rk.cols));
  // Short rows run a warp per row, 8 rows per block (Note [CUDA row kernels], codegen/cuda); the row index
  // then runs up to rows + 8 grids' worth.
  constexpr int64_t warps = codegen::cuda::kCudaBlock / 32;
  const bool warp_rows = rk.cols <= codegen::cuda::kCudaWarpRowCols;
  const int64_t blocks = warp_rows ? (rk.rows + warps - 1) / warps : rk.rows;
  const bool narrow = rk.rows * rk.cols + codegen::cuda::kCudaBlock < kInt32Limit &&
                      rk.rows + kMaxBlocks * warps < kInt32Limit;
  launch(k, narrow ? k.source.entry_i32 : k.source.entry_i64, device, blocks, words);
  return true;
}

}  // namespace kiln::runtime
