// CaptureSession: the graph being recorded while a function runs eagerly, the
// map from the tensors it has seen to the graph values that stand for them,
// and the graph inputs in order. CaptureGuard makes a session current on this
// thread and turns the Capture dispatch key on (See Note [How capture records]).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eager/ops/Tensor.h"
#include "eager/dispatch/LocalDispatchKeySet.h"
#include "ir/Graph.h"
#include "ir/SymbolicSize.h"

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

// Note [Random ops under capture]
// -------------------------------
// A random op (tag `random`) that eager would run on the default CPU
// generator is recorded with an explicit generator argument instead:
// %g = capture::philox_generator(%rng_seed, %rng_offset, relative_offset),
// a fresh Philox generator at the default generator's seed and at offset
// %rng_offset + relative_offset, where relative_offset is how far the default
// generator had advanced since the graph's first random op. A run passes the
// default generator's seed and offset as %rng_seed and %rng_offset and then
// advances it by generator_advance() (the Philox offset an op reserves depends
// only on its sizes, which the guards fix), so every replay draws fresh
// numbers, the same numbers eager draws from the same generator state, and
// leaves the generator where eager leaves it. Random ops on other devices or
// with an explicit Generator argument break the capture.
//
// Note [In-place ops under capture]
// ---------------------------------
// An in-place op (tag `inplace`, `self` written) whose functional variant
// exists (add_.Tensor -> add.Tensor; fill_.Scalar, and so zero_, -> full_like,
// its arguments by position) is recorded as that variant when `self`
// shares its storage with no other recorded tensor: `self` then stands for
// the new value, and a declared input written this way gets a copy-back
// output (add_copy_back_outputs) that a run copies into the input after the
// graph, so the body stays functional. An in-place op kept in place (no
// functional variant, an aliased target, an out= argument) on a fresh
// intermediate is harmless; on an input's storage or an aliased tensor it
// makes the body impure (impure_reason): the interpreter replays it exactly,
// a backend that needs a functional body must not take it.
//
// Note [Writing an aliased input]
// -------------------------------
// In a session that asks for it (set_functionalize_aliased_inputs), a
// declared input written in place while views of it are recorded (a
// parameter whose transpose the forward used and the autograd Engine saved,
// then updated by an optimizer inside a captured training step) is still
// recorded functionally: the input's tensor stands for the new value and gets
// its copy-back, and every other recorded tensor sharing its storage becomes
// stale: it stands for the old value, which is right for every use recorded
// before the write. A stale tensor used afterwards (an op argument, an
// output) breaks the capture rather than read the old value where eager reads
// the new one; exact-alias lookups skip stale tensors.

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
  /// Given a capture that already ran ops.   Do add_late_input(t).   Result a
  /// new graph input standing for t from now on (the grad_outputs of a joint
  /// capture; See Note [Partitioning the joint graph]).
  ir::Value* add_late_input(const Tensor& t);
  /// The value standing for t, lifting t to a new graph input when unseen
  /// (a global or closure tensor, or one made outside the dispatcher). An
  /// unseen tensor that is an exact alias of a seen one (same storage, sizes,
  /// strides, offset and dtype: a detached alias, such as the autograd
  /// Engine's saved variables) stands for that tensor's value.
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

  // --- random ops: See Note [Random ops under capture] ------------------------------
  /// The value a random op passes as its generator when eager would draw from
  /// the default CPU generator, now at (`seed`, `offset`): a node
  /// capture::philox_generator(%rng_seed, %rng_offset, offset - base), where
  /// %rng_seed and %rng_offset are two int graph inputs added on first use
  /// and `base` is the offset the first random op started at. Marks the
  /// session broken when the generator was reseeded since.
  ir::Value* default_generator_at(uint64_t seed, uint64_t offset);
  /// Records where the default CPU generator stands after a random op ran.
  void note_generator_end(uint64_t offset) { rng_end_offset_ = offset; }
  /// Whether the graph takes %rng_seed and %rng_offset, the index of
  /// %rng_seed among the graph inputs (%rng_offset follows it), and how far a
  /// run advances the default generator's offset.
  [[nodiscard]] bool uses_generator() const { return rng_seed_ != nullptr; }
  [[nodiscard]] size_t generator_input_index() const { return rng_input_index_; }
  [[nodiscard]] uint64_t generator_advance() const { return rng_end_offset_ - rng_base_offset_; }

  // --- the functional form: See Note [In-place ops under capture] ---------------------
  /// Whether another recorded tensor shares t's storage (a view or alias of it).
  [[nodiscard]] bool is_aliased(const Tensor& t) const {
    auto it = storages_.find(t.storage().get());
    return it != storages_.end() && it->second > 1;
  }
  /// Whether t shares storage with a declared input.
  [[nodiscard]] bool writes_input_storage(const Tensor& t) const {
    return input_storages_.count(t.storage().get()) != 0;
  }
  /// Whether t is itself a declared input's tensor (not a view or alias of one).
  [[nodiscard]] bool is_declared_input(const Tensor& t) const { return declared_impls_.count(t.impl()) != 0; }
  /// Whether a declared input written in place while views of it are recorded is
  /// recorded functionally (Note [Writing an aliased input]; off by default: such a
  /// write stays in place and makes the body impure). kiln.compile turns it on for
  /// the capture of a whole training step.
  void set_functionalize_aliased_inputs(bool on) { functionalize_aliased_inputs_ = on; }
  [[nodiscard]] bool functionalizes_aliased_inputs() const { return functionalize_aliased_inputs_; }
  /// Given declared input t about to be written by an op recorded functionally
  /// while other recorded tensors alias its storage (views of a parameter).
  /// Do    mark_aliases_stale(t).   Result those tensors stand for t's old
  /// value: a later use of one of them breaks the capture (a view read after
  /// its base was written; See Note [Writing an aliased input]).
  void mark_aliases_stale(const Tensor& t);
  /// The first reason the graph body is not functional (an in-place op kept
  /// in place on an input or an aliased tensor), or nullopt.
  void mark_impure(std::string reason) {
    if (!impure_reason_) impure_reason_ = std::move(reason);
  }
  [[nodiscard]] const std::optional<std::string>& impure_reason() const { return impure_reason_; }
  /// Given declared inputs whose tensors now stand for other values (an
  /// in-place op recorded functionally wrote them).
  /// Do    add_copy_back_outputs().
  /// Result each such value appended to the graph outputs; returns the input
  ///        indices, in output order, that a run copies those outputs back into.
  std::vector<size_t> add_copy_back_outputs();

  // --- symbolic sizes: See Note [Symbolic sizes under capture] (SymbolicInts.h) ----
  /// Given graph input i (a declared tensor) and a name or "" per dimension.
  /// Do    set_input_symbols(i, names).   Result those dimensions of the input's
  /// type are the named symbols (its strides unknown): a run binds them.
  void set_input_symbols(size_t i, const std::vector<std::string>& names);
  /// The handle of a new int value: the size of t at dim (capture::sym_size).
  size_t symbolic_size(const Tensor& t, int64_t dim);
  /// The handle of a new int value lhs `op` rhs (capture::sym_arith; each side a
  /// handle, or a literal when its `_is_literal` flag is set).
  size_t symbolic_arith(int64_t op, int64_t lhs, bool lhs_literal, int64_t rhs, bool rhs_literal);
  /// The int value behind a handle.
  [[nodiscard]] ir::Value* symbolic_value(size_t handle) const;
  /// Notes that the op about to be called takes an int argument `value` standing
  /// for the symbolic int `handle`, at `position` of an int list (-1: a single
  /// int or Scalar). The Python argument parser calls it.
  void note_symbolic_argument(int64_t value, size_t handle, int64_t position = -1);
  /// Called for the int arguments of a node being recorded, with a cursor
  /// starting at 0 per node. position >= 0 (an element of an int list): the
  /// pending symbolic argument noted at that position with that value;
  /// position -1: the first one at or after the cursor with that value (the
  /// cursor moves to it). Consumed when found; else nullptr.
  [[nodiscard]] ir::Value* take_symbolic_argument(int64_t value, size_t& cursor, int64_t position = -1);
  [[nodiscard]] bool has_pending_symbolic() const { return !pending_symbolic_.empty(); }
  /// A copy of the graph recorded so far whose outputs are followed by the values of
  /// `handles` (kiln.compiler's probe run: Note [Symbolic capture] in _symbolic.py).
  [[nodiscard]] std::unique_ptr<ir::Graph> probe_graph(const std::vector<size_t>& handles) const;
  /// After a node was recorded: the next noted argument starts a new pending list.
  void node_recorded() { pending_closed_ = true; }

  // --- sizes the backward formulas compute: See Note [Symbolic sizes in the backward] (SymbolicInts.h) ---
  /// One size a C++ formula may pass as a literal: `value` is the symbolic int `handle` times `factor`.
  struct SizeSymbol {
    int64_t value;
    size_t handle;
    int64_t factor;
  };
  /// Given sizes whose values are each unambiguous (kiln.compiler's _symbolic_backward.py builds them).
  /// Do    set_size_symbols(table).   Result from now on an int, int-list element or integral Scalar
  ///       argument of a size-taking parameter whose value is in the table is recorded as that symbolic
  ///       int (times its factor) instead of the literal; an empty table turns this off.
  void set_size_symbols(std::vector<SizeSymbol> table);
  /// The int value standing for literal `value` under set_size_symbols, or nullptr.
  [[nodiscard]] ir::Value* size_symbol(int64_t value);
  [[nodiscard]] bool matches_size_symbols() const { return !size_symbols_.empty(); }
  /// How many literals size_symbol replaced so far.
  [[nodiscard]] size_t num_size_symbols_used() const { return num_size_symbols_used_; }
  /// Notes a literal (>= 2) a size-taking argument was recorded with (a head count in view(B, T, h, C // h)).
  void note_size_literal(int64_t value) {
    if (value >= 2) size_literals_.insert(value);
  }
  /// The literals noted so far: the factors a count in the backward may carry besides the symbols.
  [[nodiscard]] std::vector<int64_t> size_literals() const { return {size_literals_.begin(), size_literals_.end()}; }

  /// Number of op nodes recorded so far.
  [[nodiscard]] size_t num_ops() const { return num_ops_; }
  void count_op() { ++num_ops_; }

  /// Drops the tensor map (and the references it holds); input_tensors stay.
  void finish();

 private:
  ir::Value* new_input(const Tensor& t);
  [[nodiscard]] ir::Value* find_exact_alias(const Tensor& t) const;

  std::unique_ptr<ir::Graph> graph_;
  std::unordered_map<const TensorImpl*, std::pair<Tensor, ir::Value*>> values_;
  std::unordered_map<const StorageImpl*, size_t> storages_;  // storage -> how many mapped tensors use it
  std::unordered_set<const StorageImpl*> lifted_storages_;
  std::vector<Tensor> input_tensors_;
  size_t num_declared_inputs_ = 0;
  std::unordered_set<const StorageImpl*> input_storages_;
  std::unordered_set<const TensorImpl*> declared_impls_;
  std::unordered_set<const TensorImpl*> stale_;  // See Note [Writing an aliased input]
  bool functionalize_aliased_inputs_ = false;
  std::optional<std::string> break_reason_;
  std::optional<std::string> impure_reason_;
  size_t num_ops_ = 0;
  std::vector<ir::Value*> symbolic_values_;
  struct PendingSymbolic {
    int64_t value;
    size_t handle;
    int64_t position;
  };
  std::vector<PendingSymbolic> pending_symbolic_;  // in argument order
  bool pending_closed_ = false;
  std::vector<SizeSymbol> size_symbols_;
  std::unordered_map<int64_t, ir::Value*> size_symbol_values_;  // by value, made on first use
  size_t num_size_symbols_used_ = 0;
  std::set<int64_t> size_literals_;
  ir::Value* rng_seed_ = nullptr;
  ir::Value* rng_offset_ = nullptr;
  size_t rng_input_index_ = 0;
  uint64_t rng_seed_value_ = 0;
  uint64_t rng_base_offset_ = 0;
  uint64_t rng_end_offset_ = 0;
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
