// CompiledGraph: fusion, one JIT module per graph, and the step loop.
#include "runtime/CompiledGraph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "eager/core/Error.h"
#include "eager/core/ProfilerEvents.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/ops/Tensor.h"
#include "ir/Clone.h"
#include "ir/Interpreter.h"
#include "passes/effects.h"
#include "passes/fuse_pointwise.h"
#include "passes/fuse_reductions.h"
#include "passes/group_multi_tensor.h"
#include "passes/type_facts.h"
#include "passes/pipeline.h"
#include "runtime/CudaGraphReplay.h"
#include "runtime/CudaKernelRun.h"
#include "runtime/KernelAutotune.h"
#include "runtime/MultiTensorRun.h"
#include "runtime/PointwiseLaunch.h"
#include "runtime/RowKernelRun.h"

namespace kiln::runtime {

struct CompiledGraph::KernelStep {
  codegen::FusionKernel fused;         // a pointwise kernel, or
  std::optional<codegen::RowKernel> row;  // a row kernel (its kernel is row->kernel)
  codegen::KernelFn fn = nullptr;
  std::unique_ptr<CudaKernel> cuda;    // the CUDA kernel, for a CUDA graph (Note [Compiled graphs on CUDA])
  std::vector<const ir::Node*> nodes;  // the group's members (the fallback path runs them)
  std::vector<const ir::Value*> inputs, outputs;
  std::vector<size_t> input_slots, output_slots;
  std::vector<int32_t> in_place;      // per output: the input (index) whose buffer it may take, or -1
  std::vector<int64_t> arena_offset;  // per output: its arena byte offset, or -1 (Note [The memory plan])
  // Per output: the slot of the graph input it may be stored into, or -1 (Note [Outputs written into their inputs]).
  std::vector<int64_t> into_input_slot;
  // A multi-tensor step (passes Note [Multi-tensor kernel steps]): its members, each a contiguous step of this
  // step's kernel; this step's nodes, inputs, outputs and their slots are the members', end to end.
  std::vector<std::unique_ptr<KernelStep>> members;
  codegen::KernelSchedule schedule;  // its code's vector width and unroll, its launch's grain (Note [Kernel schedules])
};

namespace {
/// t has exactly the layout (sizes, and strides of dims larger than 1).
bool same_layout(const Tensor& t, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (!std::equal(t.sizes().begin(), t.sizes().end(), sizes.begin(), sizes.end())) return false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && t.strides()[d] != strides[d]) return false;
  }
  return true;
}

/// A fused kernel's profiler name, as Inductor names its CPU kernels:
/// "cpp_fused_mul_add_3" (the member ops in order, then the kernel's index).
std::string kernel_event_name(const std::vector<const ir::Node*>& nodes, int32_t index) {
  std::string name = "cpp_fused";  // (a multi-tensor step is named by its first member's nodes)
  for (const ir::Node* n : nodes) {
    std::string op = n->kind_name();  // "kiln::mul.Tensor"
    const size_t colon = op.rfind("::");
    if (colon != std::string::npos) op = op.substr(colon + 2);
    name += "_" + op.substr(0, op.find('.'));
  }
  return name + "_" + std::to_string(index);
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

/// v's recorded layout equals (sizes, strides) (strides of size-1 dims aside) and its dtype is `dtype`.
bool recorded_layout_is(const ir::Value* v, DType dtype, const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& strides) {
  if (!v->type().is_tensor() || passes::dtype_of(v) != dtype) return false;
  const auto recorded = passes::concrete_sizes(v);
  const auto& recorded_strides = v->type().tensor_type().strides;
  if (!recorded || *recorded != sizes || !recorded_strides || recorded_strides->size() != sizes.size()) return false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const ir::SymbolicSize& st = (*recorded_strides)[d];
    if (sizes[d] != 1 && (!st.is_concrete() || st.value() != strides[d])) return false;
  }
  return true;
}

/// The tensor in `slot` when its buffer may be overwritten: the slot holds the only
/// reference to its impl and storage, with this dtype and layout (Note [The memory plan]).
const Tensor* reusable(const IValue& slot, DType dtype, const std::vector<int64_t>& sizes,
                       const std::vector<int64_t>& strides) {
  if (!slot.is_tensor()) return nullptr;
  const Tensor& t = slot.to_tensor();
  if (t.use_count() != 1 || t.storage().use_count() != 1 || t.dtype() != dtype || t.requires_grad()) return nullptr;
  return same_layout(t, sizes, strides) ? &t : nullptr;
}
}  // namespace

