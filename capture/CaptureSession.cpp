// CaptureSession, the thread's current session and CaptureGuard.
#include "capture/CaptureSession.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "capture/SymbolicInts.h"
#include "ir/Attribute.h"
#include "ir/Clone.h"
#include "ir/Type.h"

namespace kiln::capture {

namespace {
thread_local CaptureSession* tls_session = nullptr;
}  // namespace

CaptureSession::CaptureSession() : graph_(std::make_unique<ir::Graph>()) {}
CaptureSession::~CaptureSession() = default;

ir::Value* CaptureSession::new_input(const Tensor& t) {
  ir::Value* v = graph_->add_input(ir::Type::tensor(ir::TensorType::of(t)));
  input_tensors_.push_back(t);
  return v;
}

ir::Value* CaptureSession::add_input(const Tensor& t) {
  KILN_CHECK(t.defined(), "capture: an input must be a defined tensor");
  KILN_CHECK(num_declared_inputs_ == input_tensors_.size(),
             "capture: declare every input before ops run (a tensor was already lifted to an input)");
  ir::Value* v = new_input(t);
  ++num_declared_inputs_;
  input_storages_.insert(t.storage().get());
  declared_impls_.insert(t.impl());
  if (find(t) == nullptr) bind(t, v);
  return v;
}

ir::Value* CaptureSession::add_late_input(const Tensor& t) {
  KILN_CHECK(t.defined(), "capture: an input must be a defined tensor");
  ir::Value* v = new_input(t);
  bind(t, v);
  return v;
}

ir::Value* CaptureSession::find_exact_alias(const Tensor& t) const {
  for (const auto& [impl, entry] : values_) {
    const Tensor& seen = entry.first;
    if (stale_.count(impl) != 0) continue;
    if (seen.storage().get() == t.storage().get() && seen.storage_offset() == t.storage_offset() &&
        seen.dtype() == t.dtype() && std::ranges::equal(seen.sizes(), t.sizes()) && std::ranges::equal(seen.strides(), t.strides())) {
      return entry.second;
    }
  }
  return nullptr;
}

ir::Value* CaptureSession::find(const Tensor& t) const {
  auto it = values_.find(t.impl());
  return it == values_.end() ? nullptr : it->second.second;
}

ir::Value* CaptureSession::value_for(const Tensor& t) {
  if (ir::Value* v = find(t)) {
    if (!stale_.empty() && stale_.count(t.impl()) != 0) {
      mark_broken("a view (" + ir::Type::tensor(ir::TensorType::of(t)).str() +
                  ") of an input is used after the input was written in place");
    }
    return v;
  }
  // A tensor the session never saw made by a recorded op. When it shares
  // storage with one it did see, it is a view made outside the dispatcher:
  // lifting it would bake the capture-time storage into every replay.
  if (storages_.count(t.storage().get()) != 0) {
    if (ir::Value* alias = find_exact_alias(t)) {
      bind(t, alias);
      return alias;
    }
    mark_broken("a tensor made outside the dispatcher (" + ir::Type::tensor(ir::TensorType::of(t)).str() +
                ") shares storage with a captured tensor");
  }
  ir::Value* v = new_input(t);
  lifted_storages_.insert(t.storage().get());
  bind(t, v);
  return v;
}

void CaptureSession::bind(const Tensor& t, ir::Value* v) {
  auto [it, fresh] = values_.try_emplace(t.impl(), t, v);
  if (fresh) ++storages_[t.storage().get()];
  else it->second.second = v;
}

void CaptureSession::mark_output(const Tensor& t) { graph_->add_output(value_for(t)); }

std::unique_ptr<ir::Graph> CaptureSession::take_graph() {
  auto g = std::move(graph_);
  graph_ = std::make_unique<ir::Graph>();
  finish();
  return g;
}

ir::Value* CaptureSession::default_generator_at(uint64_t seed, uint64_t offset) {
  if (rng_seed_ == nullptr) {
    rng_input_index_ = graph_->inputs().size();
    rng_seed_ = graph_->add_input(ir::Type::int_type(), graph_->unique_name("rng_seed"));
    rng_offset_ = graph_->add_input(ir::Type::int_type(), graph_->unique_name("rng_offset"));
    rng_seed_value_ = seed;
    rng_base_offset_ = offset;
    rng_end_offset_ = offset;
  }
  if (seed != rng_seed_value_ || offset < rng_base_offset_) {
    mark_broken("the default generator was reseeded inside the captured function");
  }
  ir::Node* g = graph_->append(graph_->create_op(
      "capture::philox_generator", {rng_seed_, rng_offset_},
      {{"relative_offset", ir::Attribute::of_int(static_cast<int64_t>(offset - rng_base_offset_))}}));
  g->output()->set_type(ir::Type::generator_type());
  return g->output();
}

std::vector<size_t> CaptureSession::add_copy_back_outputs() {
  std::vector<size_t> written;
  std::unordered_set<const TensorImpl*> seen;
  for (size_t i = 0; i < num_declared_inputs_; ++i) {
    const Tensor& t = input_tensors_[i];
    if (!seen.insert(t.impl()).second) continue;  // the same tensor passed twice: copy back once
    ir::Value* now = find(t);
    if (now == nullptr || now == graph_->inputs()[i]) continue;
    graph_->add_output(now);
    written.push_back(i);
  }
  return written;
}

void CaptureSession::mark_aliases_stale(const Tensor& t) {
  for (const auto& [impl, entry] : values_) {
    if (impl != t.impl() && entry.first.storage().get() == t.storage().get()) stale_.insert(impl);
  }
}

void CaptureSession::mark_broken(std::string reason) {
  if (!break_reason_) break_reason_ = std::move(reason);
}

void CaptureSession::finish() {
  values_.clear();
  storages_.clear();
  lifted_storages_.clear();
  input_storages_.clear();
  declared_impls_.clear();
  stale_.clear();
}

void CaptureSession::set_input_symbols(size_t i, const std::vector<std::string>& names) {
  KILN_CHECK(i < graph_->inputs().size() && graph_->inputs()[i]->type().is_tensor(),
             "capture: set_input_symbols: input ", i, " is not a tensor input");
  ir::Value* v = graph_->inputs()[i];
  ir::TensorType tt = v->type().tensor_type();
  KILN_CHECK(tt.sizes && tt.sizes->size() == names.size(), "capture: set_input_symbols: input ", i, " has rank ",
             tt.sizes ? tt.sizes->size() : 0, ", got ", names.size(), " names");
  bool any = false;
  for (size_t d = 0; d < names.size(); ++d) {
    if (names[d].empty()) continue;
    (*tt.sizes)[d] = ir::SymbolicSize::symbol(names[d]);
    any = true;
  }
  if (any) tt.strides.reset();
  v->set_type(ir::Type::tensor(std::move(tt)));
}

size_t CaptureSession::symbolic_size(const Tensor& t, int64_t dim) {
  ir::Value* self = value_for(t);
  ir::Node* n = graph_->append(graph_->create_op(symbolic_size_op(), {self}, {{"dim", ir::Attribute::of_int(dim)}}));
  n->output()->set_type(ir::Type::int_type());
  symbolic_values_.push_back(n->output());
  return symbolic_values_.size() - 1;
}

size_t CaptureSession::symbolic_arith(int64_t op, int64_t lhs, bool lhs_literal, int64_t rhs, bool rhs_literal) {
  auto operand = [&](int64_t x, bool literal) {
    if (!literal) return symbolic_value(static_cast<size_t>(x));
    ir::Node* c = graph_->append(graph_->create_constant(ir::Attribute::of_int(x)));
    c->output()->set_type(ir::Type::int_type());
    return c->output();
  };
  ir::Value* a = operand(lhs, lhs_literal);
  ir::Value* b = operand(rhs, rhs_literal);
  ir::Node* n = graph_->append(graph_->create_op(symbolic_arith_op(), {a, b}, {{"op", ir::Attribute::of_int(op)}}));
  n->output()->set_type(ir::Type::int_type());
  symbolic_values_.push_back(n->output());
  return symbolic_values_.size() - 1;
}

ir::Value* CaptureSession::symbolic_value(size_t handle) const {
  KILN_CHECK(handle < symbolic_values_.size(), "capture: no symbolic int ", handle);
  return symbolic_values_[handle];
}

void CaptureSession::note_symbolic_argument(int64_t value, size_t handle, int64_t position) {
  if (handle >= symbolic_values_.size()) return;  // a symbolic int of another session
  if (pending_closed_) {
    pending_symbolic_.clear();
    pending_closed_ = false;
  }
  pending_symbolic_.push_back({value, handle, position});
}

ir::Value* CaptureSession::take_symbolic_argument(int64_t value, size_t& cursor, int64_t position) {
  for (size_t k = position >= 0 ? 0 : cursor; k < pending_symbolic_.size(); ++k) {
    const PendingSymbolic& p = pending_symbolic_[k];
    if (p.value != value || (position >= 0 && p.position != position)) continue;
    ir::Value* v = symbolic_values_[p.handle];
    pending_symbolic_.erase(pending_symbolic_.begin() + static_cast<std::ptrdiff_t>(k));
    if (position < 0) cursor = k;
    return v;
  }
  return nullptr;
}

void CaptureSession::set_size_symbols(std::vector<SizeSymbol> table) {
  size_symbols_ = std::move(table);
  size_symbol_values_.clear();
}

ir::Value* CaptureSession::size_symbol(int64_t value) {
  if (auto it = size_symbol_values_.find(value); it != size_symbol_values_.end()) {
    ++num_size_symbols_used_;
    return it->second;
  }
  for (const SizeSymbol& e : size_symbols_) {
    if (e.value != value) continue;
    ir::Value* v = symbolic_value(e.handle);
    if (e.factor != 1) {
      v = symbolic_value(symbolic_arith(static_cast<int64_t>(SymbolicOp::Mul), static_cast<int64_t>(e.handle),
                                        /*lhs_literal=*/false, e.factor, /*rhs_literal=*/true));
    }
    size_symbol_values_.emplace(value, v);
    ++num_size_symbols_used_;
    return v;
  }
  return nullptr;
}

std::unique_ptr<ir::Graph> CaptureSession::probe_graph(const std::vector<size_t>& handles) const {
  auto g = std::make_unique<ir::Graph>();
  std::vector<ir::Value*> inputs;
  // Tensor inputs untyped: the probe runs the graph at other sizes.
  for (const ir::Value* v : graph_->inputs()) {
    inputs.push_back(g->add_input(v->type().is_tensor() ? ir::Type::tensor() : v->type()));
  }
  ir::ValueMap map;
  for (ir::Value* out : ir::clone_graph_into(*graph_, *g, inputs, map)) g->add_output(out);
  for (size_t h : handles) g->add_output(map.at(symbolic_value(h)));
  // Factory ops (zeros, new_zeros, arange, to; device=None too) make meta tensors: the probe allocates nothing.
  for (ir::Node* n : g->nodes()) {
    for (const ir::NamedAttribute& a : std::vector<ir::NamedAttribute>(n->attributes())) {
      if (a.value.kind() == ir::Attribute::Kind::Device || (a.name == "device" && a.value.is_none())) {
        n->set_attribute(a.name, ir::Attribute::of_device(Device(DeviceType::Meta)));
      }
    }
  }
  return g;
}

CaptureSession* current_session() { return tls_session; }

void note_escape(std::string_view what, std::string_view where) {
  CaptureSession* s = tls_session;
  if (s == nullptr) return;
  std::string reason = "a tensor value escaped to Python: ";
  reason += what;
  if (!where.empty()) {
    reason += " at ";
    reason += where;
  }
  s->mark_broken(std::move(reason));
}

CaptureGuard::CaptureGuard(CaptureSession& session)
    : previous_(tls_session), capture_on_((ensure_capture_fallback(), DispatchKeySet(DispatchKey::Capture))) {
  tls_session = &session;
}

CaptureGuard::~CaptureGuard() { tls_session = previous_; }

}  // namespace kiln::capture
