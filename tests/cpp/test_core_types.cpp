// DType, Half/BFloat16, Device, Scalar, SmallVector and DispatchKeySet.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "eager/core/DispatchKeySet.h"
#include "eager/core/Error.h"
#include "eager/core/Scalar.h"
#include "eager/core/SmallVector.h"
#include "eager/core/TensorImpl.h"

using namespace kiln;

TEST(DType, NamesSizesAndCategories) {
  struct Case {
    DType t;
    const char* name;
    int64_t size;
    DTypeCategory cat;
  };
  const Case cases[] = {
      {DType::Float32, "float32", 4, DTypeCategory::Floating}, {DType::Float64, "float64", 8, DTypeCategory::Floating},
      {DType::Float16, "float16", 2, DTypeCategory::Floating}, {DType::BFloat16, "bfloat16", 2, DTypeCategory::Floating},
      {DType::Int8, "int8", 1, DTypeCategory::Integral},       {DType::Int16, "int16", 2, DTypeCategory::Integral},
      {DType::Int32, "int32", 4, DTypeCategory::Integral},     {DType::Int64, "int64", 8, DTypeCategory::Integral},
      {DType::UInt8, "uint8", 1, DTypeCategory::Integral},     {DType::Bool, "bool", 1, DTypeCategory::Bool},
      {DType::Complex64, "complex64", 8, DTypeCategory::Complex}, {DType::Complex128, "complex128", 16, DTypeCategory::Complex},
  };
  static_assert(std::size(cases) == kNumDTypes);
  for (const auto& c : cases) {
    EXPECT_EQ(dtype_name(c.t), c.name);
    EXPECT_EQ(itemsize(c.t), c.size);
    EXPECT_EQ(category(c.t), c.cat);
    EXPECT_EQ(dtype_from_name(c.name), c.t);
  }
  EXPECT_EQ(dtype_from_name("long"), DType::Int64);
  EXPECT_EQ(dtype_from_name("half"), DType::Float16);
  EXPECT_EQ(dtype_from_name("cfloat"), DType::Complex64);
  EXPECT_FALSE(dtype_from_name("complex32").has_value());
}

TEST(DType, PromotionFollowsPyTorch) {
  struct Case {
    DType a, b, expected;
  };
  const Case cases[] = {
      {DType::Bool, DType::Int8, DType::Int8},          {DType::UInt8, DType::Int8, DType::Int16},
      {DType::UInt8, DType::Bool, DType::UInt8},        {DType::Int32, DType::Int64, DType::Int64},
      {DType::Int64, DType::Float16, DType::Float16},   {DType::Float16, DType::BFloat16, DType::Float32},
      {DType::BFloat16, DType::Int64, DType::BFloat16}, {DType::Float32, DType::Float64, DType::Float64},
      {DType::Bool, DType::Bool, DType::Bool},          {DType::Complex64, DType::Float64, DType::Complex128},
      {DType::Int64, DType::Complex64, DType::Complex64}, {DType::Complex64, DType::Complex128, DType::Complex128},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(promote_types(c.a, c.b), c.expected) << c.a << " + " << c.b;
    EXPECT_EQ(promote_types(c.b, c.a), c.expected) << "promotion must be symmetric";
  }
}

TEST(DType, DefaultDtypeRejectsIntegers) {
  EXPECT_EQ(default_dtype(), DType::Float32);
  try {
    set_default_dtype(DType::Int64);
    FAIL() << "expected a TypeError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Type);
  }
  set_default_dtype(DType::Float64);
  EXPECT_EQ(default_dtype(), DType::Float64);
  set_default_dtype(DType::Float32);
}

#if defined(__FLT16_MAX__)
// The compiler's _Float16 is the oracle for our bit-level conversions.
TEST(Half, ExhaustiveAgainstCompilerFloat16) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    _Float16 ref;
    const auto b16 = static_cast<uint16_t>(bits);
    std::memcpy(&ref, &b16, 2);
    const float f = Half::to_float(b16);
    const float expected = static_cast<float>(ref);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(f, expected) << "bits " << bits;
    ASSERT_EQ(Half::from_float(f), b16) << "round trip of bits " << bits;
  }
  // Rounding of floats between halves: ties to even, overflow to inf, subnormals.
  const float probes[] = {65519.f, 65520.f, 1e-8f, 5.96e-8f, 2.98e-8f, 1.0009765625f, 1.00048828125f, -3.1415926f,
                          1e30f, -1e-30f, 6.1e-5f};
  for (float p : probes) {
    const _Float16 ref = static_cast<_Float16>(p);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    EXPECT_EQ(Half::from_float(p), ref_bits) << p;
  }
}
#endif

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(3.140625f)), 3.140625f);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa (1) wins.
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(std::numeric_limits<float>::infinity()))));
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device("cpu"), Device(DeviceType::CPU));
  EXPECT_EQ(Device("cuda"), Device(DeviceType::CUDA));
  EXPECT_EQ(Device("cuda:3"), Device(DeviceType::CUDA, 3));
  EXPECT_EQ(Device("cuda:3").str(), "cuda:3");
  EXPECT_EQ(Device("cpu").str(), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:01", "", "cuda:1:2"}) {
    EXPECT_THROW({ (void)Device(bad); }, Error) << bad;
  }
  try {
    (void)Device("tpu:0");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device string: tpu:0"), std::string::npos) << e.what();
  }
}