CompiledGraph::CompiledGraph(const ir::Graph& source, CompileOptions options) : graph_(ir::clone(source)) {
  std::vector<bool> source_output_is_input;
  for (const ir::Value* v : source.outputs()) source_output_is_input.push_back(v->node()->kind() == ir::NodeKind::Param);
  cuda_ = options.target == KernelTarget::Cuda;
  if (options.target == KernelTarget::Auto) {
    for (const ir::Value* v : source.inputs()) {
      if (v->type().is_tensor() && v->type().tensor_type().device.is_cuda()) cuda_ = true;
    }
  }
  if (options.fuse) {
    // The graph passes first (passes/pipeline.h): composites decomposed,
    // constants folded, the algebraic rules, CSE and DCE.
    passes::PipelineOptions pipeline;
    pipeline.decompose = options.decompose;
    // A pointwise composite with kernel math of its own (silu, gelu) fuses whole, with eager's math; so
    // does a CPU norm a row kernel computes in eager's order (Note [Norms as row groups]).
    pipeline.keep_whole = [norms_whole = !cuda_ && options.norms_whole](const ir::Node& n) {
      return codegen::has_kernel_math(n) || (norms_whole && codegen::lowers_norm_whole(n));
    };
    passes::run_pipeline(*graph_, pipeline);
  }
  const ir::Graph& g = *graph_;
  std::unordered_map<const ir::Value*, size_t> slot_of;
  const auto slot = [&](const ir::Value* v) {
    auto [it, fresh] = slot_of.emplace(v, slot_of.size());
    return it->second;
  };
  for (const ir::Value* v : g.inputs()) input_slots_.push_back(slot(v));

  const bool without_autograd = options.runs_without_autograd;
  const auto records_history = [without_autograd](const ir::Node& n) {
    if (without_autograd) return false;
    for (const ir::Value* v : n.outputs()) {  // (a norm row group's layer_norm has three)
      if (v->type().is_tensor() && v->type().tensor_type().requires_grad) return true;
    }
    return false;
  };
  std::unordered_map<const ir::Node*, int32_t> anchor;  // last node of a group -> kernel index
  std::unordered_set<const ir::Node*> fused;
  std::vector<codegen::Kernel> to_compile;
  // Reductions with their prologue and epilogue first (passes/fuse_reductions.h), then pointwise
  // chains of what is left.
  std::vector<passes::ReductionGroup> row_groups;
  if (options.fuse) {
    row_groups = passes::fuse_reductions(g, [&](const ir::Node& n) {
      return !records_history(n) && codegen::has_kernel_math(n);  // a kernel records no autograd history
    });
  }
  for (const passes::ReductionGroup& group : row_groups) {
    // codegen/cuda prints column kernels in eager sum's order only: the norm parameter gradients stay
    // eager steps there (Note [Norm parameter gradients as column groups]).
    if (group.norm_params && cuda_) continue;
    bool history = false;
    for (const ir::Node* n : group.members.nodes) history = history || records_history(*n);
    std::optional<codegen::RowKernel> rk = history ? std::nullopt : codegen::lower_reduction_group(group);
    if (!rk) continue;
    auto step = std::make_unique<KernelStep>();
    step->row = std::move(*rk);
    step->nodes = group.members.nodes;
    step->inputs = group.members.inputs;
    step->outputs = group.members.outputs;
    for (const ir::Node* n : group.members.nodes) fused.insert(n);
    anchor[group.members.nodes.back()] = static_cast<int32_t>(kernels_.size());
    to_compile.push_back(step->row->kernel);
    kernels_.push_back(std::move(step));
  }
  std::vector<passes::FusionGroup> groups;
  const auto fusible = [&](const ir::Node& n) {
    return !fused.count(&n) && !records_history(n) && codegen::has_kernel_math(n);
  };
  if (options.fuse) groups = passes::fuse_pointwise(g, fusible);
  std::vector<std::optional<codegen::FusionKernel>> lowered;
  std::vector<std::optional<uint64_t>> multi_tensor_key;  // Note [Multi-tensor kernel steps]: contiguous CPU kernels
  for (const passes::FusionGroup& group : groups) {
    lowered.push_back(codegen::lower_fusion_group(group));
    const std::optional<codegen::FusionKernel>& fk = lowered.back();
    const bool candidate = !cuda_ && fk && fk->kernel.contiguous && fk->kernel.input_dtypes.size() <= 64;
    multi_tensor_key.push_back(candidate ? std::optional<uint64_t>(fk->kernel.hash()) : std::nullopt);
  }
  // A 1-element group's kernel reads every input as a single element (stride 0); at one element a kernel
  // reading them densely computes the same, so it takes such a kernel of the same math and joins its
  // multi-tensor step (a scalar parameter's update beside the others').
  std::map<uint64_t, size_t> dense_key;  // a multi-tensor key of groups of more than one element -> one of them
  for (size_t i = 0; i < groups.size(); ++i) {
    if (multi_tensor_key[i] && numel_of(lowered[i]->shape) != 1) dense_key.emplace(*multi_tensor_key[i], i);
  }
  for (size_t i = 0; i < groups.size() && !dense_key.empty(); ++i) {
    if (!multi_tensor_key[i] || numel_of(lowered[i]->shape) != 1 || dense_key.count(*multi_tensor_key[i])) continue;
    for (const auto& [key, j] : dense_key) {
      codegen::Kernel as_dense = lowered[i]->kernel;
      as_dense.input_scalar = lowered[j]->kernel.input_scalar;
      if (as_dense.hash() == key) {
        lowered[i]->kernel = std::move(as_dense);
        multi_tensor_key[i] = key;
        break;
      }
    }
  }
  const auto pointwise_step = [&](size_t i) {
    auto step = std::make_unique<KernelStep>();
    step->fused = std::move(*lowered[i]);
    step->nodes = groups[i].nodes;
    step->inputs = groups[i].inputs;
    step->outputs = groups[i].outputs;
    for (const ir::Node* n : groups[i].nodes) fused.insert(n);
    return step;
  };
  std::vector<bool> in_multi_tensor_step(groups.size(), false);
  for (const std::vector<size_t>& set : passes::group_multi_tensor(groups, multi_tensor_key)) {
    auto step = std::make_unique<KernelStep>();
    for (size_t i : set) {
      in_multi_tensor_step[i] = true;
      std::unique_ptr<KernelStep> member = pointwise_step(i);
      step->nodes.insert(step->nodes.end(), member->nodes.begin(), member->nodes.end());
      step->inputs.insert(step->inputs.end(), member->inputs.begin(), member->inputs.end());
      step->outputs.insert(step->outputs.end(), member->outputs.begin(), member->outputs.end());
      step->members.push_back(std::move(member));
    }
    step->fused = step->members.front()->fused;  // the members' one kernel
    anchor[groups[set.back()].nodes.back()] = static_cast<int32_t>(kernels_.size());
    to_compile.push_back(step->fused.kernel);
    kernels_.push_back(std::move(step));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    if (in_multi_tensor_step[i] || !lowered[i]) continue;
    anchor[groups[i].nodes.back()] = static_cast<int32_t>(kernels_.size());
    to_compile.push_back(lowered[i]->kernel);
    kernels_.push_back(pointwise_step(i));
  }
  if (cuda_) {
    for (size_t i = 0; i < kernels_.size(); ++i) {
      codegen::Kernel& kernel = kernels_[i]->row ? kernels_[i]->row->kernel : kernels_[i]->fused.kernel;
      char name[48];
      std::snprintf(name, sizeof name, "kiln_fused_%016llx", static_cast<unsigned long long>(kernel.hash()));
      kernel.name = name;
      kernels_[i]->cuda = std::make_unique<CudaKernel>();
      kernels_[i]->cuda->source = codegen::cuda::print_cuda_kernel(kernel);
      for (const ir::Node* n : kernels_[i]->nodes) {
        kernels_[i]->cuda->ops += (kernels_[i]->cuda->ops.empty() ? "" : ", ") + n->kind_name();
      }
    }
  } else if (!to_compile.empty()) {
    std::vector<codegen::KernelSchedule> schedules;  // empty: the default for all (Note [Kernel schedules])
    if (options.max_autotune || options.schedule) {
      for (const auto& step : kernels_) {
        // A multi-tensor step's one launch covers its members: it keeps the default schedule.
        if (!step->members.empty()) schedules.emplace_back();
        else if (options.schedule && step->row) {
          schedules.push_back({0, 1, step->row->kernel.columns ? 0 : options.schedule->grain});  // grain only
        }
        else if (options.schedule) schedules.push_back(*options.schedule);
        else if (step->row) schedules.push_back(autotune_row(*step->row));  // Note [Choosing a kernel's schedule]
        else schedules.push_back(autotune_pointwise(step->fused, step->inputs));
        step->schedule = schedules.back();
      }
    }
    codegen::CompiledKernels compiled = codegen::compile_kernels(to_compile, options.keep_llvm_ir, schedules);
    llvm_ir_ = std::move(compiled.llvm_ir);
    for (size_t i = 0; i < kernels_.size(); ++i) {
      kernels_[i]->fn = compiled.functions[i];
      (kernels_[i]->row ? kernels_[i]->row->kernel : kernels_[i]->fused.kernel).name = to_compile[i].name;
      for (auto& member : kernels_[i]->members) {
        member->fn = compiled.functions[i];
        member->fused.kernel.name = to_compile[i].name;
      }
    }
  }

  // Attention backward steps writing into their cat (Note [Attention gradients into their cat]): the nodes
  // after the backward are not steps of their own.
  std::unordered_set<const ir::Node*> into_cat;
  if (options.fuse && !cuda_) {
    for (const ir::Node* n : g.nodes()) {
      if (fused.count(n)) continue;
      auto m = match_attention_grads_into_cat(g, *n);
      if (!m) continue;
      bool free = true;  // none of its nodes taken by a kernel
      for (const ir::Node* member : m->nodes) free = free && !fused.count(member);
      if (!free) continue;
      for (size_t i = 1; i < m->nodes.size(); ++i) into_cat.insert(m->nodes[i]);
      attention_into_cat_.push_back(std::move(*m));
    }
  }

  // Steps, and what the memory plan needs of each.
  std::vector<PlanStep> plan_steps;
  size_t next_into_cat = 0;
  for (const ir::Node* n : g.nodes()) {
    if (fused.count(n) && !anchor.count(n)) continue;
    if (into_cat.count(n)) continue;
    Step s;
    PlanStep ps;
    if (next_into_cat < attention_into_cat_.size() && attention_into_cat_[next_into_cat].backward == n) {
      const AttentionGradsIntoCat& m = attention_into_cat_[next_into_cat];
      s.node = n;
      s.attention_into_cat = static_cast<int32_t>(next_into_cat++);
      // Reads: every value its nodes read from outside them; writes: the cat's value.
      std::unordered_set<const ir::Value*> inside;
      for (const ir::Node* member : m.nodes) inside.insert(member->outputs().begin(), member->outputs().end());
      for (const ir::Node* member : m.nodes) {
        for (const ir::Value* v : member->inputs()) {
          if (!inside.count(v)) ps.reads.push_back(slot(v));
        }
      }
      ps.writes.push_back(slot(m.cat->output()));
    } else if (anchor.count(n)) {
      s.kernel = anchor.at(n);
      KernelStep& k = *kernels_[static_cast<size_t>(s.kernel)];
      for (const ir::Value* v : k.inputs) k.input_slots.push_back(slot(v));
      for (const ir::Value* v : k.outputs) k.output_slots.push_back(slot(v));
      // A row kernel's outputs are its own (run_row_kernel allocates them): the plan sees an eager step.
      ps.kernel = !k.row;
      ps.reads = k.input_slots;
      ps.writes = k.output_slots;
      if (!k.members.empty()) {
        // A multi-tensor step's reads and writes are its members' end to end. An output may take a read's
        // buffer only when the read is its own member's and no other member reads it: members do not run
        // element by element together (Note [Multi-tensor kernel steps]).
        std::unordered_map<const ir::Value*, size_t> readers;  // value -> how many members read it
        for (const auto& member : k.members) {
          for (const ir::Value* v : std::unordered_set<const ir::Value*>(member->inputs.begin(), member->inputs.end())) {
            ++readers[v];
          }
        }
        size_t read_offset = 0;
        for (auto& member : k.members) {
          for (const ir::Value* v : member->inputs) member->input_slots.push_back(slot(v));
          for (const ir::Value* v : member->outputs) member->output_slots.push_back(slot(v));
          for (size_t o = 0; o < member->outputs.size(); ++o) {
            const DType d = member->fused.kernel.output_dtypes[o];
            ps.write_bytes.push_back(numel_of(member->fused.sizes) * static_cast<int64_t>(itemsize(d)));
            ps.same_layout_reads.emplace_back();
            for (size_t i = 0; i < member->inputs.size(); ++i) {
              const ir::Value* in = member->inputs[i];
              if (readers.at(in) == 1 && recorded_layout_is(in, d, member->fused.sizes, member->fused.strides)) {
                ps.same_layout_reads.back().push_back(read_offset + i);
              }
            }
          }
          read_offset += member->inputs.size();
        }
      }
      for (size_t o = 0; o < k.outputs.size() && !k.row && k.members.empty(); ++o) {
        const DType d = k.fused.kernel.output_dtypes[o];
        ps.write_bytes.push_back(numel_of(k.fused.sizes) * static_cast<int64_t>(itemsize(d)));
        ps.same_layout_reads.emplace_back();
        for (size_t i = 0; i < k.inputs.size(); ++i) {
          if (recorded_layout_is(k.inputs[i], d, k.fused.sizes, k.fused.strides)) ps.same_layout_reads.back().push_back(i);
        }
      }
    } else {
      s.node = n;
      for (const ir::Value* v : n->inputs()) ps.reads.push_back(slot(v));
      for (const ir::Value* v : n->outputs()) ps.writes.push_back(slot(v));
    }
    steps_.push_back(std::move(s));
    plan_steps.push_back(std::move(ps));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Value* v = g.outputs()[i];
    output_slots_.push_back(slot(v));
    // See Note [An output the passes turned into an input].
    output_aliases_.push_back(v->node()->kind() == ir::NodeKind::Param && i < source_output_is_input.size() &&
                              !source_output_is_input[i]);
  }
  num_slots_ = slot_of.size();

  MemoryPlanInput plan_in;
  plan_in.steps = std::move(plan_steps);
  plan_in.num_slots = num_slots_;
  plan_in.graph_inputs = input_slots_;
  plan_in.graph_outputs = output_slots_;
  plan_in.arena = options.reduce_overhead;  // on the CPU, or on the inputs' CUDA device (arena_for)
  plan_in.storage_class.resize(num_slots_);
  passes::AliasClasses aliases(g);
  std::unordered_map<size_t, size_t> class_id;  // AliasClasses' class -> 0, 1, ...
  for (const auto& [v, sl] : slot_of) {
    const auto [it, fresh] = class_id.emplace(aliases.class_of(v), class_id.size());
    plan_in.storage_class[sl] = it->second;
    if (fresh) {
      plan_in.class_written.push_back(false);
      plan_in.class_has_input.push_back(false);
      plan_in.class_has_output.push_back(false);
    }
    const size_t c = it->second;
    plan_in.class_written[c] = plan_in.class_written[c] || aliases.is_written(v);
    plan_in.class_has_input[c] = plan_in.class_has_input[c] || aliases.holds_input(v);
    plan_in.class_has_output[c] = plan_in.class_has_output[c] || aliases.holds_output(v);
  }
  plan_ = plan_memory(plan_in);
  for (size_t i = 0; i < steps_.size(); ++i) {
    steps_[i].release = plan_.release[i];
    if (steps_[i].kernel < 0) continue;
    KernelStep& k = *kernels_[static_cast<size_t>(steps_[i].kernel)];
    k.in_place = options.plan_memory ? plan_.in_place[i] : std::vector<int32_t>(k.output_slots.size(), -1);
    k.arena_offset = plan_.arena_offset[i];
    // A multi-tensor step's plan, per member: its outputs' arena offsets, and the reads they take in place
    // (always the member's own: plan_multi_tensor_step), as indices into the member's inputs.
    size_t read_offset = 0, write_offset = 0;
    for (auto& member : k.members) {
      for (size_t o = 0; o < member->outputs.size(); ++o) {
        const int32_t read = k.in_place[write_offset + o];
        member->in_place.push_back(read >= 0 ? read - static_cast<int32_t>(read_offset) : -1);
        member->arena_offset.push_back(k.arena_offset[write_offset + o]);
      }
      read_offset += member->inputs.size();
      write_offset += member->outputs.size();
    }
  }
  slot_of_ = std::move(slot_of);
  int64_t elements = 0;
  runs_briefly_ = !cuda_;
  for (const Step& s : steps_) {
    if (s.kernel < 0) {
      runs_briefly_ = false;
      break;
    }
    const KernelStep& k = *kernels_[static_cast<size_t>(s.kernel)];
    if (k.row) {
      elements += k.row->rows * k.row->cols;
    } else if (k.members.empty()) {
      elements += numel_of(k.fused.shape);
    } else {
      for (const auto& member : k.members) elements += numel_of(member->fused.shape);
    }
  }
  runs_briefly_ = runs_briefly_ && elements <= kGrainSize;
  // Note [CUDA graphs of a compiled graph]: every step a pointwise kernel step (a row kernel allocates its outputs)
  // or a view (it touches no data: its result is where its input is).
  if (cuda_ && options.reduce_overhead && plan_.arena_bytes > 0) {
    bool replayable = true;
    for (const Step& st : steps_) {
      bool view = false;
      if (st.node != nullptr) {
        view = st.node->inputs().size() > 0 && st.node->outputs().size() > 0 && !passes::has_side_effects(*st.node);
        for (const ir::Value* v : st.node->outputs()) {
          view = view && v->type().is_tensor() && aliases.class_of(v) == aliases.class_of(st.node->inputs()[0]);
        }
      }
      const KernelStep* k = st.kernel >= 0 ? kernels_[static_cast<size_t>(st.kernel)].get() : nullptr;
      replayable = replayable && (view || (k != nullptr && k->cuda != nullptr && !k->row && k->members.empty()));
    }
    if (replayable) cuda_graph_replays_ = std::make_unique<CudaGraphReplays>();
  }
  if (!options.outputs_into_inputs.empty()) {
    std::unordered_map<size_t, size_t> last_read;  // slot -> the last step reading it
    for (size_t i = 0; i < plan_in.steps.size(); ++i) {
      for (size_t r : plan_in.steps[i].reads) last_read[r] = i;
    }
    plan_outputs_into_inputs(options.outputs_into_inputs, last_read);
  }
}

