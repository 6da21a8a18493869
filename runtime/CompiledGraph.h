// CompiledGraph: a captured graph as a flat list of steps: fused pointwise
// kernels called through their JIT entry points, every other node through
// the dispatcher's boxed path (below autograd: see Note [When the compiled
// graph runs]). Values are released after their last use; kernel outputs may
// reuse dead inputs or a pre-planned arena (Note [The memory plan]).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/FusionKernel.h"
#include "runtime/AttentionGradsIntoCat.h"
#include "codegen/RowKernel.h"
#include "codegen/cuda/CudaKernelSource.h"
#include "codegen/llvm/KernelJit.h"
#include "eager/core/SmallVector.h"
#include "eager/dispatch/IValue.h"
#include "eager/ops/Tensor.h"
#include "ir/Graph.h"
#include "runtime/MemoryPlan.h"

namespace kiln::runtime {

class CudaGraphReplays;

// Note [When the compiled graph runs]
// -----------------------------------
// A kernel step computes its outputs without recording autograd history. The
// graphs kiln.compile's "default" backend hands in never need it: a plain
// captured graph has no output requiring grad, and the forward and backward
// graphs of a joint capture run with grad mode off under one autograd node
// (python/kiln/compiler/_joint.py; CompileOptions::runs_without_autograd). A
// graph that writes an input in place (GraphProgram.impure_reason) replays
// through the interpreter (python/kiln/compiler/_backends.py). Outside
// kiln.compile, a node whose value is recorded as requiring grad stays an
// eager step, which goes through the whole dispatcher as ir::interpret does.

// Note [Composites compile decomposed]
// -------------------------------------
// The pipeline decomposes softmax, log_softmax, layer_norm, rms_norm and
// their backward (passes/decompose_composites.h; pointwise composites with
// kernel math of their own, silu and gelu, stay whole), and fusion puts
// each back together as one row kernel (passes/fuse_reductions.h) that can
// also take the pointwise ops around it (a residual add, a cast). Measured
// on the 2-core dev machine (bench/compile_reductions.py): the fused forms
// run at about eager's composite kernels' speed alone (they are one pass
// per reduction over rows held in L1, as eager's), and save a kernel and its
// memory traffic where a neighbour fuses. A composite the decomposition does
// not take (an empty reduced dim, a strided input) stays one eager step.
// Numerics: the row kernels add in eager's order; the decomposed formulas
// differ from eager's composite kernels by a few ulp (softmax's exp(x - max)
// order of operations, layer_norm's rsqrt as 1 / sqrt). So on the CPU,
// layer_norm, rms_norm and their input gradient stay whole where a row kernel
// computes them in eager's order, bit for bit (codegen::lowers_norm_whole:
// hosts with FMA; Note [Norms as row groups], passes/fuse_reductions.h);
// CompileOptions::norms_whole false decomposes them there too.
// Note [Outputs written into their inputs]
// ----------------------------------------
// kiln.compile copies some graph outputs back into graph inputs after a run
// (an in-place update recorded out of place: a training step's parameters and
// optimizer state; python/kiln/compiler/_replay.py). The caller names those
// pairs (CompileOptions::outputs_into_inputs); a fused kernel computing such
// an output then stores it straight into the input's buffer when that is
// unobservable: no later step reads the input or any value that may share its
// storage (passes::AliasClasses), no graph output shares it, the kernel reads
// no other alias of it, and at run time the input has the output's dtype and
// exact layout (an element is then read before it is overwritten, in the same
// vector step). run() returns the input tensor itself for that output (its
// version bumped, as the in-place op would), and the caller's copy is skipped.

/// Where a compiled graph's kernels run (Note [Compiled graphs on CUDA], CudaKernelRun.h).
enum class KernelTarget : uint8_t {
  Auto,  // CUDA when a graph input was captured on a CUDA device, else the CPU
  Cpu,   // LLVM kernels
  Cuda,  // CUDA C kernels, compiled by NVRTC at their first launch (printing needs no GPU)
};

struct CompileOptions {
  bool fuse = true;           // false: every node eager (for tests and comparisons)
  KernelTarget target = KernelTarget::Auto;
  bool keep_llvm_ir = false;  // keep the LLVM IR text (KILN_LOGS=codegen)
  // The caller runs the graph with grad mode off (the forward and backward graphs
  // of a joint capture, python/kiln/compiler/_joint.py), so values recorded as
  // requiring grad may fuse too; otherwise they stay eager steps, which record
  // autograd history (Note [When the compiled graph runs]).
  bool runs_without_autograd = false;
  // The memory plan (Note [The memory plan], MemoryPlan.h): kernel outputs take dead
  // inputs' buffers in place; false: every output allocated (for comparisons).
  bool plan_memory = true;
  // mode="reduce-overhead": kernel outputs that stay inside the graph live in one
  // arena laid out once, so a replay allocates none of them.
  bool reduce_overhead = false;
  // (graph output index, graph input index): the caller copies that output into that input after
  // the run (Note [Outputs written into their inputs]).
  std::vector<std::pair<size_t, size_t>> outputs_into_inputs;
  // Decomposes composites (softmax, layer_norm, rms_norm, gelu, ...: passes/decompose_composites.h)
  // so their pieces fuse into row kernels (Note [Composites compile decomposed]).
  bool decompose = true;
  // With `decompose`, on the CPU: norms a row kernel computes in eager's order stay whole (Note [Composites
  // compile decomposed]); false decomposes them as the CUDA target does (tests compare the two targets).
  bool norms_whole = true;
  // mode="max-autotune": each kernel's schedule chosen by timing candidates on the graph's sizes
  // (Note [Choosing a kernel's schedule], KernelAutotune.h); otherwise the default schedule.
  bool max_autotune = false;
  // Every kernel compiled and run with this schedule instead (row kernels take only its grain, column
  // kernels and multi-tensor steps none): tests prove each candidate computes what the default does.
  std::optional<codegen::KernelSchedule> schedule;
};

class CompiledGraph {
 public:
  /// Given a verified graph. Do CompiledGraph(g). Result g's fusion groups compiled
  /// (one LLVM module for all of them), the step list built; g is cloned, not kept.
  explicit CompiledGraph(const ir::Graph& g, CompileOptions options = {});
  ~CompiledGraph();

