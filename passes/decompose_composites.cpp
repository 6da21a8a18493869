// Decomposition of composite ops: one function per op family builds the
// primitives before the composite node, then its results are replaced.
#include "passes/decompose_composites.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "eager/core/MemoryFormat.h"
#include "passes/arguments.h"
#include "passes/type_facts.h"

namespace kiln::passes {

using ir::Attribute;
using ir::Node;
using ir::Value;

// Note [What decompose_composites rewrites]
// -----------------------------------------
// A composite is rewritten only where the result is provably eager's:
//  - the input's dtype is floating (float32 and float64 compute as they are;
//    float16 and bfloat16 are cast to float32 and the results cast back, as
//    the eager kernels widen them), its sizes are known, and its layout is
//    row-major contiguous or not recorded at all: the eager kernels return
//    contiguous results and the primitives follow their input's layout, so a
//    strided input would change the result's strides (and a later view could fail);
//  - the reduced dims have concrete sizes, none 0 (amax of an empty dim raises
//    where softmax returns an empty tensor; a symbolic size may be 0 until
//    capture guards sizes 0 and 1 apart, as issue 23 item 9 plans);
//  - dropout only in eval mode or with p = 0, the cases that draw no random
//    numbers (training dropout keeps its bernoulli draw where eager makes it).
// The new values carry dtype, sizes and device (and contiguous strides when
// the sizes are concrete); the final results take the composite's recorded types.

namespace {

/// Builds primitive op nodes before one composite node.
class Builder {
 public:
  explicit Builder(Node& at) : at_(at) {}

  Value* op(std::string_view name, std::vector<Value*> inputs, std::vector<ir::NamedAttribute> attributes,
            ir::TensorType type) {
    Node* n = at_.owning_graph().create_op(name, std::move(inputs), std::move(attributes));
    n->output()->set_type(ir::Type::tensor(std::move(type)));
    n->insert_before(&at_);
    return n->output();
  }

  // Pointwise ops keep their first input's type (dtype and sizes).
  Value* unary(std::string_view name, Value* x) { return op(name, {x}, {}, type_of(x)); }
  Value* mul(Value* a, Value* b) { return op("kiln::mul.Tensor", {a, b}, {}, broadcast_type(a, b)); }
  Value* mul(Value* a, double s) {
    return op("kiln::mul.Scalar", {a}, {{"other", Attribute::of_float(s)}}, type_of(a));
  }
  Value* add(Value* a, double s) {
    return op("kiln::add.Scalar", {a}, {{"other", Attribute::of_float(s)}, {"alpha", Attribute::of_int(1)}},
              type_of(a));
  }
  /// a + alpha * b
  Value* add(Value* a, Value* b, double alpha = 1.0) {
    return op("kiln::add.Tensor", {a, b}, {{"alpha", alpha_literal(alpha)}}, broadcast_type(a, b));
  }
  Value* sub(Value* a, Value* b) {
    return op("kiln::sub.Tensor", {a, b}, {{"alpha", Attribute::of_int(1)}}, broadcast_type(a, b));
  }
  /// A reduction over `dims` with keepdim=True.
  Value* reduce(std::string_view name, Value* x, const std::vector<int64_t>& dims) {
    ir::TensorType t = type_of(x);
    for (int64_t d : dims) (*t.sizes)[d] = ir::SymbolicSize(1);
    set_strides(t);
    std::vector<ir::NamedAttribute> attributes = {{"dim", Attribute::of_int_list(dims)},
                                                  {"keepdim", Attribute::of_bool(true)}};
    if (name != "kiln::amax") attributes.push_back({"dtype", Attribute::none()});
    return op(name, {x}, std::move(attributes), std::move(t));
  }
  Value* cast(Value* x, DType dtype) {
    if (dtype_of(x) == dtype) return x;
    ir::TensorType t = type_of(x);
    t.dtype = dtype;
    return op("kiln::_to_copy", {x},
              {{"dtype", Attribute::of_dtype(dtype)}, {"device", Attribute::none()},
               {"non_blocking", Attribute::of_bool(false)}, {"memory_format", Attribute::none()}},
              std::move(t));
  }

