// TensorIterator: shapes, dtypes, output layout, coalescing, overlap checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"

using namespace kiln;

namespace {

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TensorIterator binary(const Tensor& out, const Tensor& a, const Tensor& b) {
  return TensorIteratorConfig()
      .add_output(out)
      .add_const_input(a)
      .add_const_input(b)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .build();
}

std::vector<int64_t> vec(IntArrayRef r) { return {r.begin(), r.end()}; }

}  // namespace

TEST(TensorIterator, BroadcastsAndPromotes) {
  auto iter = binary(Tensor(), empty({4, 1}, DType::Int32), empty({3}, DType::Float64));
  EXPECT_EQ(vec(iter.shape()), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(iter.common_dtype(), DType::Float64);
  EXPECT_EQ(iter.output().dtype(), DType::Float64);
  EXPECT_EQ(vec(iter.output().sizes()), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(error_of([] { (void)binary(Tensor(), empty({16}, DType::Float32), empty({3}, DType::Float32)); }),
            "The size of tensor a (16) must match the size of tensor b (3) at non-singleton dimension 0");
}

TEST(TensorIterator, CategoryPromotionOfScalarsAndZeroDim) {
  const Tensor f16 = empty({2}, DType::Float16);
  EXPECT_EQ(binary(Tensor(), f16, wrapped_scalar_tensor(Scalar(1.5))).common_dtype(), DType::Float16);
  const Tensor i32 = empty({2}, DType::Int32);
  EXPECT_EQ(binary(Tensor(), i32, wrapped_scalar_tensor(Scalar(2.5))).common_dtype(), DType::Float32);
  EXPECT_EQ(binary(Tensor(), i32, wrapped_scalar_tensor(Scalar(int64_t{7}))).common_dtype(), DType::Int32);
  const Tensor i8 = empty({2}, DType::Int8);
  EXPECT_EQ(binary(Tensor(), i8, empty({}, DType::Int64)).common_dtype(), DType::Int8);
  EXPECT_EQ(binary(Tensor(), i8, empty({}, DType::Float64)).common_dtype(), DType::Float64);
}

TEST(TensorIterator, ContiguousOperandsCoalesceToOneDimension) {
  auto iter = binary(Tensor(), empty({2, 3, 4}, DType::Float32), empty({2, 3, 4}, DType::Float32));
  EXPECT_EQ(vec(iter.iteration_shape()), (std::vector<int64_t>{24}));
  EXPECT_TRUE(iter.is_contiguous());
  // A broadcast row keeps two dims: the inner one dense, the outer one with stride 0 for b.
  auto iter2 = binary(Tensor(), empty({5, 6}, DType::Float32), empty({6}, DType::Float32));
  EXPECT_EQ(vec(iter2.iteration_shape()), (std::vector<int64_t>{6, 5}));
}

TEST(TensorIterator, NewOutputsFollowTheInputsLayout) {
  const Tensor t = transpose(empty({3, 5}, DType::Float32), 0, 1);  // sizes [5, 3], strides (1, 5)
  auto iter = binary(Tensor(), t, t);
  EXPECT_EQ(vec(iter.output().strides()), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(vec(iter.iteration_shape()), (std::vector<int64_t>{15}));
}

TEST(TensorIterator, SameShapeFastPathMatchesTheGeneralPasses) {
  // Note [TensorIterator's same-shape fast path]: equal shapes and dtypes, contiguous.
  const Tensor a = full({2, 3}, Scalar(1.5), DType::Float32);
  auto iter = binary(Tensor(), a, a);
  EXPECT_EQ(iter.common_dtype(), DType::Float32);
  EXPECT_EQ(vec(iter.shape()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vec(iter.iteration_shape()), (std::vector<int64_t>{6}));
  EXPECT_TRUE(iter.is_contiguous());
  EXPECT_EQ(vec(iter.output().strides()), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(iter.output().storage()->nbytes(), 6 * sizeof(float));
  // A contiguous input whose size-1 dim has an odd stride still gives row-major strides.
  const Tensor odd = as_strided(empty({8}, DType::Float32), std::vector<int64_t>{3, 1}, std::vector<int64_t>{1, 7});
  ASSERT_TRUE(odd.is_contiguous());
  EXPECT_EQ(vec(binary(Tensor(), odd, odd).output().strides()), (std::vector<int64_t>{1, 1}));
  // Integer inputs of a float-promoting op, and wrapped numbers, take the general passes.
  const Tensor i32 = empty({4}, DType::Int32);
  auto to_float = TensorIteratorConfig()
                      .add_output(Tensor())
                      .add_const_input(i32)
                      .add_const_input(i32)
                      .promote_inputs_to_common_dtype(true)
                      .promote_integer_inputs_to_float(true)
                      .cast_common_dtype_to_outputs(true)
                      .build();
  EXPECT_EQ(to_float.common_dtype(), DType::Float32);
  EXPECT_EQ(to_float.output().dtype(), DType::Float32);
  const Tensor w1 = wrapped_scalar_tensor(Scalar(int64_t{2})), w2 = wrapped_scalar_tensor(Scalar(int64_t{3}));
  EXPECT_EQ(binary(Tensor(), w1, w2).common_dtype(), DType::Int64);
  // Empty inputs: no elements, one dimension of size 0.
  auto none = binary(Tensor(), empty({0, 3}, DType::Float32), empty({0, 3}, DType::Float32));
  EXPECT_EQ(none.numel(), 0);
  EXPECT_EQ(vec(none.output().sizes()), (std::vector<int64_t>{0, 3}));
  // The loop sees one dense run of every element.
  int64_t visited = 0;
  iter.for_each([&](char**, const int64_t* strides, int64_t size0, int64_t size1) {
    EXPECT_EQ(strides[0], 4);
    visited += size0 * size1;
  }, 1 << 20);
  EXPECT_EQ(visited, 6);
}

TEST(TensorIterator, OutputsAreCheckedCastAndResized) {
  const Tensor a = full({3}, Scalar(1.5), DType::Float32);
  EXPECT_EQ(error_of([&] { (void)binary(empty({3}, DType::Int64), a, a); }),
            "result type Float can't be cast to the desired output type Long");
  Tensor out64 = empty({3}, DType::Float64);
  auto iter = binary(out64, a, a);
  EXPECT_TRUE(iter.output().is_same(out64));
  std::vector<std::string> warnings;
  static std::vector<std::string>* sink = &warnings;
  set_warning_handler([](const std::string& m) { sink->push_back(m); });
  Tensor wrong = empty({2}, DType::Float32);
  auto resized = binary(wrong, a, a);
  EXPECT_EQ(vec(wrong.sizes()), (std::vector<int64_t>{3}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("An output with one or more elements was resized"), std::string::npos);
  Tensor empty_out = empty({0}, DType::Float32);
  (void)binary(empty_out, a, a);
  EXPECT_EQ(warnings.size(), 1u) << "resizing an empty out= tensor is silent";
  set_warning_handler(nullptr);
}

TEST(TensorIterator, OverlappingWritesAreRejected) {
  const Tensor base = empty({4, 4}, DType::Float32);
  const Tensor expanded = as_strided(empty({4}, DType::Float32), std::vector<int64_t>{4, 4}, std::vector<int64_t>{0, 1});
  EXPECT_NE(error_of([&] { (void)binary(expanded, base, base); }).find("more than one element of the written-to"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)binary(base, transpose(base, 0, 1), base); }).find("some elements of the input"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { (void)binary(base, base, base); }), "(no error)") << "exact aliasing is fine (in-place)";
}

TEST(TensorIterator, LoopVisitsEveryElementOnceInParallel) {
  const int64_t n = 5 * kGrainSize + 17;
  Tensor a = arange(Scalar(0), Scalar(n), Scalar(1), DType::Float64);
  auto iter = TensorIteratorConfig().add_output(Tensor()).add_const_input(a).build();
  set_num_threads(2);
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
        for (int64_t j = 0; j < size1; ++j) {
          for (int64_t i = 0; i < size0; ++i) {
            const double v = *reinterpret_cast<double*>(data[1] + i * strides[1] + j * strides[3]);
            *reinterpret_cast<double*>(data[0] + i * strides[0] + j * strides[2]) = v * 2;
          }
        }
      },
      kGrainSize);
  const double* out = iter.output().data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0 * static_cast<double>(i));
}
