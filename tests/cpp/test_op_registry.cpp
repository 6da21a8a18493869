// The operators generated from ops.yaml (tools/opgen): the op table agrees with
// the schema parser and the dispatcher, factories route through BackendSelect,
// and the generated C++ API and Tensor methods compute the right values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/dispatch/Dispatcher.h"
#include "eager/dispatch/Library.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/OpTable.h"

using namespace kiln;

namespace {

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  const Tensor c = t.is_contiguous() ? t : kiln::empty(t.sizes(), t.dtype()).copy_(t);
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<double>(c.data_ptr<T>()[i]));
  });
  return out;
}

std::vector<int64_t> dims(IntArrayRef r) { return {r.begin(), r.end()}; }

Tensor range_f32(int64_t n) { return kiln::arange(0, n, 1, DType::Float32); }

/// Counts every op call it sees at TestLow, then lets the call continue below.
struct CallLog {
  std::vector<std::string> ops;
  std::vector<DispatchKeySet> keys;
};

void log_and_continue(void* ctx, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  auto* log = static_cast<CallLog*>(ctx);
  log->ops.push_back(op.name().str());
  log->keys.push_back(keys);
  op.redispatch_boxed(keys.below(DispatchKey::TestLow), stack);
}

}  // namespace

// --- the op table ---------------------------------------------------------------

TEST(OpTable, SchemasRoundTripThroughTheParser) {
  ASSERT_FALSE(op_table().empty());
  for (const OpInfo& info : op_table()) {
    EXPECT_EQ(FunctionSchema::parse(info.schema).str(), info.schema);
    const std::string head = std::string(info.name) + (info.overload.empty() ? "" : "." + std::string(info.overload));
    EXPECT_TRUE(info.schema.starts_with(head + "(")) << info.schema;
  }
}

TEST(OpTable, EveryOpIsRegisteredWithTheSameSchemaAndTags) {
  size_t kiln_ops = 0;
  for (const OperatorHandle& op : Dispatcher::singleton().all_ops()) kiln_ops += op.name().ns == "kiln";
  EXPECT_EQ(kiln_ops, op_table().size());
  for (const OpInfo& info : op_table()) {
    const auto op = Dispatcher::singleton().find_op("kiln::" + std::string(info.name), info.overload);
    ASSERT_TRUE(op.has_value()) << info.schema;
    ASSERT_TRUE(op->entry().has_schema()) << info.schema;
    EXPECT_EQ(op->schema().str(), info.schema);
    for (size_t bit = 0; bit < std::size(kOpTagNames); ++bit) {
      EXPECT_EQ(op->entry().has_tag(kOpTagNames[bit]), info.has_tag(1u << bit)) << info.schema << " " << kOpTagNames[bit];
    }
  }
}