TEST(Scalar, KindsAndConversions) {
  EXPECT_TRUE(Scalar(1).is_integral());
  EXPECT_TRUE(Scalar(1.5).is_floating_point());
  EXPECT_TRUE(Scalar(true).is_bool());
  EXPECT_EQ(Scalar(2.75).to<int32_t>(), 2);
  EXPECT_EQ(Scalar(int64_t{7}).to<double>(), 7.0);
  EXPECT_EQ(static_cast<float>(Scalar(0.5).to<Half>()), 0.5f);
  EXPECT_EQ(Scalar(3).natural_dtype(), DType::Int64);
  EXPECT_EQ(Scalar(false).natural_dtype(), DType::Bool);
  EXPECT_EQ(Scalar(1.0).natural_dtype(), default_dtype());
}

TEST(SmallVector, InlineUpToNThenHeap) {
  SmallVector<int64_t, 5> v{1, 2, 3, 4, 5};
  EXPECT_TRUE(v.is_inline());
  v.push_back(6);
  EXPECT_FALSE(v.is_inline());
  EXPECT_EQ(v.size(), 6u);
  EXPECT_EQ(v[5], 6);
  SmallVector<int64_t, 5> copy = v;
  EXPECT_EQ(copy, v);
  SmallVector<int64_t, 5> moved = std::move(copy);
  EXPECT_EQ(moved, v);
  EXPECT_TRUE(copy.empty());
  moved.erase(0);
  EXPECT_EQ(moved[0], 2);
  moved.insert(0, 9);
  EXPECT_EQ(moved[0], 9);
  EXPECT_EQ(moved.size(), 6u);
  SmallVector<int64_t, 5> small{1, 2};
  SmallVector<int64_t, 5> small_moved = std::move(small);
  EXPECT_TRUE(small_moved.is_inline());
  EXPECT_EQ(small_moved[1], 2);
}

TEST(DispatchKeySet, HighestKeyAndAlgebra) {
  constexpr DispatchKeySet empty;
  static_assert(empty.highest() == DispatchKey::Undefined);
  constexpr DispatchKeySet cpu_autograd{DispatchKey::CPU, DispatchKey::Autograd};
  static_assert(cpu_autograd.highest() == DispatchKey::Autograd);
  static_assert(cpu_autograd.remove(DispatchKey::Autograd).highest() == DispatchKey::CPU);
  static_assert((cpu_autograd | DispatchKeySet(DispatchKey::Capture)).has(DispatchKey::Capture));
  static_assert((cpu_autograd - DispatchKeySet(DispatchKey::CPU)) == DispatchKeySet(DispatchKey::Autograd));
  // Redispatching below Autograd keeps Capture and the backends, drops Autograd and above.
  constexpr auto below = DispatchKeySet::at_or_below(DispatchKey::Capture);
  static_assert(below.has(DispatchKey::CPU) && below.has(DispatchKey::Capture) && !below.has(DispatchKey::Autograd));
  static_assert((DispatchKeySet{DispatchKey::CPU, DispatchKey::Capture, DispatchKey::Autograd} & below).highest() ==
                DispatchKey::Capture);
  EXPECT_EQ(dispatch_key_name(DispatchKey::Autograd), "Autograd");
  EXPECT_EQ(backend_key(DeviceType::CUDA), DispatchKey::CUDA);
  EXPECT_EQ(backend_key(DeviceType::Meta), DispatchKey::Meta);
}

// Note [Meta tensors have no data] (eager/core/Storage.h).
TEST(Device, MetaStorageCountsBytesAndHasNoData) {
  EXPECT_EQ(Device("meta"), Device(DeviceType::Meta));
  EXPECT_EQ(Device("meta:0").str(), "meta");
  EXPECT_TRUE(Device("meta").is_meta());
  EXPECT_THROW({ (void)Device("meta:1"); }, Error);
  Storage storage = new_storage(size_t{1} << 40, Device(DeviceType::Meta));  // a TiB, never allocated
  EXPECT_EQ(storage->nbytes(), size_t{1} << 40);
  EXPECT_EQ(storage->data(), nullptr);
  storage->resize(64);
  EXPECT_EQ(storage->nbytes(), 64u);
  const int64_t sizes[] = {2, 4}, strides[] = {4, 1};
  TensorImpl impl(storage, DType::Float32, sizes, strides, 0);
  EXPECT_TRUE(impl.is_meta());
  EXPECT_EQ(impl.key_set(), DispatchKeySet(DispatchKey::Meta));
  try {
    (void)impl.data();
    ADD_FAILURE() << "data() of a meta tensor did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
  }
}

TEST(Error, CheckMacrosCarryKindAndMessage) {
  try {
    KILN_CHECK_INDEX(1 + 1 == 3, "index ", 5, " is out of bounds for size ", 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_STREQ(e.what(), "index 5 is out of bounds for size 3");
  }
  EXPECT_NO_THROW(KILN_CHECK(true, "never"));
}

TEST(DType, VisitDtypeRefusesComplexAndTheComplexVisitorTakesIt) {
  // Note [Complex dtypes]: real-only kernels raise NotImplementedError naming the dtype.
  try {
    visit_dtype(DType::Complex64, [](auto) {});
    FAIL() << "visit_dtype visited a complex dtype";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
    EXPECT_NE(std::string(e.what()).find("ComplexFloat"), std::string::npos);
  }
  const int64_t size = visit_dtype_and_complex(DType::Complex128, [](auto tag) {
    return static_cast<int64_t>(sizeof(tag));
  });
  EXPECT_EQ(size, 16);
  EXPECT_TRUE(is_complex_v<std::complex<float>>);
  EXPECT_FALSE(is_complex_v<float>);
  EXPECT_EQ(to_complex_type(DType::Float64), DType::Complex128);
  EXPECT_EQ(to_real_value_type(DType::Complex64), DType::Float32);
}
