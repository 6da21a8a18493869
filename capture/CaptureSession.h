// CaptureSession: the graph being recorded while a function runs eagerly, the
// map from the tensors it has seen to the graph values that stand for them,
// and the graph inputs in order. CaptureGuard makes a session current on this
// thread and turns the Capture dispatch key on (See Note [How capture records]).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eager/ops/Tensor.h"
#include "eager/dispatch/LocalDispatchKeySet.h"
#include "ir/Graph.h"

namespace kiln::capture {

// Note [How capture records]
// --------------------------
// A boxed fallback on DispatchKey::Capture (CaptureFallback.cpp) sees every op
// that reaches the Capture key while a CaptureGuard is alive: Capture sits
// below Autograd, so an op with an autograd kernel is recorded once, when that
// kernel redispatches below Autograd; a CompositeImplicit op serves the
// Autograd and Capture keys with its decomposition (kCompositeKeys), so only
// its parts reach Capture and are recorded, never the composite itself. The
// fallback maps tensor arguments to values (a tensor it has not seen becomes a
// graph input), other arguments to attributes, appends the op node, then
// redispatches below Capture with Capture excluded, so ops that a backend
// kernel calls internally are not recorded twice. Each result tensor then maps
// to the node's output, typed from the real result. An in-place op returns its
// argument, so the argument's tensor maps to the new output from then on.
//
// The map holds a reference to every tensor it keys (intrusive_ptr), so a
// freed TensorImpl cannot be reused at the same address while the session
// lives and alias a recorded value. Call finish() to release them.
//
// What a session cannot record faithfully marks it broken with a reason (the
// op still runs eagerly): a tensor value escaping to Python (item, tolist,
// numpy, bool/int/float/index), an argument with no literal form (an explicit
// Generator), a tensor made outside the dispatcher
// that shares storage with a recorded tensor, an op that writes into the
// storage of a lifted tensor (a global, closure or Python-made constant is
// held by reference, so a replay would write into it again), and an op that
// returns a non-tensor value (computed from data). Grad-mode changes and
// backward calls inside a capture are caught in Python (kiln.compiler), since
// an autograd kernel's redispatch also excludes the Autograd key and the
// fallback cannot tell it from no_grad.

class CaptureSession {
 public:
  CaptureSession();
  ~CaptureSession();
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  /// Given a tensor t not yet seen.   Do add_input(t).   Result a new graph
  /// input typed from t; later ops on t use it. A tensor already seen gets a
  /// fresh (unused) input so the graph keeps one input per declared argument.
  /// RuntimeError after a tensor was lifted (declared inputs come first).
  ir::Value* add_input(const Tensor& t);
  /// The value standing for t, lifting t to a new graph input when unseen
  /// (a global or closure tensor, or one made outside the dispatcher).
  ir::Value* value_for(const Tensor& t);
  /// The value for t if seen, else nullptr.
  [[nodiscard]] ir::Value* find(const Tensor& t) const;
  /// Records that t now stands for v (a result of a recorded op).
  void bind(const Tensor& t, ir::Value* v);
  /// Appends t's value to the graph outputs (lifting it when unseen).
  void mark_output(const Tensor& t);

  /// The tensors bound to the graph inputs, in input order (declared, then lifted).
  [[nodiscard]] const std::vector<Tensor>& input_tensors() const { return input_tensors_; }
  [[nodiscard]] size_t num_declared_inputs() const { return num_declared_inputs_; }

  [[nodiscard]] ir::Graph& graph() { return *graph_; }
  [[nodiscard]] const ir::Graph& graph() const { return *graph_; }
  /// Hands the graph over (the session keeps an empty one).
  [[nodiscard]] std::unique_ptr<ir::Graph> take_graph();

  /// The first break wins; later ones are ignored.
  void mark_broken(std::string reason);
  [[nodiscard]] bool broken() const { return break_reason_.has_value(); }
  [[nodiscard]] const std::optional<std::string>& break_reason() const { return break_reason_; }

  /// Whether t shares storage with a lifted (not declared) input.
  [[nodiscard]] bool writes_lifted_storage(const Tensor& t) const {
    return lifted_storages_.count(t.storage().get()) != 0;
  }

  /// Number of op nodes recorded so far.
  [[nodiscard]] size_t num_ops() const { return num_ops_; }
  void count_op() { ++num_ops_; }

  /// Drops the tensor map (and the references it holds); input_tensors stay.
  void finish();

 private:
  ir::Value* new_input(const Tensor& t);

  std::unique_ptr<ir::Graph> graph_;
  std::unordered_map<const TensorImpl*, std::pair<Tensor, ir::Value*>> values_;
  std::unordered_map<const StorageImpl*, size_t> storages_;  // storage -> how many mapped tensors use it
  std::unordered_set<const StorageImpl*> lifted_storages_;
  std::vector<Tensor> input_tensors_;
  size_t num_declared_inputs_ = 0;
  std::optional<std::string> break_reason_;
  size_t num_ops_ = 0;
};

/// The session recording on this thread, or nullptr.
[[nodiscard]] CaptureSession* current_session();

/// Marks the current session (if any) broken because a tensor value escaped
/// to the caller: `what` names the escape ("Tensor.item()"), `where` the
/// caller's file:line when known.
void note_escape(std::string_view what, std::string_view where = "");

/// Makes `session` current on this thread and turns the Capture key on for the
/// guard's lifetime; restores the previous session (nesting works). Registers
/// the Capture fallback on first use.
class CaptureGuard {
 public:
  explicit CaptureGuard(CaptureSession& session);
  ~CaptureGuard();
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;

 private:
  CaptureSession* previous_;
  IncludeDispatchKeyGuard capture_on_;
};

/// Registers the boxed fallback for DispatchKey::Capture once per process.
void ensure_capture_fallback();

}  // namespace kiln::capture