void CompiledGraph::plan_outputs_into_inputs(const std::vector<std::pair<size_t, size_t>>& pairs,
                                             const std::unordered_map<size_t, size_t>& last_read) {
  const ir::Graph& g = *graph_;
  passes::AliasClasses aliases(g);
  std::vector<const ir::Value*> values(g.inputs().begin(), g.inputs().end());
  for (const ir::Node* n : g.nodes()) values.insert(values.end(), n->outputs().begin(), n->outputs().end());
  std::unordered_map<const ir::Value*, size_t> times_output;
  for (const ir::Value* v : g.outputs()) ++times_output[v];
  for (const auto& [o, i] : pairs) {
    if (o >= g.outputs().size() || i >= g.inputs().size()) continue;
    const ir::Value* out = g.outputs()[o];
    const ir::Value* in = g.inputs()[i];
    if (times_output[out] != 1 || aliases.holds_output(in)) continue;
    for (size_t si = 0; si < steps_.size(); ++si) {
      if (steps_[si].kernel < 0) continue;
      KernelStep& step = *kernels_[static_cast<size_t>(steps_[si].kernel)];
      if (step.row) continue;  // row kernels store into their own outputs
      if (std::find(step.outputs.begin(), step.outputs.end(), out) == step.outputs.end()) continue;
      // The (member) kernel computing `out`; in a multi-tensor step no other member may read `in` or an
      // alias of it, as the members do not run element by element together (Note [Multi-tensor kernel steps]).
      KernelStep* writer = &step;
      for (auto& member : step.members) {
        if (std::find(member->outputs.begin(), member->outputs.end(), out) != member->outputs.end()) writer = member.get();
      }
      KernelStep& k = *writer;
      const auto at = std::find(k.outputs.begin(), k.outputs.end(), out);
      bool safe = true;
      for (const ir::Value* v : values) {
        if (!aliases.may_alias(v, in)) continue;
        auto read = slot_of_.find(v) == slot_of_.end() ? last_read.end() : last_read.find(slot_of_.at(v));
        if (read != last_read.end() && read->second > si) safe = false;  // read after the kernel
        if (v != in && std::find(k.inputs.begin(), k.inputs.end(), v) != k.inputs.end()) safe = false;
        for (const auto& member : step.members) {
          if (member.get() != writer && std::find(member->inputs.begin(), member->inputs.end(), v) != member->inputs.end()) {
            safe = false;
          }
        }
      }
      if (safe) {
        k.into_input_slot.resize(k.outputs.size(), -1);
        k.into_input_slot[static_cast<size_t>(at - k.outputs.begin())] = static_cast<int64_t>(slot_of_.at(in));
        ++outputs_written_into_inputs_;
      }
      break;
    }
  }
}