TEST(OpTable, CarriesTagsAndDerivativeFormulas) {
  auto find = [](std::string_view name, std::string_view overload) -> const OpInfo* {
    for (const OpInfo& info : op_table()) {
      if (info.name == name && info.overload == overload) return &info;
    }
    return nullptr;
  };
  const OpInfo* add = find("add", "Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->has_tag(op_tag::kPointwise));
  EXPECT_FALSE(add->has_tag(op_tag::kInplace));
  ASSERT_EQ(add->derivatives.size(), 2u);
  EXPECT_EQ(add->derivatives[1].input, "other");
  EXPECT_EQ(add->derivatives[1].input_index, 1u);
  EXPECT_EQ(add->derivatives[1].formula, "maybe_multiply(grad, alpha)");
  const OpInfo* transpose = find("transpose", "int");
  ASSERT_NE(transpose, nullptr);
  EXPECT_TRUE(transpose->has_tag(op_tag::kView));
  ASSERT_EQ(transpose->derivatives.size(), 1u);
  EXPECT_EQ(transpose->derivatives[0].formula, "grad.transpose(dim0, dim1)");
  EXPECT_TRUE(find("empty", "")->has_tag(op_tag::kFactory));
  EXPECT_TRUE(find("empty", "")->derivatives.empty());
}

// --- BackendSelect ---------------------------------------------------------------------

TEST(OpRegistry, FactoriesGoThroughBackendSelect) {
  CallLog log;
  Library fallback(Library::Kind::Impl, "_", DispatchKey::TestLow);
  fallback.fallback(KernelFunction::from_boxed(&log_and_continue, &log));
  Tensor e, z, r;
  {
    IncludeDispatchKeyGuard guard(DispatchKey::TestLow);
    e = kiln::empty({2, 3});
    z = kiln::zeros({4}, DType::Int32);
    r = kiln::arange(5);  // composite: its arange.start_step call is seen too
  }
  EXPECT_EQ(log.ops, (std::vector<std::string>{"kiln::empty", "kiln::zeros", "kiln::arange", "kiln::arange.start_step"}));
  for (DispatchKeySet keys : log.keys) {
    // No tensor argument: nothing but BackendSelect (always in the TLS include set) can route a factory.
    EXPECT_EQ(keys, DispatchKeySet({DispatchKey::TestLow, DispatchKey::BackendSelect}));
  }
  EXPECT_EQ(dims(e.sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(e.dtype(), default_dtype());
  EXPECT_TRUE(e.device().is_cpu());
  EXPECT_EQ(z.dtype(), DType::Int32);
  EXPECT_EQ(values(z), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(values(r), (std::vector<double>{0, 1, 2, 3, 4}));

  for (const char* name : {"kiln::empty", "kiln::zeros", "kiln::full"}) {
    EXPECT_TRUE(Dispatcher::singleton().find_schema_or_throw(name).entry().has_kernel_for(DispatchKey::BackendSelect))
        << name;
  }
  ExcludeDispatchKeyGuard no_backend_select(DispatchKey::BackendSelect);
  EXPECT_THROW((void)kiln::empty({2}), Error);
}

TEST(OpRegistry, TensorOpsSkipBackendSelect) {
  EXPECT_FALSE(Dispatcher::singleton().find_schema_or_throw("kiln::add", "Tensor").entry().has_kernel_for(
      DispatchKey::BackendSelect));
  const Tensor a = range_f32(2);
  ExcludeDispatchKeyGuard no_backend_select(DispatchKey::BackendSelect);
  EXPECT_EQ(values(kiln::add(a, a)), (std::vector<double>{0, 2}));  // routed by a's CPU key
}

// --- the generated C++ API ----------------------------------------------------------------

TEST(GeneratedApi, AddBroadcastsAndPromotes) {
  const Tensor a = range_f32(6).view({2, 3});
  const Tensor b = range_f32(3);
  const Tensor c = kiln::add(a, b);
  EXPECT_EQ(dims(c.sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(c), (std::vector<double>{0, 2, 4, 3, 5, 7}));
  EXPECT_EQ(values(kiln::add(a, b, 2)), (std::vector<double>{0, 3, 6, 3, 6, 9}));
  EXPECT_EQ(values(a.add(b.view({1, 3}))), values(c));

  const Tensor i = kiln::arange(3);  // int64
  EXPECT_EQ(kiln::add(i, 1.5).dtype(), default_dtype());
  EXPECT_EQ(values(kiln::add(i, 1.5)), (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_EQ(kiln::add(i, 2).dtype(), DType::Int64);
  EXPECT_EQ(values(i.add(2, 3)), (std::vector<double>{6, 7, 8}));
}

TEST(GeneratedApi, InPlaceAndOutVariantsWriteTheirTarget) {
  const Tensor a = range_f32(3);
  const uint32_t version = a.version();
  const Tensor same = a.add_(kiln::full({1}, 10, DType::Float32));
  EXPECT_TRUE(same.is_same(a));
  EXPECT_GT(a.version(), version);
  EXPECT_EQ(values(a), (std::vector<double>{10, 11, 12}));

  const Tensor out = kiln::empty({3});
  const Tensor result = kiln::add_out(out, range_f32(3), range_f32(3), 3);
  EXPECT_TRUE(result.is_same(out));
  EXPECT_EQ(values(out), (std::vector<double>{0, 4, 8}));

  EXPECT_EQ(values(kiln::fill_(kiln::empty({2}), 7)), (std::vector<double>{7, 7}));
  EXPECT_EQ(values(kiln::ones({2}).zero_()), (std::vector<double>{0, 0}));
  const Tensor dst = kiln::zeros({3}, DType::Int32);
  EXPECT_TRUE(dst.copy_(range_f32(3)).is_same(dst));
  EXPECT_EQ(values(dst), (std::vector<double>{0, 1, 2}));
}

TEST(GeneratedApi, FactoriesFollowTorchDefaults) {
  EXPECT_EQ(kiln::full({2}, true).dtype(), DType::Bool);
  EXPECT_EQ(kiln::full({2}, 3).dtype(), DType::Int64);
  EXPECT_EQ(kiln::full({2}, 1.5).dtype(), default_dtype());
  EXPECT_EQ(kiln::full({2}, 3, DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(values(kiln::arange(1, 4)), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(kiln::arange(0, 1, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(values(kiln::linspace(0, 1, 3)), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(dims(kiln::empty_strided({2, 3}, {1, 2}).strides()), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(kiln::ones({2}, DType::Int8)), (std::vector<double>{1, 1}));
}

TEST(GeneratedApi, ViewsShareStorage) {
  const Tensor t = range_f32(6);
  const Tensor v = t.view({2, 3});
  EXPECT_EQ(v.storage().get(), t.storage().get());
  const Tensor tr = kiln::transpose(v, 0, 1);
  EXPECT_EQ(dims(tr.sizes()), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(dims(tr.strides()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(v.select(0, 1)), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(values(kiln::select(v, 1, -1)), (std::vector<double>{2, 5}));
  EXPECT_EQ(values(t.slice(0, 1, std::nullopt, 2)), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(values(kiln::slice(t, 0, -2)), (std::vector<double>{4, 5}));
  EXPECT_EQ(values(t.as_strided({2, 2}, {1, 2}, 1)), (std::vector<double>{1, 3, 2, 4}));

  v.select(0, 0).fill_(-1);  // through a view, into the base
  EXPECT_EQ(values(t), (std::vector<double>{-1, -1, -1, 3, 4, 5}));
  EXPECT_THROW((void)kiln::transpose(v, 0, 2), Error);
}
