// Copies, fills and device moves involving CUDA memory (CudaCopy.h).
#include "eager/kernels/cuda/CudaCopy.h"

#include <algorithm>
#include <cstring>

#include "eager/core/Error.h"
#include "eager/cuda/CudaAllocator.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaLaunch.h"

namespace kiln::native {

namespace {

using cuda_kernels::device_of;
using cuda_kernels::indexer_of;
using cuda_kernels::IndexerParam;

cuda::CUdeviceptr dptr(const void* p) { return reinterpret_cast<cuda::CUdeviceptr>(p); }

/// dst <- src on one CUDA device, both of dst's shape: a memcpy when the bytes
/// line up, else the cast kernel over both strides.
void copy_on_device(const Tensor& dst, const Tensor& src) {
  const int device = device_of(dst);
  cuda::DeviceGuard guard(device);
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    cuda::check(cuda::driver().cuMemcpyDtoDAsync(dptr(dst.data_ptr()), dptr(src.data_ptr()),
                                                 static_cast<size_t>(dst.nbytes()), cuda::current_stream(device).handle()),
                "cuMemcpyDtoDAsync");
    return;
  }
  cuda_kernels::check_kernel_dtype(src.dtype(), "copy");
  cuda_kernels::check_kernel_dtype(dst.dtype(), "copy");
  IndexerParam<2> ix = indexer_of<2>(std::vector<Tensor>{dst, src});
  long long n = dst.numel();
  cuda_kernels::launch_elementwise(cuda_kernels::cast_kernel(src.dtype(), dst.dtype()), device, n, {&ix, &n});
}

/// A contiguous tensor on `t`'s device with t's values in `dtype` (t itself when it already is).
Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.sizes(), dtype, t.device());
  if (t.device().is_cuda()) {
    copy_on_device(out, t);
  } else {
    kiln::copy_(out, t);
  }
  return out;
}

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const int device = device_of(dst);
  cuda::DeviceGuard guard(device);
  const Tensor host = contiguous_as(src, dst.dtype());
  const Tensor target = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.dtype(), dst.device());
  const cuda::Stream stream = cuda::current_stream(device);
  cuda::check(cuda::driver().cuMemcpyHtoDAsync(dptr(target.data_ptr()), host.data_ptr(),
                                               static_cast<size_t>(target.nbytes()), stream.handle()),
              "cuMemcpyHtoDAsync");
  if (!target.is_same(dst)) copy_on_device(dst, target);
  // Asynchronous only from the caller's own pinned memory (a converted copy dies here).
  const bool async = non_blocking && host.is_same(src) && is_pinned(src);
  if (!async) stream.synchronize();
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const int device = device_of(src);
  cuda::DeviceGuard guard(device);
  const Tensor dev = contiguous_as(src, dst.dtype());
  const bool direct = dst.is_contiguous();
  const Tensor host = direct ? dst : empty(dst.sizes(), dst.dtype(), Device());
  const cuda::Stream stream = cuda::current_stream(device);
  cuda::check(cuda::driver().cuMemcpyDtoHAsync(host.data_ptr(), dptr(dev.data_ptr()),
                                               static_cast<size_t>(host.nbytes()), stream.handle()),
              "cuMemcpyDtoHAsync");
  const bool async = non_blocking && direct && is_pinned(dst);
  if (!async) stream.synchronize();
  if (!direct) kiln::copy_(dst, host);
}

void device_to_device(const Tensor& dst, const Tensor& src) {
  if (device_of(dst) == device_of(src)) {
    copy_on_device(dst, src);
    return;
  }
  // Across devices: contiguous bytes of dst's dtype on src's device, a peer copy, then dst's layout.
  const Tensor staged = contiguous_as(src, dst.dtype());
  const Tensor target = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.dtype(), dst.device());
  cuda::DeviceGuard guard(device_of(dst));
  // The source's work must be done before the peer copy, which runs on dst's stream.
  cuda::current_stream(device_of(src)).synchronize();
  cuda::check(cuda::driver().cuMemcpyPeerAsync(dptr(target.data_ptr()), cuda::primary_context(device_of(dst)),
                                               dptr(staged.data_ptr()), cuda::primary_context(device_of(src)),
                                               static_cast<size_t>(target.nbytes()),
                                               cuda::current_stream(device_of(dst)).handle()),
              "cuMemcpyPeerAsync");
  if (!target.is_same(dst)) copy_on_device(dst, target);
}

}  // namespace