  static ir::TensorType type_of(const Value* v) {
    ir::TensorType t = v->type().tensor_type();
    t.requires_grad = false;
    set_strides(t);
    return t;
  }

 private:
  static Attribute alpha_literal(double alpha) {
    return alpha == 1.0 ? Attribute::of_int(1) : Attribute::of_float(alpha);
  }
  /// Contiguous strides when every size is concrete, else none.
  static void set_strides(ir::TensorType& t) {
    t.strides.reset();
    if (!t.sizes) return;
    for (const ir::SymbolicSize& s : *t.sizes) {
      if (!s.is_concrete()) return;
    }
    t.strides = contiguous_strides(*t.sizes);
  }
  /// The type of a pointwise result of a and b: the larger-rank operand's
  /// sizes with its size-1 dims taken from the other (the operands here are a
  /// tensor and its keepdim statistics, or a weight over the trailing dims).
  static ir::TensorType broadcast_type(const Value* a, const Value* b) {
    ir::TensorType t = type_of(a);
    const ir::TensorType& u = b->type().tensor_type();
    if (!t.sizes || !u.sizes) {
      t.sizes.reset();
      t.strides.reset();
      return t;
    }
    const bool a_wider = t.sizes->size() >= u.sizes->size();
    std::vector<ir::SymbolicSize> sizes = a_wider ? *t.sizes : *u.sizes;
    const std::vector<ir::SymbolicSize> other = a_wider ? *u.sizes : *t.sizes;
    for (size_t i = 0; i < other.size(); ++i) {
      ir::SymbolicSize& s = sizes[sizes.size() - other.size() + i];
      if (s == ir::SymbolicSize(1)) s = other[i];
    }
    t.sizes = std::move(sizes);
    set_strides(t);
    return t;
  }

  Node& at_;
};

/// The dtype the primitives compute in for input dtype `t`, or nullopt when
/// the op is not decomposed for it.
std::optional<DType> compute_dtype(DType t) {
  if (t == DType::Float32 || t == DType::Float64) return t;
  if (t == DType::Float16 || t == DType::BFloat16) return DType::Float32;
  return std::nullopt;
}

/// The input of composite n when it meets Note [What decompose_composites
/// rewrites] (dtype, sizes, layout), else nullptr.
Value* decomposable_input(const Node& n, std::string_view name = "self") {
  Value* x = value_argument(n, name);
  if (x == nullptr || !x->type().is_tensor()) return nullptr;
  const ir::TensorType& t = x->type().tensor_type();
  if (!t.dtype || !compute_dtype(*t.dtype) || !t.sizes) return nullptr;
  if (t.strides && !is_contiguous(x)) return nullptr;
  for (const Value* out : n.outputs()) {
    if (!out->type().is_tensor() || !out->type().tensor_type().dtype) return nullptr;
  }
  return x;
}

/// The dims `dims` names, wrapped, when each has a concrete nonzero size.
std::optional<std::vector<int64_t>> reduced_dims(const Value* x, const std::vector<int64_t>& dims) {
  const auto rank = rank_of(x);
  if (!rank || *rank == 0) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const auto w = wrap_dim(d, rank);
    if (!w) return std::nullopt;
    const ir::SymbolicSize& s = (*x->type().tensor_type().sizes)[*w];
    if (!s.is_concrete() || s.value() == 0) return std::nullopt;
    out.push_back(*w);
  }
  return out;
}

/// The results that replace a composite's outputs (nullptr: leave that output).
using Replacement = std::vector<Value*>;

/// Casts each result to the dtype of the composite output it replaces and gives it that output's type.
Replacement finish(Builder& b, const Node& n, Replacement results) {
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i] == nullptr) continue;
    results[i] = b.cast(results[i], *dtype_of(n.output(i)));
    results[i]->set_type(n.output(i)->type());
  }
  return results;
}

