// Convolution loops, compiled per CPU capability: im2col, col2im, the moves
// between NCHW and the GEMM's layout, and the bias gradient. Parallel over (sample, channel) planes, each
// written by one task, so results do not depend on the thread count. See Note
// [Convolution as im2col and GEMM] (ConvIm2col.cpp).
#include <algorithm>
#include <cstring>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/ConvStubs.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// The output columns [lo, hi) whose input column ow * stride + offset lies in [0, width).
struct ValidRange {
  int64_t lo;
  int64_t hi;
};

ValidRange valid_range(int64_t offset, int64_t stride, int64_t width, int64_t out) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = width - 1 - offset;  // largest ow * stride allowed
  const int64_t hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  return {std::min(lo, hi), hi};
}

/// Tasks of roughly kGrainSize elements each, `per_task` elements a task.
int64_t grain_for(int64_t per_task) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_task, 1)); }

template <typename T>
void im2col_typed(const T* input, T* col, const Conv2dGeometry& g, ConvChunk chunk) {
  const int64_t L = g.out_plane(), row = chunk.count * L, cg = g.group_in();
  const int64_t kk = g.kernel_h * g.kernel_w;
  parallel_for(0, chunk.count * cg, grain_for(kk * L), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / cg, c = t % cg;
      const T* src = input + ((chunk.first + n) * g.in_channels + chunk.group * cg + c) * g.in_plane();
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
          T* dst = col + (c * kk + kh * g.kernel_w + kw) * row + n * L;
          const int64_t offset_w = kw * g.dilation_w - g.pad_w;
          const ValidRange r = valid_range(offset_w, g.stride_w, g.width, g.out_w);
          for (int64_t oh = 0; oh < g.out_h; ++oh) {
            T* d = dst + oh * g.out_w;
            const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
            if (ih < 0 || ih >= g.height) {
              for (int64_t ow = 0; ow < g.out_w; ++ow) d[ow] = T(0);
              continue;
            }
            for (int64_t ow = 0; ow < r.lo; ++ow) d[ow] = T(0);
            for (int64_t ow = r.hi; ow < g.out_w; ++ow) d[ow] = T(0);
            if (r.lo == r.hi) continue;
            const T* s = src + ih * g.width + r.lo * g.stride_w + offset_w;
            if (g.stride_w == 1) {
              for (int64_t ow = r.lo; ow < r.hi; ++ow) d[ow] = s[ow - r.lo];
            } else {
              for (int64_t ow = r.lo; ow < r.hi; ++ow) d[ow] = s[(ow - r.lo) * g.stride_w];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void col2im_typed(const T* col, T* grad_input, const Conv2dGeometry& g, ConvChunk chunk) {
  const int64_t L = g.out_plane(), row = chunk.count * L, cg = g.group_in();
  const int64_t kk = g.kernel_h * g.kernel_w;
  parallel_for(0, chunk.count * cg, grain_for(kk * L), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / cg, c = t % cg;
      T* dst = grad_input + ((chunk.first + n) * g.in_channels + chunk.group * cg + c) * g.in_plane();
      std::fill(dst, dst + g.in_plane(), T(0));
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
          const T* src = col + (c * kk + kh * g.kernel_w + kw) * row + n * L;
          const int64_t offset_w = kw * g.dilation_w - g.pad_w;
          const ValidRange r = valid_range(offset_w, g.stride_w, g.width, g.out_w);
          for (int64_t oh = 0; oh < g.out_h; ++oh) {
            const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
            if (ih < 0 || ih >= g.height || r.lo == r.hi) continue;
            const T* s = src + oh * g.out_w;
            T* d = dst + ih * g.width + r.lo * g.stride_w + offset_w;
            if (g.stride_w == 1) {
              for (int64_t ow = r.lo; ow < r.hi; ++ow) d[ow - r.lo] += s[ow];
            } else {
              for (int64_t ow = r.lo; ow < r.hi; ++ow) d[(ow - r.lo) * g.stride_w] += s[ow];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void scatter_typed(const T* rows, const T* bias, T* out, const Conv2dGeometry& g, ConvChunk chunk) {
  const int64_t L = g.out_plane(), ocg = g.group_out(), row = chunk.count * L;
  parallel_for(0, chunk.count * ocg, grain_for(L), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / ocg, o = t % ocg, channel = chunk.group * ocg + o;
      const T* s = rows + o * row + n * L;
      T* d = out + ((chunk.first + n) * g.out_channels + channel) * L;
      const T b = bias != nullptr ? bias[channel] : T(0);
      for (int64_t l = 0; l < L; ++l) d[l] = s[l] + b;
    }
  });
}

template <typename T>
void gather_typed(const T* grad_out, T* rows, const Conv2dGeometry& g, ConvChunk chunk) {
  const int64_t L = g.out_plane(), ocg = g.group_out(), row = chunk.count * L;
  parallel_for(0, chunk.count * ocg, grain_for(L), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / ocg, o = t % ocg;
      const T* s = grad_out + ((chunk.first + n) * g.out_channels + chunk.group * ocg + o) * L;
      T* d = rows + o * row + n * L;
      for (int64_t l = 0; l < L; ++l) d[l] = s[l];
    }
  });
}

template <typename T>
void bias_grad_typed(const T* grad_out, T* grad_bias, int64_t batch, int64_t channels, int64_t plane) {
  parallel_for(0, channels, grain_for(batch * plane), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double acc = 0;  // one channel's sum in double: float32's error does not grow with the batch
      for (int64_t n = 0; n < batch; ++n) {
        const T* s = grad_out + (n * channels + c) * plane;
        // Eight independent partial sums: a loop the compiler vectorises (one
        // serial sum is a chain of dependent adds), in one fixed order.
        T lanes[8] = {};
        int64_t l = 0;
        for (; l + 8 <= plane; l += 8) {
          for (int k = 0; k < 8; ++k) lanes[k] += s[l + k];
        }
        T part = 0;
        for (; l < plane; ++l) part += s[l];
        for (int k = 0; k < 8; ++k) part += lanes[k];
        acc += part;
      }
      grad_bias[c] = static_cast<T>(acc);
    }
  });
}

void conv_direct_int64_kernel(const int64_t* input, const int64_t* weight, const int64_t* bias, int64_t* out,
                              const Conv2dGeometry& g) {
  // uint64_t arithmetic: the modular sum PyTorch's integer kernels wrap to, without signed overflow.
  const int64_t L = g.out_plane(), cg = g.group_in(), ocg = g.group_out(), kk = g.kernel_h * g.kernel_w;
  parallel_for(0, g.batch * g.out_channels, grain_for(L * cg * kk), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / g.out_channels, o = t % g.out_channels, group = o / ocg;
      auto* dst = reinterpret_cast<uint64_t*>(out + t * L);
      const auto b = static_cast<uint64_t>(bias != nullptr ? bias[o] : 0);
      for (int64_t l = 0; l < L; ++l) dst[l] = b;
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t* src = input + (n * g.in_channels + group * cg + c) * g.in_plane();
        const int64_t* w = weight + (o * cg + c) * kk;
        for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            const auto wv = static_cast<uint64_t>(w[kh * g.kernel_w + kw]);
            const int64_t offset_w = kw * g.dilation_w - g.pad_w;
            const ValidRange r = valid_range(offset_w, g.stride_w, g.width, g.out_w);
            for (int64_t oh = 0; oh < g.out_h; ++oh) {
              const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
              if (ih < 0 || ih >= g.height) continue;
              const int64_t* s = src + ih * g.width + offset_w;
              uint64_t* d = dst + oh * g.out_w;
              for (int64_t ow = r.lo; ow < r.hi; ++ow) d[ow] += wv * static_cast<uint64_t>(s[ow * g.stride_w]);
            }
          }
        }
      }
    }
  });
}

