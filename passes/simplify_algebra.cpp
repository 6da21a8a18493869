// Algebraic simplification: each rule is a small function from a node to the
// value that may replace its result (or nullptr), listed in kRules.
#include "passes/simplify_algebra.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "eager/core/MemoryFormat.h"
#include "ir/ArgumentBinding.h"
#include "passes/arguments.h"
#include "passes/effects.h"
#include "passes/type_facts.h"

namespace kiln::passes {

using ir::Attribute;
using ir::Node;
using ir::NodeKind;
using ir::Value;

namespace {

// --- reading a node's arguments ------------------------------------------------

const Attribute* literal(const Node& n, std::string_view name) { return literal_argument(n, name); }
Value* self_of(const Node& n) { return first_argument(n); }

/// The node that defines v when it is the operator `op`, else nullptr.
const Node* producer(const Value* v, std::string_view op) {
  if (v == nullptr) return nullptr;
  const Node* p = v->node();
  return p->kind() == NodeKind::Op && p->kind_name() == op ? p : nullptr;
}

bool is_int_or_float(const Attribute* a, double x) {
  if (a == nullptr) return false;
  if (a->kind() == Attribute::Kind::Int) return static_cast<double>(a->to_int()) == x;
  return a->kind() == Attribute::Kind::Float && a->to_float() == x;
}
bool is_one(const Attribute* a) { return is_int_or_float(a, 1.0); }
/// An int 0 or a float +0.0 (not -0.0).
bool is_positive_zero(const Attribute* a) {
  return is_int_or_float(a, 0.0) && !(a->kind() == Attribute::Kind::Float && std::signbit(a->to_float()));
}
bool is_negative_zero(const Attribute* a) {
  return a != nullptr && a->kind() == Attribute::Kind::Float && a->to_float() == 0.0 && std::signbit(a->to_float());
}
bool is_none(const Attribute* a) { return a != nullptr && a->is_none(); }
bool is_false(const Attribute* a) { return a != nullptr && a->kind() == Attribute::Kind::Bool && !a->to_bool(); }

std::optional<int64_t> int_literal(const Node& n, std::string_view name) {
  const Attribute* a = literal(n, name);
  if (a == nullptr || a->kind() != Attribute::Kind::Int) return std::nullopt;
  return a->to_int();
}
/// The permutation a permute node applies, wrapped into [0, rank).
std::optional<std::vector<int64_t>> permutation_of(const Node& n) {
  const Attribute* a = literal(n, "dims");
  if (a == nullptr || a->kind() != Attribute::Kind::IntList) return std::nullopt;
  std::vector<int64_t> dims;
  for (int64_t d : a->to_int_list()) {
    const auto w = wrap_dim(d, a->to_int_list().size());
    if (!w) return std::nullopt;
    dims.push_back(*w);
  }
  return dims;
}
bool is_identity(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// --- building replacements -------------------------------------------------------

/// The nodes a rule inserts before the node it rewrites; discarded when the
/// rewrite does not go ahead.
class RuleContext {
 public:
  explicit RuleContext(Node& n) : n_(n) {}
  /// A copy of n that reads `self` instead of its first argument, typed as n's result.
  Value* rebase(Value* self) {
    std::vector<Value*> inputs = n_.inputs();
    const auto binding = ir::bind_arguments(n_);
    inputs.at((*binding).at(0).index) = self;
    Node* copy = n_.owning_graph().create_op(n_.op(), std::move(inputs), n_.attributes());
    return insert(copy);
  }
  /// A new `op` node before n with the given inputs and attributes, typed as n's result.
  Value* emit(std::string_view op, std::vector<Value*> inputs, std::vector<ir::NamedAttribute> attributes) {
    return insert(n_.owning_graph().create_op(op, std::move(inputs), std::move(attributes)));
  }
  [[nodiscard]] const std::vector<Node*>& created() const { return created_; }
  void discard() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) n_.owning_graph().erase(*it);
    created_.clear();
  }