// --- the decompositions --------------------------------------------------------------

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)

/// gelu(x) = x/2 (1 + erf(x / sqrt 2)); approximate="tanh": x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Replacement gelu(const Node& n, Builder& b) {
  Value* x0 = decomposable_input(n);
  const Attribute* approximate = literal_argument(n, "approximate");
  if (x0 == nullptr || approximate == nullptr || approximate->kind() != Attribute::Kind::Str) return {};
  const std::string& mode = approximate->to_str();
  if (mode != "none" && mode != "tanh") return {};
  Value* x = b.cast(x0, *compute_dtype(*dtype_of(x0)));
  Value* inner = nullptr;
  if (mode == "none") {
    inner = b.unary("kiln::erf", b.mul(x, kSqrtHalf));
  } else {
    Value* cube = b.mul(b.mul(x, x), x);
    inner = b.unary("kiln::tanh", b.mul(b.add(x, cube, 0.044715), kSqrtTwoOverPi));
  }
  return finish(b, n, {b.mul(b.mul(x, b.add(inner, 1.0)), 0.5)});
}

/// silu(x) = x sigmoid(x).
Replacement silu(const Node& n, Builder& b) {
  Value* x0 = decomposable_input(n);
  if (x0 == nullptr) return {};
  Value* x = b.cast(x0, *compute_dtype(*dtype_of(x0)));
  return finish(b, n, {b.mul(x, b.unary("kiln::sigmoid", x))});
}

/// The one reduced dim of a softmax-like node and the dtype it computes in, or nullopt.
std::optional<std::pair<std::vector<int64_t>, DType>> softmax_setup(const Node& n, const Value* x) {
  const auto dim = literal_argument(n, "dim");
  if (dim == nullptr || dim->kind() != Attribute::Kind::Int) return std::nullopt;
  const auto dims = reduced_dims(x, {dim->to_int()});
  if (!dims) return std::nullopt;
  DType dtype = *dtype_of(x);
  const Attribute* requested = literal_argument(n, "dtype");  // softmax.int's optional dtype
  if (requested != nullptr && requested->kind() == Attribute::Kind::DType) dtype = requested->to_dtype();
  else if (requested != nullptr && !requested->is_none()) return std::nullopt;
  const auto compute = compute_dtype(dtype);
  if (!compute) return std::nullopt;
  return std::pair(*dims, *compute);
}

/// softmax(x) = exp(x - max) * (1 / sum(exp(x - max))), as eager's softmax scales the row by the sum's
/// reciprocal (a division of each element rounds differently); log_softmax(x) = (x - max) - log(sum(exp(x - max))).
Replacement softmax(const Node& n, Builder& b, bool log) {
  Value* x0 = decomposable_input(n);
  if (x0 == nullptr) return {};
  const auto setup = softmax_setup(n, x0);
  if (!setup) return {};
  const auto& [dims, dtype] = *setup;
  Value* x = b.cast(x0, dtype);
  Value* shifted = b.sub(x, b.reduce("kiln::amax", x, dims));
  Value* e = b.unary("kiln::exp", shifted);
  Value* total = b.reduce("kiln::sum.dim_IntList", e, dims);
  if (log) return finish(b, n, {b.sub(shifted, b.unary("kiln::log", total))});
  Value* scale = b.unary("kiln::reciprocal", total);
  return finish(b, n, {b.mul(e, scale)});
}