CompiledGraph::~CompiledGraph() = default;

void CompiledGraph::run_kernel(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena) const {
  if (k.row) {  // a row kernel allocates its own outputs (the memory plan leaves them: see the constructor)
    std::vector<Tensor> inputs, outputs;
    for (size_t s : k.input_slots) inputs.push_back(slots[s].to_tensor());
    if (k.cuda ? run_cuda_row_kernel(*k.cuda, *k.row, inputs, outputs)
               : (std::all_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.device().is_cpu(); }) &&
                  run_row_kernel(*k.row, k.fn, inputs, outputs, k.schedule.grain))) {
      for (size_t o = 0; o < outputs.size(); ++o) slots[k.output_slots[o]] = IValue(std::move(outputs[o]));
      return;
    }
    run_members(k, slots);
    return;
  }
  if (!k.members.empty()) {  // Note [Multi-tensor kernel steps]
    run_multi_tensor_step(k, slots, arena);
    return;
  }
  const codegen::Kernel& kernel = k.fused.kernel;
  const std::vector<int64_t>& shape = k.fused.shape;  // iteration order
  KernelInputs inputs;  // in their slots: a copy would hide that an input is held once
  KernelPointers data;
  int device = -1;
  if (!bind_pointwise(k, slots, arena, inputs, data, device)) {  // not what the kernel was built for
    run_members(k, slots);
    return;
  }
  if (numel_of(shape) == 0) return;
  const IterationStrides at = iteration_strides(k.fused, inputs);  // a strided kernel's sizes and strides
  if (k.cuda) {
    launch_cuda_pointwise(*k.cuda, kernel, device, data, numel_of(shape), at.sizes, at.strides);
    return;
  }
  launch_cpu_pointwise(k.fn, k.fused, data.data(), at, k.schedule.grain);
}

