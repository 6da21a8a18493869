// The dispatcher: schemas, key selection, TLS, redispatch, fallthrough,
// boxed fallbacks, errors, and the Library API.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"
#include "eager/dispatch/Library.h"
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

Tensor make_cpu(float v) { return full({1}, Scalar(v), DType::Float32); }

/// Tags a tensor with an extra dispatch key, as autograd or capture would.
Tensor with_key(Tensor t, DispatchKey k) {
  t.impl()->set_key_set(t.key_set().add(k));
  return t;
}

std::vector<std::string>& trace() {
  static std::vector<std::string> t;
  return t;
}

Tensor twice_cpu(const Tensor& self, int64_t times) {
  trace().push_back("cpu");
  return full({1}, Scalar(self.data_ptr<float>()[0] * 2 * static_cast<float>(times)), DType::Float32);
}

Tensor twice_test_high(DispatchKeySet keys, const Tensor& self, int64_t times) {
  trace().push_back("test_high");
  static const auto op = Dispatcher::singleton().find_schema_or_throw("disptest::twice").typed<Tensor(const Tensor&, int64_t)>();
  return op.redispatch(keys.below(DispatchKey::TestHigh), self, times);
}

Tensor twice_composite_parts(const Tensor& self, int64_t times) { return twice_cpu(self, times); }

KILN_LIBRARY(disptest, m) {
  m.def("twice(Tensor self, int times=1) -> Tensor");
  m.def("only_cpu(Tensor self) -> Tensor");
  m.def("composite(Tensor self, int times) -> Tensor", &twice_composite_parts);
}

KILN_LIBRARY_IMPL(disptest, CPU, m) {
  m.impl("twice", &twice_cpu);
  m.impl("only_cpu", +[](const Tensor& self) { return self; });
}

KILN_LIBRARY_IMPL(disptest, TestHigh, m) { m.impl("twice", &twice_test_high); }

const auto& twice_op() {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("disptest::twice").typed<Tensor(const Tensor&, int64_t)>();
  return op;
}

}  // namespace

TEST(FunctionSchema, RoundTripsAndParsesParts) {
  const char* schemas[] = {
      "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
      "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      "cat(Tensor[] tensors, int dim=0) -> Tensor",
      "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
      "zeros(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
      "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
      "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
      "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, str padding=\"valid\") -> Tensor",
      "manual_seed(int seed) -> ()",
      "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
      "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None) -> Tensor",
      "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float eps=1e-05) -> Tensor",
      "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
  };
  for (const char* text : schemas) {
    if (std::string(text).find("->  *") != std::string::npos) continue;
    if (std::string(text).find("(a -> *)") != std::string::npos) {
      EXPECT_THROW((void)FunctionSchema::parse(text), Error) << "wildcard aliases are not supported yet";
      continue;
    }
    EXPECT_EQ(FunctionSchema::parse(text).str(), text);
  }
  const auto s = FunctionSchema::parse("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  EXPECT_EQ(s.name().str(), "kiln::max.dim");
  EXPECT_EQ(s.returns().size(), 2u);
  EXPECT_EQ(s.returns()[1].name, "indices");
  EXPECT_EQ(s.arguments()[2].default_value, "False");
  const auto out = FunctionSchema::parse("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  EXPECT_TRUE(out.is_out());
  EXPECT_TRUE(out.arguments()[3].kwarg_only);
  EXPECT_TRUE(FunctionSchema::parse("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_inplace());
  EXPECT_EQ(FunctionSchema::parse("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor").tensor_argument_indices(),
            (std::vector<size_t>{0, 1}));
  EXPECT_EQ(FunctionSchema::parse("myns::foo(Tensor x) -> Tensor").name().ns, "myns");
}

TEST(FunctionSchema, ErrorsNameTheProblem) {
  EXPECT_NE(error_of([] { (void)FunctionSchema::parse("f(Tensr x) -> Tensor"); }).find("unknown type 'Tensr'"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)FunctionSchema::parse("f(Tensor x) Tensor"); }).find("expected '->'"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)FunctionSchema::parse("f(Tensor x, int x) -> Tensor"); }).find("duplicate"),
            std::string::npos);
}

TEST(Dispatcher, SelectsTheHighestKeyAndRedispatches) {
  trace().clear();
  Tensor plain = make_cpu(1.5f);
  EXPECT_EQ(twice_op().call(plain, 2).data_ptr<float>()[0], 6.0f);
  EXPECT_EQ(trace(), (std::vector<std::string>{"cpu"}));

  trace().clear();
  Tensor tagged = with_key(make_cpu(1.0f), DispatchKey::TestHigh);
  (void)twice_op().call(tagged, 1);
  EXPECT_EQ(trace(), (std::vector<std::string>{"test_high", "cpu"}));
}

TEST(Dispatcher, ThreadLocalIncludeAndExclude) {
  Tensor plain = make_cpu(1.0f);
  trace().clear();
  {
    IncludeDispatchKeyGuard include(DispatchKey::TestHigh);
    (void)twice_op().call(plain, 1);
    {
      ExcludeDispatchKeyGuard exclude(DispatchKey::TestHigh);
      (void)twice_op().call(plain, 1);
    }
  }
  (void)twice_op().call(plain, 1);
  EXPECT_EQ(trace(), (std::vector<std::string>{"test_high", "cpu", "cpu", "cpu"}));
  EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::TestHigh)) << "guards restore the TLS state";
}