/// _softmax_backward_data: y (g - sum(g y)); _log_softmax_backward_data: g - exp(y) sum(g),
/// for the softmax result y and its incoming gradient g.
Replacement softmax_backward(const Node& n, Builder& b, bool log) {
  Value* g0 = decomposable_input(n, "grad_output");
  Value* y0 = decomposable_input(n, "output");
  const Attribute* dim = literal_argument(n, "dim");
  if (g0 == nullptr || y0 == nullptr || dim == nullptr || dim->kind() != Attribute::Kind::Int) return {};
  if (g0->type().tensor_type().sizes != y0->type().tensor_type().sizes) return {};
  const auto dims = reduced_dims(y0, {dim->to_int()});
  if (!dims) return {};
  const DType dtype = *compute_dtype(*dtype_of(y0));
  Value* g = b.cast(g0, dtype);
  Value* y = b.cast(y0, dtype);
  if (log) {
    Value* e = b.unary("kiln::exp", y);  // one builder call per statement: the node order is the code's
    Value* total = b.reduce("kiln::sum.dim_IntList", g, *dims);
    return finish(b, n, {b.sub(g, b.mul(e, total))});
  }
  return finish(b, n, {b.mul(y, b.sub(g, b.reduce("kiln::sum.dim_IntList", b.mul(g, y), *dims)))});
}

/// The trailing dims a norm over `normalized_shape` reduces, or nullopt.
std::optional<std::vector<int64_t>> norm_dims(const Node& n, const Value* x) {
  const Attribute* shape = literal_argument(n, "normalized_shape");
  if (shape == nullptr || shape->kind() != Attribute::Kind::IntList || shape->to_int_list().empty())
    return std::nullopt;
  const auto rank = rank_of(x);
  const size_t k = shape->to_int_list().size();
  if (!rank || k > *rank) return std::nullopt;
  std::vector<int64_t> dims;
  for (size_t d = *rank - k; d < *rank; ++d) dims.push_back(static_cast<int64_t>(d));
  return reduced_dims(x, dims);
}

/// An optional tensor argument: the value, or nullptr for None; `ok` false
/// when it is given in a way the decomposition cannot read.
Value* optional_tensor(const Node& n, std::string_view name, bool& ok) {
  if (Value* v = value_argument(n, name)) {
    if (!v->type().is_tensor()) ok = false;  // an Optional-typed value: unknown until run
    return v;
  }
  const Attribute* a = literal_argument(n, name);
  if (a == nullptr || !a->is_none()) ok = false;
  return nullptr;
}

/// layer_norm: mean = mean(x), xc = x - mean, rstd = rsqrt(mean(xc^2) + eps),
/// y = xc rstd (* weight) (+ bias); native_layer_norm also returns mean and rstd.
Replacement layer_norm(const Node& n, Builder& b) {
  Value* x0 = decomposable_input(n, "input");
  if (x0 == nullptr) return {};
  const auto dims = norm_dims(n, x0);
  const Attribute* eps = literal_argument(n, "eps");
  bool ok = true;
  Value* weight = optional_tensor(n, "weight", ok);
  Value* bias = optional_tensor(n, "bias", ok);
  if (!dims || eps == nullptr || eps->kind() != Attribute::Kind::Float || !ok) return {};
  const DType dtype = *compute_dtype(*dtype_of(x0));
  Value* x = b.cast(x0, dtype);
  if (weight) weight = b.cast(weight, dtype);
  if (bias) bias = b.cast(bias, dtype);
  Value* mean = b.reduce("kiln::mean.dim", x, *dims);
  Value* centered = b.sub(x, mean);
  Value* var = b.reduce("kiln::mean.dim", b.mul(centered, centered), *dims);
  Value* rstd = b.unary("kiln::rsqrt", b.add(var, eps->to_float()));
  Value* y = b.mul(centered, rstd);
  if (weight) y = b.mul(y, weight);
  if (bias) y = b.add(y, bias);
  if (n.outputs().size() == 3) return finish(b, n, {y, mean, rstd});
  return finish(b, n, {y});
}

