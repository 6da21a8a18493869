// The launch helpers of CudaLaunch.h.
#include "eager/kernels/cuda/CudaLaunch.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/KernelCache.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "kiln/generated/Functions.h"

namespace kiln::native::cuda_kernels {

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65535LL * 8));
}

}  // namespace

template <int N>
IndexerParam<N> indexer_of(const TensorIterator& iter) {
  KILN_INTERNAL_ASSERT(iter.ntensors() == N, "indexer_of: operand count");
  IndexerParam<N> p{};
  const IntArrayRef shape = iter.iteration_shape();
  KILN_CHECK(static_cast<int>(shape.size()) <= kMaxDims, "CUDA kernels take at most ", kMaxDims, " dimensions");
  p.ndim = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) p.sizes[d] = shape[d];
  for (int k = 0; k < N; ++k) {
    p.data[k] = iter.operand_data(k);
    const IntArrayRef strides = iter.operand_byte_strides(k);
    for (size_t d = 0; d < strides.size() && d < shape.size(); ++d) p.strides[k][d] = strides[d];
  }
  return p;
}

template <int N>
IndexerParam<N> indexer_of(const std::vector<Tensor>& tensors) {
  IndexerParam<N> p{};
  const IntArrayRef sizes = tensors[0].sizes();
  const int ndim = static_cast<int>(sizes.size());
  KILN_CHECK(ndim <= kMaxDims, "CUDA kernels take at most ", kMaxDims, " dimensions");
  p.ndim = ndim;
  for (int d = 0; d < ndim; ++d) p.sizes[d] = sizes[static_cast<size_t>(ndim - 1 - d)];
  for (int k = 0; k < N; ++k) {
    const Tensor& t = tensors[static_cast<size_t>(k)];
    p.data[k] = t.data_ptr();
    for (int d = 0; d < ndim; ++d) p.strides[k][d] = t.strides()[static_cast<size_t>(ndim - 1 - d)] * t.itemsize();
  }
  return p;
}

template IndexerParam<1> indexer_of<1>(const TensorIterator&);
template IndexerParam<2> indexer_of<2>(const TensorIterator&);
template IndexerParam<3> indexer_of<3>(const TensorIterator&);
template IndexerParam<4> indexer_of<4>(const TensorIterator&);
template IndexerParam<1> indexer_of<1>(const std::vector<Tensor>&);
template IndexerParam<2> indexer_of<2>(const std::vector<Tensor>&);
template IndexerParam<4> indexer_of<4>(const std::vector<Tensor>&);

void launch_elementwise(const KernelInstance& kernel, int device, int64_t n, std::vector<void*> params) {
  if (n == 0) return;
  cuda::CUfunction fn = cuda::get_kernel(device, module_source({kernel}), kernel.name);
  cuda::launch_kernel(fn, grid_for(n), kBlock, 0, cuda::current_stream(device), params.data());
}

void launch_rows(const KernelInstance& kernel, int device, int64_t rows, std::vector<void*> params) {
  if (rows == 0) return;
  cuda::CUfunction fn = cuda::get_kernel(device, module_source({kernel}), kernel.name);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 8));
  cuda::launch_kernel(fn, grid, kBlock, 0, cuda::current_stream(device), params.data());
}

int device_of(const Tensor& t) { return t.device().index() < 0 ? cuda::current_device() : t.device().index(); }

std::vector<Tensor> on_one_device(const std::vector<Tensor>& tensors, const char* op) {
  Device target;
  bool found = false;
  for (const Tensor& t : tensors) {
    if (t.defined() && t.device().is_cuda()) {
      target = t.device();
      found = true;
      break;
    }
  }
  KILN_INTERNAL_ASSERT(found, op, ": a CUDA kernel ran without a CUDA tensor");
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.device() == target) {
      out.push_back(t);
    } else if (t.device().is_cpu() && t.dim() == 0) {
      Tensor moved = kiln::_to_copy(t, std::nullopt, target, false, std::nullopt);
      if (t.impl()->is_wrapped_number()) moved.impl()->set_wrapped_number(true);
      out.push_back(moved);
    } else {
      Device other = t.device();
      KILN_FAIL(Runtime, "Expected all tensors to be on the same device, but found at least two devices, ", target,
                " and ", other, "! (in ", op, ")");
    }
  }
  return out;
}

Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  return to_copy_across_devices(t, dtype, t.device(), false, MemoryFormat::Contiguous);
}

Tensor bad_index_flag(const Device& device) { return kiln::zeros({2}, DType::Int64, device); }

std::optional<int64_t> read_bad_index(const Tensor& flag) {
  const Tensor host = to_copy_across_devices(flag, std::nullopt, Device(DeviceType::CPU), false, std::nullopt);
  const int64_t* v = host.data_ptr<int64_t>();
  if (v[0] == 0) return std::nullopt;
  return v[1];
}

void check_kernel_dtype(DType dtype, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(is_cuda_kernel_dtype(dtype), "\"", op, "_cuda\" not implemented for '",
                             scalar_type_name(dtype), "'");
}

}  // namespace kiln::native::cuda_kernels