TEST(Dispatcher, FallthroughKeysAreSkipped) {
  // TestLow falls through by default: a tensor carrying it still reaches CPU.
  trace().clear();
  (void)twice_op().call(with_key(make_cpu(1.0f), DispatchKey::TestLow), 1);
  EXPECT_EQ(trace(), (std::vector<std::string>{"cpu"}));
}

TEST(Dispatcher, BoxedFallbackSeesEveryOp) {
  static std::atomic<int> count{0};
  static std::vector<std::string> seen;
  count = 0;
  seen.clear();
  {
    Library lib(Library::Kind::Impl, "_", DispatchKey::TestLow);
    lib.fallback(KernelFunction::from_boxed(+[](void*, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
      ++count;
      seen.push_back(op.name().str());
      op.redispatch_boxed(keys.below(DispatchKey::TestLow), stack);
    }));
    IncludeDispatchKeyGuard include(DispatchKey::TestLow);
    Tensor x = make_cpu(2.0f);
    Tensor y = twice_op().call(x, 3);
    EXPECT_EQ(y.data_ptr<float>()[0], 12.0f) << "the boxed path returns the kernel's result";
    (void)Dispatcher::singleton().find_schema_or_throw("disptest::only_cpu").typed<Tensor(const Tensor&)>().call(x);
    Stack stack{IValue(x), IValue(int64_t{1})};
    Dispatcher::singleton().find_schema_or_throw("disptest::twice").call_boxed(&stack);
    ASSERT_EQ(stack.size(), 1u);
    EXPECT_EQ(stack[0].to_tensor().data_ptr<float>()[0], 4.0f);
  }
  EXPECT_EQ(count.load(), 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"disptest::twice", "disptest::only_cpu", "disptest::twice"}));
  // Destroying the library removed the fallback: TestLow falls through again.
  IncludeDispatchKeyGuard include(DispatchKey::TestLow);
  (void)twice_op().call(make_cpu(1.0f), 1);
  EXPECT_EQ(count.load(), 3);
}

TEST(Dispatcher, CompositeKernelServesEveryBackend) {
  trace().clear();
  const auto op = Dispatcher::singleton().find_schema_or_throw("disptest::composite").typed<Tensor(const Tensor&, int64_t)>();
  EXPECT_EQ(op.call(make_cpu(1.0f), 2).data_ptr<float>()[0], 4.0f);
  EXPECT_EQ(trace(), (std::vector<std::string>{"cpu"}));
}

TEST(Dispatcher, MissingKernelErrorNamesOpKeyAndAvailableKeys) {
  Tensor meta_only = make_cpu(1.0f);
  meta_only.impl()->set_key_set(DispatchKeySet(DispatchKey::CUDA));
  const std::string msg = error_of([&] { (void)twice_op().call(meta_only, 1); });
  EXPECT_EQ(msg, "Could not run 'disptest::twice' with arguments from the 'CUDA' backend. 'disptest::twice' is only "
                 "available for these backends: [CPU, TestHigh].");
  try {
    (void)twice_op().call(meta_only, 1);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
  }
}

TEST(Dispatcher, LookupErrorsAndSignatureChecks) {
  EXPECT_EQ(error_of([] { (void)Dispatcher::singleton().find_schema_or_throw("disptest::nope"); }),
            "Could not find schema for disptest::nope");
  EXPECT_NE(error_of([] {
              (void)Dispatcher::singleton().find_schema_or_throw("disptest::twice").typed<Tensor(const Tensor&)>();
            }).find("wrong C++ signature"),
            std::string::npos);
  Library lib(Library::Kind::Impl, "disptest", DispatchKey::Meta);
  EXPECT_NE(error_of([&] { lib.impl("twice", +[](const Tensor& t) { return t; }); }).find("takes 1 arguments"),
            std::string::npos);
  EXPECT_NE(error_of([&] { lib.impl("twice", +[](int64_t, int64_t) { return Tensor(); }); }).find("not a tensor"),
            std::string::npos);
}

TEST(Library, DefineDropAndRedefine) {
  {
    Library lib(Library::Kind::Def, "tmpns", std::nullopt);
    lib.def("f(Tensor x) -> Tensor");
    EXPECT_TRUE(Dispatcher::singleton().find_schema_or_throw("tmpns::f").entry().has_schema());
    EXPECT_NE(error_of([&] { lib.def("f(Tensor x) -> Tensor"); }).find("already defined"), std::string::npos);
  }
  EXPECT_THROW((void)Dispatcher::singleton().find_schema_or_throw("tmpns::f"), Error);
  Library again(Library::Kind::Def, "tmpns", std::nullopt);
  again.def("f(Tensor x, int y) -> Tensor");
  EXPECT_EQ(Dispatcher::singleton().find_schema_or_throw("tmpns::f").schema().arguments().size(), 2u);
}

TEST(FunctionSchemaParse, ListSizePastInt64IsAParseError) {
  // std::stoll threw std::out_of_range here, escaping the parser's kiln::Error (found by libFuzzer:
  // fuzz/corpus/function_schema/regression_list_size_past_int64)
  EXPECT_THROW((void)FunctionSchema::parse("f(int[99999999999999999999] a) -> Tensor"), Error);
  EXPECT_EQ(FunctionSchema::parse("f(int[9223372036854775807] a) -> Tensor").str(),
            "f(int[9223372036854775807] a) -> Tensor");
}
