// The eager CUDA pointwise kernels generated from the compiler's table (CudaEagerPointwise.h).
#include "codegen/cuda/CudaEagerPointwise.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "codegen/PointwiseMath.h"
#include "codegen/cuda/CudaExpr.h"
#include "eager/core/Error.h"
#include "ir/Graph.h"

namespace kiln::codegen::cuda {

namespace {

using native::cuda_kernels::KernelInstance;
using native::cuda_kernels::PointwiseKernelRequest;

/// The table entry serving the eager row `op` with `arity` tensor operands ("kiln::add.Tensor", "kiln::exp").
std::optional<std::string> table_entry(const std::string& op, int arity) {
  const std::vector<std::string> candidates =
      arity == 1 ? std::vector<std::string>{"kiln::" + op}
                 : std::vector<std::string>{"kiln::" + op + ".Tensor", "kiln::" + op, "kiln::" + op + ".Tensor_Tensor"};
  for (const std::string& c : candidates) {
    if (has_pointwise_math(c)) return c;
  }
  return std::nullopt;
}

/// The one-node kernel IR of `request`, or nullopt.
std::optional<Kernel> kernel_of(const PointwiseKernelRequest& request) {
  const std::optional<std::string> entry = table_entry(request.op, request.arity);
  if (!entry) return std::nullopt;
  ir::Graph g;
  std::vector<ir::Value*> inputs;
  for (int i = 0; i < request.arity; ++i) {
    ir::TensorType t;
    t.dtype = request.input;
    inputs.push_back(g.add_input(ir::Type::tensor(t)));
  }
  std::vector<ir::NamedAttribute> attributes;
  if (request.alpha) attributes.push_back({"alpha", ir::Attribute::of_scalar(*request.alpha)});
  if (!request.approximate.empty()) attributes.push_back({"approximate", ir::Attribute::of_str(request.approximate)});
  for (const auto& [name, value] : request.scalars) attributes.push_back({name, ir::Attribute::of_scalar(value)});
  ir::Node* n = g.append(g.create_op(*entry, inputs, attributes));
  ir::TensorType out;
  out.dtype = request.output;
  n->output()->set_type(ir::Type::tensor(out));
  Kernel k;
  KernelBuilder b(k);
  std::vector<int32_t> loads;
  for (int i = 0; i < request.arity; ++i) {
    k.input_dtypes.push_back(request.input);
    loads.push_back(b.load(i));
  }
  const std::optional<int32_t> r = build_pointwise_math(b, *n, loads);
  if (!r) return std::nullopt;
  k.outputs.push_back(*r);
  k.output_dtypes.push_back(request.output);
  k.input_scalar.assign(static_cast<size_t>(request.arity), false);
  char name[64];
  std::snprintf(name, sizeof name, "kiln_gen_%s_%016llx", request.op.c_str(), static_cast<unsigned long long>(k.hash()));
  k.name = name;
  return k;
}

/// `k` printed with eager/kernels/cuda's Indexer ABI: (kiln::Indexer<N> ix, long long n), output first; V elements
/// per access where the operands allow, else one at a time (eager/kernels/cuda's Note [Vector loads in the eager
/// templates]: the prelude's vector_ok / load_vec / store_vec).
KernelInstance eager_source(const Kernel& k) {
  const size_t ni = k.input_dtypes.size();
  const std::string operands = std::to_string(ni + 1);
  const DType out = k.output_dtypes[0];
  const Expr& result = k.exprs[static_cast<size_t>(k.outputs[0])];
  size_t widest = static_cast<size_t>(itemsize(out));
  std::string bytes = std::to_string(itemsize(out));
  for (DType d : k.input_dtypes) {
    widest = std::max(widest, static_cast<size_t>(itemsize(d)));
    bytes += ", " + std::to_string(itemsize(d));
  }
  const auto body = [&](std::ostringstream& s, const std::string& indent, const std::function<std::string(int32_t)>& load) {
    ExprPrinter printer{k, [](int32_t i) { return "v" + std::to_string(i); }, load};
    for (size_t i = 0; i < k.exprs.size(); ++i) s << indent << printer.statement(static_cast<int32_t>(i)) << "\n";
  };
  const std::string stored = store_value(out, cast_value("v" + std::to_string(k.outputs[0]), result.dtype, out));
  std::ostringstream s;
  s << cuda_prelude();
  s << "// " << k.name << ": generated from codegen/PointwiseMath's table\n";
  s << "extern \"C\" __global__ void " << k.name << "(kiln::Indexer<" << operands << "> ix, long long n) {\n";
  s << "  constexpr int V = kiln::VecWidth<" << widest << ">::value;\n";
  s << "  const int bytes[" << operands << "] = {" << bytes << "};\n";
  s << "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
  s << "  const long long step = (long long)gridDim.x * blockDim.x;\n";
  s << "  long long done = 0;\n";
  s << "  if (kiln::vector_ok(ix, bytes, V)) {\n    done = n / V * V;\n";
  s << "    for (long long j = first; j < n / V; j += step) {\n";
  s << "      char* p[" << operands << "];\n      ix.pointers(j * V, p);\n";
  for (size_t in = 0; in < ni; ++in) {
    const std::string t = memory_type(k.input_dtypes[in]);
    s << "      " << t << " in" << in << "[V];\n";
    s << "      kiln::load_vec<" << t << ", V>(p[" << in + 1 << "], ix.strides[" << in + 1 << "][0], in" << in << ");\n";
  }
  s << "      " << memory_type(out) << " out[V];\n";
  s << "      for (int e = 0; e < V; ++e) {\n";
  body(s, "        ", [](int32_t in) { return "in" + std::to_string(in) + "[e]"; });
  s << "        out[e] = " << stored << ";\n      }\n";
  s << "      kiln::store_vec<" << memory_type(out) << ", V>(p[0], out);\n    }\n  }\n";
  s << "  for (long long i = done + first; i < n; i += step) {\n";
  s << "    char* p[" << operands << "];\n    ix.pointers(i, p);\n";
  body(s, "    ", [&](int32_t in) {
    return std::string("*reinterpret_cast<const ") + memory_type(k.input_dtypes[static_cast<size_t>(in)]) + "*>(p[" +
           std::to_string(in + 1) + "])";
  });
  s << "    *reinterpret_cast<" << memory_type(out) << "*>(p[0]) = " << stored << ";\n";
  s << "  }\n}\n";
  return KernelInstance{k.name, s.str()};
}

using Key = std::tuple<std::string, int, DType, DType, std::string, std::string, std::vector<std::string>>;

/// A Scalar's kind and exact value as text ("" when absent), for the cache key.
std::string scalar_key(const std::optional<Scalar>& s) {
  if (!s) return "";
  const Scalar& a = *s;
  char buf[64];
  if (a.kind() == Scalar::Kind::Double) std::snprintf(buf, sizeof buf, "d%a", a.to_double());
  else if (a.kind() == Scalar::Kind::Int) std::snprintf(buf, sizeof buf, "i%lld", static_cast<long long>(a.to_int64()));
  else if (a.kind() == Scalar::Kind::Bool) std::snprintf(buf, sizeof buf, "b%d", a.to_bool() ? 1 : 0);
  else std::snprintf(buf, sizeof buf, "c");
  return buf;
}

Key key_of(const PointwiseKernelRequest& r) {
  std::vector<std::string> scalars;
  for (const auto& [name, value] : r.scalars) scalars.push_back(name + "=" + scalar_key(value));
  return {r.op, r.arity, r.input, r.output, scalar_key(r.alpha), r.approximate, scalars};
}

std::optional<KernelInstance> generate(const PointwiseKernelRequest& request) {
  if (request.alpha && request.alpha->kind() == Scalar::Kind::Complex) return std::nullopt;
  for (const auto& [name, value] : request.scalars) {
    if (value.kind() == Scalar::Kind::Complex) return std::nullopt;
  }
  static std::mutex mu;
  static std::map<Key, std::optional<KernelInstance>> cache;
  const Key key = key_of(request);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::optional<KernelInstance> made;
  try {
    if (const std::optional<Kernel> k = kernel_of(request)) made = eager_source(*k);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::NotImplemented) throw;
    made = std::nullopt;  // a dtype the printer has no CUDA type for: the template path decides
  }
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(key, std::move(made)).first->second;
}

/// The value of a row's Scalar argument the coverage list generates its kernel for: what the op's usual
/// caller passes (relu's backward: threshold 0; hardtanh's: -1 and 1; softplus's: beta 1, threshold 20).
Scalar default_scalar(const std::string& op, const std::string& name) {
  if (name == "min_val") return Scalar(-1.0);
  if (name == "max_val") return Scalar(1.0);
  if (name == "beta") return Scalar(int64_t{1});
  if (name == "threshold" && op == "softplus_backward") return Scalar(int64_t{20});
  return Scalar(int64_t{0});
}

}  // namespace