/// rms_norm: rstd = rsqrt(mean(x^2) + eps), y = x rstd (* weight); eps None is
/// the epsilon of the compute type; _fused_rms_norm also returns rstd.
Replacement rms_norm(const Node& n, Builder& b) {
  Value* x0 = decomposable_input(n, "input");
  if (x0 == nullptr) return {};
  const auto dims = norm_dims(n, x0);
  const Attribute* eps = literal_argument(n, "eps");
  bool ok = true;
  Value* weight = optional_tensor(n, "weight", ok);
  if (!dims || eps == nullptr || !ok || !(eps->is_none() || eps->kind() == Attribute::Kind::Float)) return {};
  const DType dtype = *compute_dtype(*dtype_of(x0));
  const double e = !eps->is_none()            ? eps->to_float()
                   : dtype == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                              : double(std::numeric_limits<float>::epsilon());
  Value* x = b.cast(x0, dtype);
  if (weight) weight = b.cast(weight, dtype);
  Value* rstd = b.unary("kiln::rsqrt", b.add(b.reduce("kiln::mean.dim", b.mul(x, x), *dims), e));
  Value* y = b.mul(x, rstd);
  if (weight) y = b.mul(y, weight);
  if (n.outputs().size() == 2) return finish(b, n, {y, rstd});
  return finish(b, n, {y});
}

/// _norm_backward_input (layer_norm's and rms_norm's input gradient): with gw = g w (or g) and
/// xhat = (x - mean) rstd (x rstd without a mean), dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),
/// the mean(gw) term only where the norm centered (as eager's norm_backward_input_typed).
Replacement norm_backward_input(const Node& n, Builder& b) {
  Value* g0 = decomposable_input(n, "grad_out");
  Value* x0 = decomposable_input(n, "input");
  Value* rstd = value_argument(n, "rstd");
  if (g0 == nullptr || x0 == nullptr || rstd == nullptr || !rstd->type().is_tensor()) return {};
  if (g0->type().tensor_type().sizes != x0->type().tensor_type().sizes) return {};
  const auto dims = norm_dims(n, x0);
  bool ok = true;
  Value* mean = optional_tensor(n, "mean", ok);
  Value* weight = optional_tensor(n, "weight", ok);
  if (!dims || !ok || dtype_of(rstd) != dtype_of(x0) || (mean && dtype_of(mean) != dtype_of(x0))) return {};
  const DType dtype = *compute_dtype(*dtype_of(x0));
  Value* g = b.cast(g0, dtype);
  Value* x = b.cast(x0, dtype);
  rstd = b.cast(rstd, dtype);
  if (mean) mean = b.cast(mean, dtype);
  if (weight) weight = b.cast(weight, dtype);
  Value* gw = weight ? b.mul(g, weight) : g;
  Value* xhat = b.mul(mean ? b.sub(x, mean) : x, rstd);
  Value* c = b.reduce("kiln::mean.dim", b.mul(gw, xhat), *dims);
  Value* centered = mean ? b.sub(gw, b.reduce("kiln::mean.dim", gw, *dims)) : gw;
  return finish(b, n, {b.mul(rstd, b.sub(centered, b.mul(xhat, c)))});
}

/// Whether a dropout node draws nothing: train is False, or (dropout only) p is 0.
bool dropout_is_identity(const Node& n, bool p_zero_counts) {
  const Attribute* train = literal_argument(n, "train");
  const Attribute* p = literal_argument(n, "p");
  if (train != nullptr && train->kind() == Attribute::Kind::Bool && !train->to_bool()) return true;
  return p_zero_counts && p != nullptr && p->kind() == Attribute::Kind::Float && p->to_float() == 0.0;
}

/// dropout(x, p, train) in eval mode or with p = 0 is x itself (as eager returns it).
Replacement dropout(const Node& n, Builder&) {
  Value* x = value_argument(n, "input");
  if (x == nullptr || !dropout_is_identity(n, true)) return {};
  return {x};
}