  /// Runs the graph on `inputs` (one per graph input); returns one value per graph output. The
  /// inputs' vector becomes the run's value slots: a caller that reserved num_slots() for it saves the
  /// run an allocation.
  [[nodiscard]] std::vector<IValue> run(std::vector<IValue> inputs) const;
  /// How many values a run holds (its inputs first).
  [[nodiscard]] size_t num_slots() const { return num_slots_; }
  /// True when a run is short work that never leaves the CPU kernels: every step a CPU kernel step, at
  /// most kGrainSize elements in all (one thread). Python callers keep the GIL for such a run (releasing
  /// and taking it back costs more than the run: Note [The cached-call fast path]).
  [[nodiscard]] bool runs_briefly() const { return runs_briefly_; }

  /// Fused kernel steps; a multi-tensor step (passes Note [Multi-tensor kernel steps]) counts once.
  [[nodiscard]] int64_t kernel_count() const { return static_cast<int64_t>(kernels_.size()); }
  /// How many fusion groups each kernel step runs: 1, or a multi-tensor step's member count.
  [[nodiscard]] std::vector<int64_t> kernel_members() const;
  /// Each fused kernel's kernel IR text, in step order.
  [[nodiscard]] std::vector<std::string> kernel_ir() const;
  /// Per kernel, where each of its inputs comes from: the graph input's index, or -1 (another step's value).
  [[nodiscard]] std::vector<std::vector<int64_t>> kernel_graph_inputs() const;
  /// Per kernel, the graph output index of each of its outputs, or -1 (read only by later steps).
  [[nodiscard]] std::vector<std::vector<int64_t>> kernel_graph_outputs() const;
  /// Each kernel step's schedule ("default", "lanes=16 unroll=2 grain=262144": Note [Kernel schedules]).
  [[nodiscard]] std::vector<std::string> kernel_schedules() const;
  /// The ops each kernel fused ("kiln::mul.Scalar", ...), per kernel.
  [[nodiscard]] std::vector<std::vector<std::string>> kernel_ops() const;
  [[nodiscard]] const std::string& llvm_ir() const { return llvm_ir_; }
  /// True when the kernels are CUDA kernels (Note [Compiled graphs on CUDA]).
  [[nodiscard]] bool targets_cuda() const { return cuda_; }
  /// Each fused kernel's CUDA C (a complete NVRTC program) and entry points, in step order; empty on the CPU.
  [[nodiscard]] std::vector<codegen::cuda::CudaKernelSource> cuda_sources() const;
  /// Op nodes left to eager, by name (one entry per node).
  [[nodiscard]] std::vector<std::string> eager_ops() const;
  [[nodiscard]] const MemoryPlan& memory_plan() const { return plan_; }
  /// mode="reduce-overhead" on CUDA: whether runs go through CUDA-graph replay (every step a pointwise
  /// kernel step), and the graphs captured and replays launched so far (Note [CUDA graphs of a compiled graph]).
  [[nodiscard]] bool replays_cuda_graphs() const { return cuda_graph_replays_ != nullptr; }
  [[nodiscard]] int64_t cuda_graph_captures() const;
  [[nodiscard]] int64_t cuda_graph_replays() const;
  /// How many of CompileOptions::outputs_into_inputs a kernel may store in place.
  [[nodiscard]] int64_t outputs_written_into_inputs() const { return outputs_written_into_inputs_; }