/// Checks a pointwise step's inputs against its kernel, places its outputs in their slots (into an input,
/// the arena, a dead input's buffer or a new tensor) and gathers the kernel's data pointers; false (nothing
/// placed) when the inputs are not what the kernel was built for.
bool CompiledGraph::bind_pointwise(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena,
                                   KernelInputs& inputs, KernelPointers& data, int& device) const {
  const codegen::Kernel& kernel = k.fused.kernel;
  const std::vector<int64_t>& shape = k.fused.shape;  // iteration order
  const std::vector<int64_t>& sizes_out = k.fused.sizes;
  const std::vector<int64_t>& strides_out = k.fused.strides;
  const size_t ni = k.input_slots.size();
  inputs.reserve(ni);
  bool as_compiled = true;
  for (size_t i = 0; i < ni; ++i) {
    inputs.push_back(&slots[k.input_slots[i]].to_tensor());
    const Tensor& t = *inputs.back();
    if (t.dtype() != kernel.input_dtypes[i] || t.dim() > static_cast<int64_t>(shape.size())) as_compiled = false;
    if (kernel.contiguous && !(kernel.input_scalar[i] ? t.numel() == 1 : same_layout(t, sizes_out, strides_out))) {
      as_compiled = false;
    }
  }
  // The inputs must be where the kernel runs: CPU tensors for an LLVM kernel, tensors of one CUDA device
  // for a CUDA kernel (a CPU 0-dim tensor included: the members' eager ops take it as a scalar).
  if (k.cuda) {
    device = common_cuda_device(inputs);
    as_compiled = as_compiled && device >= 0;
  } else {
    for (const Tensor* t : inputs) as_compiled = as_compiled && t->device().is_cpu();
  }
  if (!as_compiled) return false;
  for (const Tensor* t : inputs) data.push_back(t->data_ptr());
  for (size_t o = 0; o < k.output_slots.size(); ++o) {
    if (o < k.into_input_slot.size() && k.into_input_slot[o] >= 0) {  // Note [Outputs written into their inputs]
      const IValue& target = slots[static_cast<size_t>(k.into_input_slot[o])];
      if (target.is_tensor()) {
        const Tensor& t = target.to_tensor();
        if (t.dtype() == kernel.output_dtypes[o] && same_layout(t, sizes_out, strides_out)) {
          data.push_back(t.data_ptr());
          t.impl()->bump_version();
          slots[k.output_slots[o]] = target;
          continue;
        }
      }
    }
    const DType d = kernel.output_dtypes[o];
    Tensor out;
    if (arena != nullptr && k.arena_offset[o] >= 0 && (!k.cuda || arena->device().index() == device)) {
      out = Tensor(make_intrusive<TensorImpl>(arena->storage(), d, IntArrayRef(sizes_out), IntArrayRef(strides_out),
                                              k.arena_offset[o] / static_cast<int64_t>(itemsize(d))));
    } else if (const Tensor* dead = k.in_place[o] >= 0
                                        ? reusable(slots[k.input_slots[static_cast<size_t>(k.in_place[o])]], d, sizes_out, strides_out)
                                        : nullptr) {
      out = *dead;
    } else if (k.cuda) {
      out = kiln::empty_strided(IntArrayRef(sizes_out), IntArrayRef(strides_out), d,
                                Device(DeviceType::CUDA, static_cast<int8_t>(device)));
    } else {
      out = kiln::empty_strided(IntArrayRef(sizes_out), IntArrayRef(strides_out), d);
    }
    data.push_back(out.data_ptr());
    slots[k.output_slots[o]] = IValue(std::move(out));
  }
  return true;
}

