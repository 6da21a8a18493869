// TensorImpl geometry, storage sharing, version counters, views and factories.
#include <gtest/gtest.h>

#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/ops/Tensor.h"

using namespace kiln;

namespace {

std::vector<float> values(const Tensor& t) {
  Tensor c = to_dtype_copy(t, DType::Float32);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(TensorImpl, ContiguousStridesAndFlags) {
  Tensor t = empty({2, 3, 4}, DType::Float32);
  EXPECT_EQ(std::vector<int64_t>(t.strides().begin(), t.strides().end()), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.storage()->nbytes(), 24u * 4);
  Tensor z = empty({2, 0, 3}, DType::Float32);
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(std::vector<int64_t>(z.strides().begin(), z.strides().end()), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(t.device(), Device());
  EXPECT_TRUE(t.key_set().has(DispatchKey::CPU));
}

TEST(TensorImpl, ViewsShareStorageAndVersion) {
  Tensor base = arange(Scalar(0), Scalar(12), Scalar(1), DType::Float32);
  Tensor v = view(base, std::vector<int64_t>{3, 4});
  Tensor tr = transpose(v, 0, 1);
  Tensor row = select(v, 0, 1);
  EXPECT_TRUE(v.storage() == base.storage());
  EXPECT_TRUE(tr.storage() == base.storage());
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(values(row), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(values(tr)[1], 4.f);
  EXPECT_EQ(base.version(), row.version());
  fill_(row, Scalar(-1.0));
  EXPECT_EQ(base.version(), 1u) << "a write through a view bumps the shared version counter";
  EXPECT_EQ(values(base)[5], -1.f);
  // The storage outlives the base handle while a view holds it.
  const void* data = base.data_ptr();
  base = Tensor();
  EXPECT_EQ(row.storage()->data(), data);
}

TEST(TensorImpl, SliceFollowsPythonSemantics) {
  Tensor t = arange(Scalar(0), Scalar(10), Scalar(1), DType::Int64);
  EXPECT_EQ(values(slice(t, 0, 2, 8, 3)), (std::vector<float>{2, 5}));
  EXPECT_EQ(values(slice(t, 0, -3, std::nullopt, 1)), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(slice(t, 0, 8, 2, 1).numel(), 0);
  EXPECT_EQ(slice(t, 0, 100, 200, 1).numel(), 0);
  EXPECT_EQ(slice(t, 0, 1, 4, 1).storage_offset(), 1);
}

TEST(TensorImpl, ViewRulesAndErrors) {
  Tensor t = empty({4, 6}, DType::Float32);
  EXPECT_EQ(view(t, std::vector<int64_t>{-1, 3}).size(0), 8);
  Tensor tr = transpose(t, 0, 1);
  EXPECT_EQ(view(tr, std::vector<int64_t>{6, 2, 2}).stride(0), 1) << "splitting a dim is always viewable";
  EXPECT_NE(error_of([&] { (void)view(tr, std::vector<int64_t>{24}); }).find("view size is not compatible"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { (void)view(t, std::vector<int64_t>{5, 5}); }), "shape '[5, 5]' is invalid for input of size 24");
  EXPECT_EQ(error_of([&] { (void)view(t, std::vector<int64_t>{-1, -1}); }), "only one dimension can be inferred");
}

TEST(TensorImpl, AsStridedIsBoundsChecked) {
  Tensor t = empty({10}, DType::Float32);
  EXPECT_EQ(as_strided(t, std::vector<int64_t>{3, 3}, std::vector<int64_t>{3, 1}, 1).numel(), 9);
  const std::string msg =
      error_of([&] { (void)as_strided(t, std::vector<int64_t>{4, 3}, std::vector<int64_t>{3, 1}, 0); });
  EXPECT_NE(msg.find("out of bounds for storage of size 40"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { (void)as_strided(t, std::vector<int64_t>{2}, std::vector<int64_t>{-1}, 5); })
                .find("Negative strides"),
            std::string::npos);
  EXPECT_THROW((void)select(t, 0, 10), Error);
  EXPECT_THROW((void)transpose(t, 0, 2), Error);
}

TEST(Factories, ValuesAndErrors) {
  EXPECT_EQ(values(full({3}, Scalar(2.5), DType::Float64)), (std::vector<float>{2.5, 2.5, 2.5}));
  EXPECT_EQ(values(zeros({2}, DType::Int32)), (std::vector<float>{0, 0}));
  EXPECT_EQ(values(ones({2}, DType::Bool)), (std::vector<float>{1, 1}));
  EXPECT_EQ(arange(Scalar(0), Scalar(1), Scalar(0.25)).numel(), 4);
  EXPECT_EQ(arange(Scalar(0), Scalar(5), Scalar(1)).dtype(), DType::Int64);
  EXPECT_EQ(arange(Scalar(0.0), Scalar(5), Scalar(1)).dtype(), DType::Float32);
  EXPECT_EQ(values(linspace(Scalar(0), Scalar(1), 3)), (std::vector<float>{0, 0.5, 1}));
  EXPECT_EQ(linspace(Scalar(0), Scalar(1), 0).numel(), 0);
  EXPECT_EQ(error_of([] { (void)empty({-1, 2}, DType::Float32); }),
            "Trying to create tensor with negative dimension -1: [-1, 2]");
  EXPECT_EQ(error_of([] { (void)arange(Scalar(0), Scalar(5), Scalar(0)); }), "step must be nonzero");
  EXPECT_EQ(error_of([] { (void)arange(Scalar(5), Scalar(0), Scalar(1)); }),
            "upper bound and lower bound inconsistent with step sign");
  EXPECT_NE(error_of([] { (void)empty({int64_t{1} << 62, int64_t{1} << 62}, DType::Float32); }).find("overflow"),
            std::string::npos);
}

TEST(Copy, ConvertsAcrossDtypesAndStrides) {
  Tensor src = arange(Scalar(0), Scalar(6), Scalar(1), DType::Float32);
  Tensor src2d = transpose(view(src, std::vector<int64_t>{2, 3}), 0, 1);  // [[0,3],[1,4],[2,5]]
  Tensor dst = empty({3, 2}, DType::Float16);
  copy_(dst, src2d);
  EXPECT_EQ(values(dst), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor b = to_dtype_copy(src, DType::Bool);
  EXPECT_EQ(values(b), (std::vector<float>{0, 1, 1, 1, 1, 1}));
  EXPECT_THROW(copy_(empty({2}, DType::Float32), src), Error);
}

TEST(TensorImpl, RequiresGradOnlyForFloatingTypes) {
  Tensor f = zeros({2}, DType::Float32);
  EXPECT_FALSE(f.requires_grad());
  f.set_requires_grad(true);
  EXPECT_TRUE(f.requires_grad());
  Tensor i = zeros({2}, DType::Int64);
  EXPECT_THROW(i.set_requires_grad(true), Error);
  EXPECT_FALSE(i.requires_grad());
}
