// CaptureSession, the thread's current session and CaptureGuard.
#include "capture/CaptureSession.h"

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
  if (find(t) == nullptr) bind(t, v);
  return v;
}

ir::Value* CaptureSession::find(const Tensor& t) const {
  auto it = values_.find(t.impl());
  return it == values_.end() ? nullptr : it->second.second;
}

ir::Value* CaptureSession::value_for(const Tensor& t) {
  if (ir::Value* v = find(t)) return v;
  // A tensor the session never saw made by a recorded op. When it shares
  // storage with one it did see, it is a view made outside the dispatcher:
  // lifting it would bake the capture-time storage into every replay.
  if (storages_.count(t.storage().get()) != 0) {
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

void CaptureSession::mark_broken(std::string reason) {
  if (!break_reason_) break_reason_ = std::move(reason);
}

void CaptureSession::finish() {
  values_.clear();
  storages_.clear();
  lifted_storages_.clear();
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
