// CaptureSession, the thread's current session and CaptureGuard.
#include "capture/CaptureSession.h"

#include <algorithm>

#include "eager/core/Error.h"
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