void CompiledGraph::run_multi_tensor_step(const KernelStep& k, std::vector<IValue>& slots, const Tensor* arena) const {
  std::vector<KernelPointers> data(k.members.size());  // sized once: each member's pointers stay put
  std::vector<MultiTensorMember> launch;
  launch.reserve(k.members.size());
  for (size_t m = 0; m < k.members.size(); ++m) {
    const KernelStep& member = *k.members[m];
    KernelInputs inputs;
    int device = -1;
    if (!bind_pointwise(member, slots, arena, inputs, data[m], device)) {
      run_members(member, slots);  // this member's inputs are not what the kernel was built for
      continue;
    }
    launch.push_back({data[m].data(), numel_of(member.fused.shape)});
  }
  run_multi_tensor(k.fn, launch);
}

void CompiledGraph::run_members(const KernelStep& k, std::vector<IValue>& slots) const {
  std::unordered_map<const ir::Value*, IValue> local;
  for (size_t i = 0; i < k.input_slots.size(); ++i) local[k.inputs[i]] = slots[k.input_slots[i]];
  for (const ir::Node* n : k.nodes) {
    std::vector<IValue> out = ir::run_node(*n, [&](const ir::Value* v) -> const IValue& { return local.at(v); });
    local[n->output()] = std::move(out[0]);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) slots[k.output_slots[o]] = local.at(k.outputs[o]);
}