 private:
  struct KernelStep;
  struct Step {
    const ir::Node* node = nullptr;  // an eager step
    int32_t kernel = -1;             // or a kernel step
    int32_t attention_into_cat = -1;  // or, with node, attention_into_cat_[i] (Note [Attention gradients into their cat])
    std::vector<size_t> release;     // value slots dead after this step
  };
  // A pointwise step's inputs and data pointers, held without allocating for the usual few.
  using KernelInputs = SmallVector<const Tensor*, 8>;
  using KernelPointers = SmallVector<void*, 16>;
  void run_kernel(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena) const;
  /// run_kernel inside a kiln.profiler range naming the kernel, its ops and bytes moved.
  void run_kernel_profiled(int32_t index, std::vector<IValue>& slots, const Tensor* arena) const;
  /// A pointwise step's input check, outputs and data pointers (false: its inputs are not what the kernel was built for).
  bool bind_pointwise(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena,
                      KernelInputs& inputs, KernelPointers& data, int& device) const;
  /// A multi-tensor step: its members bound, then one launch over all of them (passes Note [Multi-tensor kernel steps]).
  void run_multi_tensor_step(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena) const;
  /// Binds the leading steps (all of them when each one's inputs are what its kernel was built for) and
  /// launches them through cuda_graph_replays_; returns how many steps ran (Note [CUDA graphs of a compiled graph]).
  size_t run_cuda_graph_prefix(std::vector<IValue>& slots, const Tensor* arena) const;
  /// The arena for a run on `inputs` (allocated on the first use, on the graph's device for a CUDA graph), or
  /// nullptr when this run cannot use it.
  const Tensor* arena_for(const std::vector<IValue>& inputs) const;
  /// Runs a kernel step's member nodes eagerly (its inputs are not what the kernel was built for).
  void run_members(const KernelStep& k, std::vector<IValue>& slots) const;

  std::unique_ptr<ir::Graph> graph_;
  std::vector<Step> steps_;
  std::vector<std::unique_ptr<KernelStep>> kernels_;
  std::vector<AttentionGradsIntoCat> attention_into_cat_;
  /// An attention backward step writing its gradients into their cat; its nodes run eagerly where it cannot.
  void run_attention_into_cat(const AttentionGradsIntoCat& m, std::vector<IValue>& slots) const;
  std::vector<size_t> input_slots_, output_slots_;
  // Note [An output the passes turned into an input]
  // ------------------------------------------------
  // simplify_algebra removes a view that changes nothing (x.reshape(-1) of a
  // 1-D x, x.view(x.shape)), so a graph output can become a graph input. Eager
  // returned a new tensor there (a view); returning the caller's own tensor
  // object instead would let kiln.compile's joint capture set the autograd
  // history of the output on the input itself (a leaf then loses its
  // gradient). Such outputs are returned as a fresh view of the input.
  std::vector<bool> output_aliases_;  // per output: became a graph input in the passes
  size_t num_slots_ = 0;
  std::unordered_map<const ir::Value*, size_t> slot_of_;
  std::string llvm_ir_;
  bool cuda_ = false;  // the kernels are CUDA kernels
  MemoryPlan plan_;
  mutable std::mutex arena_mu_;  // one run at a time uses the arena
  mutable Tensor arena_;         // plan_.arena_bytes, allocated by the first run that uses it
  std::unique_ptr<CudaGraphReplays> cuda_graph_replays_;  // mode="reduce-overhead" on CUDA, every step a pointwise kernel
  int64_t outputs_written_into_inputs_ = 0;
  bool runs_briefly_ = false;
  void plan_outputs_into_inputs(const std::vector<std::pair<size_t, size_t>>& pairs,
                                const std::unordered_map<size_t, size_t>& last_read);
};

}  // namespace kiln::runtime