void cuda_copy(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const bool same_shape = std::equal(src.sizes().begin(), src.sizes().end(), dst.sizes().begin(), dst.sizes().end());
  const Tensor source = same_shape ? src : src.expand(dst.sizes());
  if (is_complex(dst.dtype()) && dst.dtype() == source.dtype()) {
    // Complex values of one dtype move as their real views (pairs of reals): no complex kernel needed.
    cuda_copy(view_as_real_impl(dst), view_as_real_impl(source), non_blocking);
    return;
  }
  KILN_CHECK(!is_complex(dst.dtype()) && !is_complex(src.dtype()),
             "copy_: converting complex tensors to or from another dtype is not supported on CUDA yet");
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda() && source.device().is_cuda()) {
    device_to_device(dst, source);
  } else if (dst.device().is_cuda()) {
    host_to_device(dst, source, non_blocking);
  } else {
    device_to_host(dst, source, non_blocking);
  }
}

void cuda_fill(const Tensor& self, const Scalar& value) {
  cuda_kernels::check_kernel_dtype(self.dtype(), "fill");
  if (self.numel() == 0) return;
  long long bits = 0;
  visit_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = checked_scalar_to<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  const int device = device_of(self);
  cuda::DeviceGuard guard(device);
  IndexerParam<1> ix = indexer_of<1>(std::vector<Tensor>{self});
  long long n = self.numel();
  cuda_kernels::launch_elementwise(cuda_kernels::fill_kernel(self.dtype()), device, n, {&ix, &n, &bits});
}

Tensor to_copy_across_devices(const Tensor& self, std::optional<DType> dtype, Device device, bool non_blocking,
                              std::optional<MemoryFormat> memory_format) {
  const MemoryFormat format = memory_format.value_or(MemoryFormat::Preserve);
  DimVector strides = format == MemoryFormat::Preserve
                          ? (is_non_overlapping_and_dense(self.sizes(), self.strides())
                                 ? infer_dense_strides(self.sizes(), self.strides())
                                 : contiguous_strides(self.sizes()))
                          : strides_for_memory_format(self.sizes(), format);
  if (device.is_cuda() && !device.has_index()) device = Device(DeviceType::CUDA, static_cast<int8_t>(cuda::current_device()));
  Tensor result;
  {
    // The new memory comes from the target device's allocator.
    std::optional<cuda::DeviceGuard> guard;
    if (device.is_cuda()) guard.emplace(device.index());
    result = empty_strided(self.sizes(), strides, dtype.value_or(self.dtype()), device);
  }
  cuda_copy(result, self, non_blocking);
  return result;
}

Tensor pin_memory(const Tensor& self) {
  KILN_CHECK(self.device().is_cpu(), "cannot pin '", self.device(), "' only dense CPU tensors can be pinned");
  DataPtr data = cuda::allocate_pinned(static_cast<size_t>(self.numel() * self.itemsize()));
  const size_t nbytes = static_cast<size_t>(self.numel() * self.itemsize());
  Tensor out(make_intrusive<TensorImpl>(make_intrusive<StorageImpl>(std::move(data), nbytes, /*resizable=*/false),
                                        self.dtype(), self.sizes(), contiguous_strides(self.sizes()), 0));
  kiln::copy_(out, self);
  return out;
}

bool is_pinned(const Tensor& self) {
  return self.defined() && self.device().is_cpu() && self.storage() && cuda::is_pinned(self.storage()->data_ptr());
}

}  // namespace kiln::native