void CompiledGraph::run_attention_into_cat(const AttentionGradsIntoCat& m, std::vector<IValue>& slots) const {
  const auto get = [&](const ir::Value* v) -> const IValue& { return slots[slot_of_.at(v)]; };
  if (std::optional<Tensor> stacked = run_attention_grads_into_cat(m, get)) {
    slots[slot_of_.at(m.cat->output())] = std::move(*stacked);
    return;
  }
  // The inputs do not fit: the captured nodes, eagerly.
  std::unordered_map<const ir::Value*, IValue> local;
  const auto read = [&](const ir::Value* v) -> const IValue& {
    const auto it = local.find(v);
    return it != local.end() ? it->second : slots[slot_of_.at(v)];
  };
  for (const ir::Node* n : m.nodes) {
    std::vector<IValue> out = ir::run_node(*n, read);
    for (size_t i = 0; i < out.size(); ++i) local[n->outputs()[i]] = std::move(out[i]);
  }
  slots[slot_of_.at(m.cat->output())] = local.at(m.cat->output());
}

std::vector<IValue> CompiledGraph::run(std::vector<IValue> inputs) const {
  KILN_CHECK(inputs.size() == input_slots_.size(), "compiled graph: takes ", input_slots_.size(), " inputs but got ",
             inputs.size());
  // The inputs are slots 0..n-1 (the constructor numbers them first): their vector becomes the slots.
  std::vector<IValue> slots = std::move(inputs);
  slots.resize(num_slots_);
  std::unique_lock<std::mutex> arena_lock(arena_mu_, std::defer_lock);
  const Tensor* arena = nullptr;
  if (plan_.arena_bytes > 0 && arena_lock.try_lock()) arena = arena_for(slots);  // else a concurrent run allocates
  const auto get = [&](const ir::Value* v) -> const IValue& { return slots[slot_of_.at(v)]; };
  profiler::RecordScope graph_range("kiln::CompiledGraph", "compiled_graph");
  if (graph_range.recording()) [[unlikely]] graph_range.add_arg("fused kernels", kernel_count());
  size_t first = 0;  // steps run through CUDA-graph replay
  if (cuda_graph_replays_ && arena != nullptr && !profiler::is_active()) first = run_cuda_graph_prefix(slots, arena);
  for (size_t i = first; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (s.attention_into_cat >= 0) [[unlikely]] {
      run_attention_into_cat(attention_into_cat_[static_cast<size_t>(s.attention_into_cat)], slots);
    } else if (s.node != nullptr) {
      std::vector<IValue> out = ir::run_node(*s.node, get);
      for (size_t i = 0; i < out.size(); ++i) slots[slot_of_.at(s.node->outputs()[i])] = std::move(out[i]);
    } else if (!profiler::is_active()) [[likely]] {
      run_kernel(*kernels_[static_cast<size_t>(s.kernel)], slots, arena);
    } else {
      run_kernel_profiled(s.kernel, slots, arena);
    }
    for (size_t r : s.release) slots[r] = IValue();
  }
  std::vector<IValue> out;
  out.reserve(output_slots_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const IValue& v = slots[output_slots_[i]];
    if (output_aliases_[i] && v.is_tensor()) {
      const Tensor t = v.to_tensor();
      out.emplace_back(t.view(t.sizes()));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

const Tensor* CompiledGraph::arena_for(const std::vector<IValue>& slots) const {
  if (!cuda_) {
    if (!arena_.defined()) arena_ = kiln::empty(IntArrayRef(std::vector<int64_t>{plan_.arena_bytes}), DType::UInt8);
    return &arena_;
  }
  // A CUDA graph: the arena lives on its inputs' device (one caching-allocator block); CPU inputs (the kernel
  // steps then run their ops eagerly) or inputs on another device than the arena's run without it.
  std::vector<const Tensor*> inputs;
  for (size_t s : input_slots_) {
    if (slots[s].is_tensor()) inputs.push_back(&slots[s].to_tensor());
  }
  if (inputs.empty() || !inputs.front()->device().is_cuda()) return nullptr;
  const int device = common_cuda_device(inputs);
  if (device < 0) return nullptr;
  const Device where(DeviceType::CUDA, static_cast<int8_t>(device));
  if (!arena_.defined()) {
    arena_ = kiln::empty(IntArrayRef(std::vector<int64_t>{plan_.arena_bytes}), DType::UInt8, where);
  }
  return arena_.device() == where ? &arena_ : nullptr;
}

size_t CompiledGraph::run_cuda_graph_prefix(std::vector<IValue>& slots, const Tensor* arena) const {
  std::vector<CudaLaunch> launches;
  launches.reserve(steps_.size());
  size_t bound = 0;
  for (; bound < steps_.size(); ++bound) {
    if (const ir::Node* view = steps_[bound].node) {  // a view: no data touched, nothing to launch
      std::vector<IValue> out =
          ir::run_node(*view, [&](const ir::Value* v) -> const IValue& { return slots[slot_of_.at(v)]; });
      for (size_t i = 0; i < out.size(); ++i) slots[slot_of_.at(view->outputs()[i])] = std::move(out[i]);
      continue;
    }
    const KernelStep& k = *kernels_[static_cast<size_t>(steps_[bound].kernel)];
    KernelInputs inputs;
    KernelPointers data;
    CudaLaunch l;
    if (!bind_pointwise(k, slots, arena, inputs, data, l.device)) break;
    l.data.assign(data.begin(), data.end());  // kept by the replay cache beyond this run
    l.cuda = k.cuda.get();
    l.kernel = &k.fused.kernel;
    l.numel = numel_of(k.fused.shape);
    if (l.numel == 0) continue;
    IterationStrides at = iteration_strides(k.fused, inputs);
    l.sizes = std::move(at.sizes);
    l.strides = std::move(at.strides);
    launches.push_back(std::move(l));
  }
  if (bound == steps_.size()) {
    cuda_graph_replays_->run(launches);
  } else {
    CudaGraphReplays::launch_plainly(launches);  // the rest runs step by step
  }
  for (size_t i = 0; i < bound; ++i) {
    for (size_t r : steps_[i].release) slots[r] = IValue();
  }
  return bound;
}

int64_t CompiledGraph::cuda_graph_captures() const { return cuda_graph_replays_ ? cuda_graph_replays_->captures() : 0; }
int64_t CompiledGraph::cuda_graph_replays() const { return cuda_graph_replays_ ? cuda_graph_replays_->replays() : 0; }

void CompiledGraph::run_kernel_profiled(int32_t index, std::vector<IValue>& slots, const Tensor* arena) const {
  const KernelStep& k = *kernels_[static_cast<size_t>(index)];
  profiler::RecordScope range(kernel_event_name(k.members.empty() ? k.nodes : k.members.front()->nodes, index),
                              "fused_kernel");
  run_kernel(k, slots, arena);
  // What kiln.compiler.kernel_summary and the trace show (Note [What the profiler records]).
  int64_t bytes = 0;
  for (size_t slot : k.input_slots) bytes += slots[slot].is_tensor() ? slots[slot].to_tensor().nbytes() : 0;
  for (size_t slot : k.output_slots) bytes += slots[slot].is_tensor() ? slots[slot].to_tensor().nbytes() : 0;
  std::string ops;
  for (const ir::Node* n : k.nodes) ops += (ops.empty() ? "" : ", ") + n->kind_name();
  range.add_arg("ops", std::move(ops));
  range.add_arg("kernel", (k.row ? k.row->kernel : k.fused.kernel).name);
  range.add_arg("bytes moved", bytes);
  int64_t numel = k.row ? k.row->rows * k.row->cols : numel_of(k.fused.shape);
  if (!k.members.empty()) {
    numel = 0;
    for (const auto& member : k.members) numel += numel_of(member->fused.shape);
    range.add_arg("members", static_cast<int64_t>(k.members.size()));
  }
  range.add_arg("numel", numel);
}

std::vector<int64_t> CompiledGraph::kernel_members() const {
  std::vector<int64_t> members;
  for (const auto& k : kernels_) members.push_back(k->members.empty() ? 1 : static_cast<int64_t>(k->members.size()));
  return members;
}

std::vector<std::string> CompiledGraph::kernel_schedules() const {
  std::vector<std::string> out;
  for (const auto& k : kernels_) out.push_back(k->schedule.str());
  return out;
}

std::vector<std::string> CompiledGraph::kernel_ir() const {
  std::vector<std::string> texts;
  for (const auto& k : kernels_) texts.push_back((k->row ? k->row->kernel : k->fused.kernel).str());
  return texts;
}

std::vector<codegen::cuda::CudaKernelSource> CompiledGraph::cuda_sources() const {
  std::vector<codegen::cuda::CudaKernelSource> sources;
  for (const auto& k : kernels_) {
    if (k->cuda) sources.push_back(k->cuda->source);
  }
  return sources;
}

std::vector<std::vector<int64_t>> CompiledGraph::kernel_graph_inputs() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& k : kernels_) {
    out.emplace_back();
    for (size_t slot : k->input_slots) {
      const auto it = std::find(input_slots_.begin(), input_slots_.end(), slot);
      out.back().push_back(it == input_slots_.end() ? -1 : static_cast<int64_t>(it - input_slots_.begin()));
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> CompiledGraph::kernel_graph_outputs() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& k : kernels_) {
    out.emplace_back();
    for (size_t slot : k->output_slots) {
      const auto it = std::find(output_slots_.begin(), output_slots_.end(), slot);
      out.back().push_back(it == output_slots_.end() ? -1 : static_cast<int64_t>(it - output_slots_.begin()));
    }
  }
  return out;
}

std::vector<std::vector<std::string>> CompiledGraph::kernel_ops() const {
  std::vector<std::vector<std::string>> ops;
  for (const auto& k : kernels_) {
    ops.emplace_back();
    for (const ir::Node* n : k->nodes) ops.back().push_back(n->kind_name());
  }
  return ops;
}

std::vector<std::string> CompiledGraph::eager_ops() const {
  std::vector<std::string> names;
  for (const Step& s : steps_) {
    if (s.node != nullptr && s.node->kind() == ir::NodeKind::Op) names.push_back(s.node->kind_name());
  }
  return names;
}

}  // namespace kiln::runtime