template <typename Fn>
void visit_conv_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

void im2col_kernel(DType dtype, const void* input, void* col, const Conv2dGeometry& g, ConvChunk chunk) {
  visit_conv_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    im2col_typed(static_cast<const T*>(input), static_cast<T*>(col), g, chunk);
  });
}

void col2im_kernel(DType dtype, const void* col, void* grad_input, const Conv2dGeometry& g, ConvChunk chunk) {
  visit_conv_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    col2im_typed(static_cast<const T*>(col), static_cast<T*>(grad_input), g, chunk);
  });
}

void scatter_kernel(DType dtype, const void* rows, const void* bias, void* out, const Conv2dGeometry& g,
                    ConvChunk chunk) {
  visit_conv_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    scatter_typed(static_cast<const T*>(rows), static_cast<const T*>(bias), static_cast<T*>(out), g, chunk);
  });
}

void gather_kernel(DType dtype, const void* grad_out, void* rows, const Conv2dGeometry& g, ConvChunk chunk) {
  visit_conv_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    gather_typed(static_cast<const T*>(grad_out), static_cast<T*>(rows), g, chunk);
  });
}

void bias_grad_kernel(DType dtype, const void* grad_out, void* grad_bias, int64_t batch, int64_t channels,
                      int64_t plane) {
  visit_conv_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    bias_grad_typed(static_cast<const T*>(grad_out), static_cast<T*>(grad_bias), batch, channels, plane);
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(im2col_stub, &im2col_kernel);
KILN_REGISTER_DISPATCH(conv_direct_int64_stub, &conv_direct_int64_kernel);
KILN_REGISTER_DISPATCH(col2im_stub, &col2im_kernel);
KILN_REGISTER_DISPATCH(conv_scatter_stub, &scatter_kernel);
KILN_REGISTER_DISPATCH(conv_gather_stub, &gather_kernel);
KILN_REGISTER_DISPATCH(conv_bias_grad_stub, &bias_grad_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