std::optional<KernelInstance> eager_pointwise_kernel(const PointwiseKernelRequest& request) { return generate(request); }

void install_eager_pointwise_kernels() { native::cuda_kernels::set_pointwise_kernel_generator(&generate); }

EagerPointwiseCoverage all_eager_pointwise_kernels() {
  using native::cuda_kernels::PointwiseKind;
  EagerPointwiseCoverage out;
  for (const auto& row : native::cuda_kernels::pointwise_math_table()) {
    for (DType d : native::cuda_kernels::cuda_kernel_dtypes()) {
      if (!native::cuda_kernels::dtype_in_set(d, row.dtypes)) continue;
      PointwiseKernelRequest r;
      r.op = row.name;
      r.arity = row.arity;
      r.input = d;
      r.output = row.kind == PointwiseKind::Comparison ? DType::Bool : d;
      if (row.has_alpha) r.alpha = Scalar(int64_t{1});
      if (row.name == "gelu" || row.name == "gelu_backward") r.approximate = "none";
      for (const std::string& name : row.scalar_arguments) r.scalars.emplace_back(name, default_scalar(row.name, name));
      const std::string what = row.name + " " + std::string(scalar_type_name(d));
      if (std::optional<KernelInstance> k = generate(r)) {
        out.what.push_back(what + " -> " + std::string(scalar_type_name(r.output)));
        out.kernels.push_back(std::move(*k));
      } else {
        out.uncovered.push_back(what);
      }
    }
  }
  return out;
}

}  // namespace kiln::codegen::cuda