/// native_dropout(x, p, train=False) = (clone(x), ones_like(x, bool)).
Replacement native_dropout(const Node& n, Builder& b) {
  Value* x = value_argument(n, "input");
  if (x == nullptr || !x->type().is_tensor() || !dropout_is_identity(n, false)) return {};
  Value* copy = b.op("kiln::clone", {x}, {{"memory_format", Attribute::none()}}, Builder::type_of(x));
  ir::TensorType mask_type = Builder::type_of(x);
  mask_type.dtype = DType::Bool;
  Value* mask = b.op("kiln::ones_like", {x},
                     {{"dtype", Attribute::of_dtype(DType::Bool)}, {"device", Attribute::none()},
                      {"memory_format", Attribute::of_int(static_cast<int64_t>(MemoryFormat::Contiguous))}},
                     std::move(mask_type));
  copy->set_type(n.output(0)->type());
  mask->set_type(n.output(1)->type());
  return {copy, mask};
}

using DecomposeFn = Replacement (*)(const Node&, Builder&);

struct Decomposition {
  std::string_view op;
  DecomposeFn decompose;
};

Replacement softmax_exp(const Node& n, Builder& b) { return softmax(n, b, false); }
Replacement softmax_log(const Node& n, Builder& b) { return softmax(n, b, true); }
Replacement softmax_grad(const Node& n, Builder& b) { return softmax_backward(n, b, false); }
Replacement log_softmax_grad(const Node& n, Builder& b) { return softmax_backward(n, b, true); }

constexpr Decomposition kDecompositions[] = {
    {"kiln::gelu", gelu},
    {"kiln::silu", silu},
    {"kiln::softmax.int", softmax_exp},
    {"kiln::_softmax", softmax_exp},
    {"kiln::log_softmax.int", softmax_log},
    {"kiln::_log_softmax", softmax_log},
    {"kiln::_softmax_backward_data", softmax_grad},
    {"kiln::_log_softmax_backward_data", log_softmax_grad},
    {"kiln::native_layer_norm", layer_norm},
    {"kiln::layer_norm", layer_norm},
    {"kiln::_fused_rms_norm", rms_norm},
    {"kiln::rms_norm", rms_norm},
    {"kiln::_norm_backward_input", norm_backward_input},
    {"kiln::dropout", dropout},
    {"kiln::native_dropout", native_dropout},
};

/// Runs one decomposition on n; on success n's results are replaced and n erased.
bool decompose(const Decomposition& d, Node& n) {
  Node* before = n.prev();
  Builder b(n);
  const Replacement results = d.decompose(n, b);
  if (results.size() != n.outputs().size()) {
    // Nothing to replace: drop what the builder made, newest first.
    while (n.prev() != before) n.owning_graph().erase(n.prev());
    return false;
  }
  for (size_t i = 0; i < results.size(); ++i) {
    Value* out = n.output(i);
    out->replace_all_uses_with(results[i]);
    // The last value of the decomposition takes the composite result's name
    // (not an input it forwards to, like eval-mode dropout's).
    if (out->name().empty() || !results[i]->name().empty() || results[i]->node()->kind() == ir::NodeKind::Param)
      continue;
    std::string name = out->name();
    n.owning_graph().set_name(out, "");
    n.owning_graph().set_name(results[i], std::move(name));
  }
  n.owning_graph().erase(&n);
  return true;
}

}  // namespace

size_t decompose_composites(ir::Graph& g) { return decompose_composites_except(g, nullptr); }

size_t decompose_composites_except(ir::Graph& g, const std::function<bool(const ir::Node&)>& keep_whole) {
  size_t done = 0;
  for (Node* n : g.nodes()) {
    if (n->kind() != ir::NodeKind::Op || (keep_whole && keep_whole(*n))) continue;
    const std::string kind = n->kind_name();
    for (const Decomposition& d : kDecompositions) {
      if (d.op == kind && decompose(d, *n)) {
        ++done;
        break;
      }
    }
  }
  return done;
}

std::vector<std::string_view> decomposed_ops() {
  std::vector<std::string_view> out;
  for (const Decomposition& d : kDecompositions) out.push_back(d.op);
  return out;
}

}  // namespace kiln::passes
