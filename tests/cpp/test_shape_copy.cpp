// Layout copies (eager/kernels/cpu/copy/ShapeCopy.h): planning (dims ordered by the
// destination, dense neighbours merged, transposes tiled), the copy itself
// against a reference loop, and PyTorch's layout rules for new tensors.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"

using namespace kiln;
using namespace kiln::native;

namespace {

std::vector<int64_t> vec(IntArrayRef r) { return {r.begin(), r.end()}; }

Tensor iota_f32(IntArrayRef sizes) {
  Tensor t = empty(sizes, DType::Float32);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}

/// The element at a multi-index, read through strides.
float at(const Tensor& t, IntArrayRef index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return t.data_ptr<float>()[offset];
}

void expect_equal_elements(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(vec(a.sizes()), vec(b.sizes()));
  std::vector<int64_t> index(a.sizes().size(), 0);
  for (int64_t n = 0; n < a.numel(); ++n) {
    ASSERT_EQ(at(a, index), at(b, index)) << "at linear index " << n;
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < a.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

TEST(ShapeCopy, ContiguousCopyMergesToOneDim) {
  char dst[96];
  char src[96];
  const StridedCopyPlan plan = plan_strided_copy(dst, {12, 4, 1}, src, {12, 4, 1}, {2, 3, 4}, 4);
  EXPECT_EQ(plan.ndim, 1);
  EXPECT_EQ(plan.sizes[0], 24);
  EXPECT_FALSE(plan.tiled);
}

TEST(ShapeCopy, SizeOneDimsDropAndBroadcastKeepsStrideZero) {
  char dst[64];
  char src[8];
  const StridedCopyPlan plan = plan_strided_copy(dst, {4, 1, 1}, src, {0, 0, 1}, {4, 1, 1}, 4);
  EXPECT_EQ(plan.ndim, 1);
  EXPECT_EQ(plan.src_strides[0], 0);
}

TEST(ShapeCopy, TransposeIsTiled) {
  char dst[4];
  char src[4];
  const StridedCopyPlan plan = plan_strided_copy(dst, {64, 1}, src, {1, 64}, {64, 64}, 4);
  EXPECT_TRUE(plan.tiled);
  const StridedCopyPlan small = plan_strided_copy(dst, {4, 1}, src, {1, 4}, {4, 4}, 4);
  EXPECT_FALSE(small.tiled);  // below one tile: plain rows
}

TEST(ShapeCopy, CopiesMatchTheReferenceForEveryPath) {
  const Tensor base = iota_f32({37, 53});
  const std::vector<Tensor> sources = {
      base,                                   // memcpy
      transpose(base, 0, 1),                  // tiled transpose with ragged edges
      slice(base, 1, 1, 50, 3),               // strided rows
      native::make_view(base, {{4, 53}, {0, 1}, 0}),      // broadcast
  };
  for (const Tensor& src : sources) {
    Tensor dst = empty(src.sizes(), DType::Float32);
    copy_same_dtype(dst, src);
    expect_equal_elements(dst, src);
  }
}

TEST(ShapeCopy, ReversedSourceRows) {
  // flip builds its source with negative strides from the last element.
  const Tensor base = iota_f32({37, 53});
  Tensor dst = empty({37, 53}, DType::Float32);
  copy_strided(static_cast<char*>(dst.data_ptr()), {53, 1}, static_cast<const char*>(base.data_ptr()) + 52 * 4,
               {53, -1}, {37, 53}, 4);
  for (int64_t i = 0; i < 37; ++i) {
    for (int64_t j = 0; j < 53; ++j) ASSERT_EQ(at(dst, {i, j}), at(base, {i, 52 - j}));
  }
}

TEST(ShapeCopy, DenseLayouts) {
  EXPECT_TRUE(is_non_overlapping_and_dense({2, 3}, {1, 2}));
  EXPECT_FALSE(is_non_overlapping_and_dense({2, 3}, {6, 2}));
  EXPECT_TRUE(is_non_overlapping_and_dense({2, 0, 3}, {6, 6, 2}));  // empty counts as contiguous
  EXPECT_FALSE(is_non_overlapping_and_dense({2, 3}, {0, 1}));
  // Stride order kept, zero strides stay put (PyTorch's infer_dense_strides).
  EXPECT_EQ(vec(infer_dense_strides({2, 3, 4}, {1, 8, 2})), (std::vector<int64_t>{1, 8, 2}));
  EXPECT_EQ(vec(infer_dense_strides({2, 4, 3, 2}, {0, 1, 4, 12})), (std::vector<int64_t>{24, 1, 4, 12}));
}

TEST(ShapeCopy, ChannelsLastLayouts) {
  const Tensor nchw = empty({2, 3, 4, 5}, DType::Float32);
  EXPECT_EQ(suggest_memory_format(nchw), MemoryFormat::Contiguous);
  const Tensor nhwc = empty_like_format(nchw, MemoryFormat::ChannelsLast);
  EXPECT_EQ(vec(nhwc.strides()), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(suggest_memory_format(nhwc), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(is_contiguous_as(nhwc, MemoryFormat::ChannelsLast));
  EXPECT_FALSE(is_contiguous_as(nhwc, MemoryFormat::Contiguous));
  EXPECT_EQ(vec(empty_like_format(nhwc, MemoryFormat::Preserve).strides()), vec(nhwc.strides()));
}