 private:
  Value* insert(Node* m) {
    m->output()->set_type(n_.output()->type());
    m->insert_before(&n_);
    created_.push_back(m);
    return m->output();
  }
  Node& n_;
  std::vector<Node*> created_;
};

using RuleFn = Value* (*)(const Node&, RuleContext&);

// --- the rules -----------------------------------------------------------------------
// Each returns the value that stands for n's result, or nullptr. The driver
// checks the types and storage (can_forward) before it replaces anything.

/// n's first argument when its dtype is known and real (a complex x * (1 + 0i)
/// is not exact: an infinite part times 0 is NaN), else nullptr.
Value* real_self(const Node& n) {
  Value* x = self_of(n);
  const auto dtype = dtype_of(x);
  return dtype && !is_complex(*dtype) ? x : nullptr;
}

/// x * 1 -> x (mul.Scalar). Exact for every real value, -0.0, inf and NaN included.
Value* mul_by_one(const Node& n, RuleContext&) { return is_one(literal(n, "other")) ? real_self(n) : nullptr; }

/// x / 1 -> x (div.Scalar; integer x / 1 is a float tensor, and the dtype check refuses it).
Value* div_by_one(const Node& n, RuleContext&) { return is_one(literal(n, "other")) ? real_self(n) : nullptr; }

/// x ** 1 -> x (pow.Tensor_Scalar).
Value* pow_one(const Node& n, RuleContext&) { return is_one(literal(n, "exponent")) ? real_self(n) : nullptr; }

/// x + 0 -> x (add.Scalar, alpha=1). Exact for integers; for floats only when
/// the zero is -0.0, since -0.0 + 0 is +0.0.
Value* add_zero(const Node& n, RuleContext&) {
  Value* x = self_of(n);
  const Attribute* other = literal(n, "other");
  if (x == nullptr || !is_one(literal(n, "alpha"))) return nullptr;
  const auto dtype = dtype_of(x);
  if (!dtype) return nullptr;
  if (is_integral(*dtype, false) && is_positive_zero(other)) return x;
  if (is_floating_point(*dtype) && is_negative_zero(other)) return x;
  return nullptr;
}

/// x - 0 -> x (sub.Scalar, alpha=1, the zero an int 0 or +0.0): exact, -0.0 - 0 is -0.0.
Value* sub_zero(const Node& n, RuleContext&) {
  if (!is_one(literal(n, "alpha")) || !is_positive_zero(literal(n, "other"))) return nullptr;
  return self_of(n);
}

/// -(-x) -> x (exact; integer negation wraps both ways).
Value* neg_neg(const Node& n, RuleContext&) {
  const Node* inner = producer(self_of(n), "kiln::neg");
  return inner ? self_of(*inner) : nullptr;
}

std::optional<std::pair<int64_t, int64_t>> transposed_dims(const Node& n, std::optional<size_t> rank) {
  const auto a = int_literal(n, "dim0");
  const auto b = int_literal(n, "dim1");
  if (!a || !b) return std::nullopt;
  const auto wa = wrap_dim(*a, rank);
  const auto wb = wrap_dim(*b, rank);
  if (!wa || !wb) return std::nullopt;
  return std::minmax(*wa, *wb);
}

/// x.transpose(a, b).transpose(a, b) -> x (either order of a and b).
Value* double_transpose(const Node& n, RuleContext&) {
  const Node* inner = producer(self_of(n), "kiln::transpose.int");
  if (inner == nullptr) return nullptr;
  Value* x = self_of(*inner);
  const auto outer_dims = transposed_dims(n, rank_of(x));
  const auto inner_dims = transposed_dims(*inner, rank_of(x));
  return outer_dims && inner_dims && *outer_dims == *inner_dims ? x : nullptr;
}

/// x.t().t() -> x (t swaps the two dims of a matrix and leaves a vector as it is).
Value* double_t(const Node& n, RuleContext&) {
  const Node* inner = producer(self_of(n), "kiln::t");
  return inner ? self_of(*inner) : nullptr;
}

/// x.transpose(a, a) -> x.
Value* transpose_same_dim(const Node& n, RuleContext&) {
  const auto dims = transposed_dims(n, rank_of(self_of(n)));
  return dims && dims->first == dims->second ? self_of(n) : nullptr;
}

/// x.permute(0, 1, ..., n-1) -> x.
Value* identity_permute(const Node& n, RuleContext&) {
  const auto dims = permutation_of(n);
  return dims && is_identity(*dims) ? self_of(n) : nullptr;
}

/// x.permute(p).permute(q) -> x.permute(p[q[i]]), or x when that is the identity.
Value* double_permute(const Node& n, RuleContext& ctx) {
  const Node* inner = producer(self_of(n), "kiln::permute");
  if (inner == nullptr) return nullptr;
  const auto p = permutation_of(*inner);
  const auto q = permutation_of(n);
  if (!p || !q || p->size() != q->size()) return nullptr;
  std::vector<int64_t> combined;
  for (int64_t i : *q) combined.push_back((*p)[i]);
  Value* x = self_of(*inner);
  if (is_identity(combined)) return x;
  return ctx.emit("kiln::permute", {x}, {{"dims", Attribute::of_int_list(std::move(combined))}});
}

/// The dtype a node converts to when it is a plain dtype conversion (no device
/// change, no memory-format request, no forced copy), else nullopt.
std::optional<DType> plain_cast_dtype(const Node& n) {
  const std::string name = n.kind_name();
  if (name == "kiln::type_as") {
    const Value* other = n.inputs().size() == 2 ? n.input(1) : nullptr;
    return other ? dtype_of(other) : std::nullopt;
  }
  const bool to_copy = name == "kiln::_to_copy";
  if (!to_copy && name != "kiln::to.dtype") return std::nullopt;
  const Attribute* format = literal(n, "memory_format");  // None and preserve_format both keep the layout
  const bool preserves = is_none(format) || (format != nullptr && format->kind() == Attribute::Kind::Int &&
                                             format->to_int() == static_cast<int64_t>(MemoryFormat::Preserve));
  if (!preserves) return std::nullopt;
  if (to_copy && !is_none(literal(n, "device"))) return std::nullopt;
  if (!to_copy && !is_false(literal(n, "copy"))) return std::nullopt;
  const Attribute* dtype = literal(n, "dtype");
  if (dtype == nullptr) return std::nullopt;
  if (dtype->is_none()) return dtype_of(self_of(n));  // _to_copy without a dtype: a copy
  if (dtype->kind() != Attribute::Kind::DType) return std::nullopt;
  return dtype->to_dtype();
}

/// x.to(x.dtype) -> x (_to_copy, to.dtype, type_as): the conversion changes nothing.
Value* cast_to_own_dtype(const Node& n, RuleContext&) {
  Value* x = self_of(n);
  const auto target = plain_cast_dtype(n);
  return x && target && dtype_of(x) == target ? x : nullptr;
}

/// Whether every value of dtype `a` survives a conversion to `b` and back.
bool round_trips(DType a, DType b) {
  if (a == b || a == DType::Bool) return true;
  const auto bits = [](DType t) { return static_cast<size_t>(itemsize(t)) * 8; };
  if (is_floating_point(a)) {
    if (!is_floating_point(b)) return false;
    if (b == DType::Float64) return true;
    return b == DType::Float32 && (a == DType::Float16 || a == DType::BFloat16);
  }
  if (!is_integral(a, false)) return false;
  if (is_integral(b, false)) return is_signed(b) ? bits(b) > bits(a) || (bits(b) == bits(a) && is_signed(a))
                                                 : !is_signed(a) && bits(b) >= bits(a);
  // A float holds every integer up to 2**(mantissa bits + 1).
  const size_t mantissa = b == DType::Float64 ? 53 : b == DType::Float32 ? 24 : b == DType::Float16 ? 11 : 8;
  return is_floating_point(b) && bits(a) - (is_signed(a) ? 1 : 0) <= mantissa;
}

/// x.to(b).to(a) -> x, x of dtype a, when b holds every value of a (f32 -> f64 -> f32, i8 -> i32 -> i8).
Value* cast_round_trip(const Node& n, RuleContext&) {
  const Value* y = self_of(n);
  if (y == nullptr || y->node()->kind() != NodeKind::Op) return nullptr;
  const Node& inner = *y->node();
  const auto b = plain_cast_dtype(inner);
  const auto a = plain_cast_dtype(n);
  Value* x = self_of(inner);
  if (!a || !b || x == nullptr || dtype_of(x) != a || dtype_of(y) != b) return nullptr;
  return round_trips(*a, *b) ? x : nullptr;
}

/// x.view(s1).view(s2) -> x.view(s2), and the same for reshape, when x is
/// contiguous (then every view of it is too, and either form is a view of x).
Value* view_of_view(const Node& n, RuleContext& ctx) {
  const Node* inner = producer(self_of(n), n.kind_name());
  if (inner == nullptr) return nullptr;
  Value* x = self_of(*inner);
  return x && is_contiguous(x) ? ctx.rebase(x) : nullptr;
}

/// x.view(x.shape) -> x and x.reshape(x.shape) -> x (sizes given as a literal).
Value* identity_view(const Node& n, RuleContext&) {
  Value* x = self_of(n);
  const Attribute* size = literal(n, n.kind_name() == "kiln::reshape" ? "shape" : "size");
  if (x == nullptr || size == nullptr || size->kind() != Attribute::Kind::IntList) return nullptr;
  const auto sizes = concrete_sizes(x);
  return sizes && *sizes == size->to_int_list() ? x : nullptr;
}

/// x.expand(x.shape) -> x (-1 keeps a size).
Value* identity_expand(const Node& n, RuleContext&) {
  Value* x = self_of(n);
  const Attribute* size = literal(n, "size");
  if (x == nullptr || size == nullptr || size->kind() != Attribute::Kind::IntList) return nullptr;
  const auto sizes = concrete_sizes(x);
  if (!sizes || sizes->size() != size->to_int_list().size()) return nullptr;
  for (size_t i = 0; i < sizes->size(); ++i) {
    const int64_t s = size->to_int_list()[i];
    if (s != -1 && s != (*sizes)[i]) return nullptr;
  }
  return x;
}

/// x.unsqueeze(d).squeeze(d) -> x.
Value* squeeze_unsqueeze(const Node& n, RuleContext&) {
  const Value* y = self_of(n);
  const Node* inner = y ? producer(y, "kiln::unsqueeze") : nullptr;
  if (inner == nullptr) return nullptr;
  const auto d_in = int_literal(*inner, "dim");
  const auto d_out = int_literal(n, "dim");
  if (!d_in || !d_out) return nullptr;
  const auto wrapped_in = wrap_dim(*d_in, rank_of(y));
  const auto wrapped_out = wrap_dim(*d_out, rank_of(y));
  return wrapped_in && wrapped_in == wrapped_out ? self_of(*inner) : nullptr;
}

/// x.contiguous() -> x when x is already contiguous (eager returns x itself).
Value* contiguous_noop(const Node& n, RuleContext&) {
  Value* x = self_of(n);
  const Attribute* format = literal(n, "memory_format");
  if (x == nullptr || format == nullptr || format->kind() != Attribute::Kind::Int ||
      format->to_int() != static_cast<int64_t>(MemoryFormat::Contiguous))
    return nullptr;
  return is_contiguous(x) ? x : nullptr;
}

struct RewriteRule {
  std::string_view name;
  std::string_view op;
  RuleFn apply;
  std::string_view rewrite;
};

// The table: every rule, the operator it matches, and what it does. A rule may
// appear on several operators under one name.
constexpr RewriteRule kRules[] = {
    {"mul_by_one", "kiln::mul.Scalar", mul_by_one, "x * 1 -> x"},
    {"div_by_one", "kiln::div.Scalar", div_by_one, "x / 1 -> x"},
    {"pow_one", "kiln::pow.Tensor_Scalar", pow_one, "x ** 1 -> x"},
    {"add_zero", "kiln::add.Scalar", add_zero, "x + 0 -> x (alpha=1; floats only for -0.0)"},
    {"sub_zero", "kiln::sub.Scalar", sub_zero, "x - 0 -> x (alpha=1)"},
    {"neg_neg", "kiln::neg", neg_neg, "-(-x) -> x"},
    {"double_transpose", "kiln::transpose.int", double_transpose, "x.transpose(a, b).transpose(a, b) -> x"},
    {"double_t", "kiln::t", double_t, "x.t().t() -> x"},
    {"transpose_same_dim", "kiln::transpose.int", transpose_same_dim, "x.transpose(a, a) -> x"},
    {"identity_permute", "kiln::permute", identity_permute, "x.permute(0, 1, ..) -> x"},
    {"double_permute", "kiln::permute", double_permute, "x.permute(p).permute(q) -> x.permute(p[q])"},
    {"cast_to_own_dtype", "kiln::_to_copy", cast_to_own_dtype, "x.to(x.dtype) -> x"},
    {"cast_to_own_dtype", "kiln::to.dtype", cast_to_own_dtype, "x.to(x.dtype) -> x"},
    {"cast_to_own_dtype", "kiln::type_as", cast_to_own_dtype, "x.type_as(y) -> x (same dtype)"},
    {"cast_round_trip", "kiln::_to_copy", cast_round_trip, "x.to(wider).to(x.dtype) -> x"},
    {"cast_round_trip", "kiln::to.dtype", cast_round_trip, "x.to(wider).to(x.dtype) -> x"},
    {"view_of_view", "kiln::view", view_of_view, "x.view(s1).view(s2) -> x.view(s2) (x contiguous)"},
    {"view_of_view", "kiln::reshape", view_of_view, "x.reshape(s1).reshape(s2) -> x.reshape(s2) (x contiguous)"},
    {"identity_view", "kiln::view", identity_view, "x.view(x.shape) -> x"},
    {"identity_view", "kiln::reshape", identity_view, "x.reshape(x.shape) -> x"},
    {"identity_expand", "kiln::expand", identity_expand, "x.expand(x.shape) -> x"},
    {"squeeze_unsqueeze", "kiln::squeeze.dim", squeeze_unsqueeze, "x.unsqueeze(d).squeeze(d) -> x"},
    {"contiguous_noop", "kiln::contiguous", contiguous_noop, "x.contiguous() -> x (x contiguous)"},
};

/// A rewrite replaces values, so a graph reaches its fixed point in a few
/// sweeps; the cap only guards against a pair of rules undoing each other.
constexpr int kMaxSweeps = 16;

bool try_rule(const RewriteRule& rule, Node& n, AliasClasses& aliases) {
  RuleContext ctx(n);
  Value* to = rule.apply(n, ctx);
  if (to == nullptr || to == n.output() || !can_forward(n.output(), to, aliases)) {
    ctx.discard();
    return false;
  }
  for (Node* c : ctx.created()) aliases.add_node(*c);
  aliases.merge(n.output(), to);
  n.output()->replace_all_uses_with(to);
  if (!ctx.created().empty() && !n.output()->name().empty()) {  // a rebuilt node keeps the name it replaces
    std::string name = n.output()->name();
    n.owning_graph().set_name(n.output(), "");
    n.owning_graph().set_name(to, std::move(name));
  }
  return true;
}

}  // namespace

size_t simplify_algebra(ir::Graph& g, std::map<std::string, size_t>* fired) {
  size_t total = 0;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    AliasClasses aliases(g);
    size_t changed = 0;
    for (Node* n : g.nodes()) {
      if (n->kind() != NodeKind::Op || n->outputs().size() != 1 || !n->output()->has_uses()) continue;
      const std::string kind = n->kind_name();
      for (const RewriteRule& rule : kRules) {
        if (rule.op != kind || !try_rule(rule, *n, aliases)) continue;
        ++changed;
        if (fired) ++(*fired)[std::string(rule.name)];
        break;
      }
    }
    total += changed;
    if (changed == 0) break;
  }
  return total;
}

std::vector<RewriteRuleInfo> rewrite_rules() {
  std::vector<RewriteRuleInfo> out;
  for (const RewriteRule& r : kRules) out.push_back({r.name, r.op, r.rewrite});
  return out;
}

}  // namespace kiln::passes
