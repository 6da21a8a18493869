// CompiledGraph: fusion, one JIT module per graph, and the step loop.
#include "runtime/CompiledGraph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/ops/Tensor.h"
#include "ir/Clone.h"
#include "ir/Interpreter.h"
#include "passes/fuse_pointwise.h"
#include "passes/fuse_reductions.h"
#include "passes/pipeline.h"
#include "runtime/RowKernelRun.h"

namespace kiln::runtime {

struct CompiledGraph::KernelStep {
  codegen::FusionKernel fused;         // a pointwise kernel, or
  std::optional<codegen::RowKernel> row;  // a row kernel (its kernel is row->kernel)
  codegen::KernelFn fn = nullptr;
  std::vector<const ir::Node*> nodes;  // the group's members (the fallback path runs them)
  std::vector<const ir::Value*> inputs, outputs;
  std::vector<size_t> input_slots, output_slots;
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

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}
}  // namespace

CompiledGraph::CompiledGraph(const ir::Graph& source, CompileOptions options) : graph_(ir::clone(source)) {
  if (options.fuse) {
    // The graph passes first (passes/pipeline.h): composites decomposed,
    // constants folded, the algebraic rules, CSE and DCE.
    passes::PipelineOptions pipeline;
    pipeline.decompose = options.decompose;
    // A pointwise composite with kernel math of its own (silu, gelu) fuses whole, with eager's math.
    pipeline.keep_whole = [](const ir::Node& n) { return codegen::has_kernel_math(n); };
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
    return !without_autograd && n.output()->type().tensor_type().requires_grad;
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
  for (const passes::FusionGroup& group : groups) {
    std::optional<codegen::FusionKernel> fk = codegen::lower_fusion_group(group);
    if (!fk) continue;
    auto step = std::make_unique<KernelStep>();
    step->fused = std::move(*fk);
    step->nodes = group.nodes;
    step->inputs = group.inputs;
    step->outputs = group.outputs;
    for (const ir::Node* n : group.nodes) fused.insert(n);
    anchor[group.nodes.back()] = static_cast<int32_t>(kernels_.size());
    to_compile.push_back(step->fused.kernel);
    kernels_.push_back(std::move(step));
  }
  if (!to_compile.empty()) {
    codegen::CompiledKernels compiled = codegen::compile_kernels(to_compile, options.keep_llvm_ir);
    llvm_ir_ = std::move(compiled.llvm_ir);
    for (size_t i = 0; i < kernels_.size(); ++i) {
      kernels_[i]->fn = compiled.functions[i];
      (kernels_[i]->row ? kernels_[i]->row->kernel : kernels_[i]->fused.kernel).name = to_compile[i].name;
    }
  }

  // Steps, and the last step reading each slot.
  std::unordered_map<size_t, size_t> last_read;
  for (const ir::Node* n : g.nodes()) {
    if (fused.count(n) && !anchor.count(n)) continue;
    Step s;
    if (anchor.count(n)) {
      s.kernel = anchor.at(n);
      KernelStep& k = *kernels_[static_cast<size_t>(s.kernel)];
      for (const ir::Value* v : k.inputs) {
        k.input_slots.push_back(slot(v));
        last_read[slot(v)] = steps_.size();
      }
      for (const ir::Value* v : k.outputs) k.output_slots.push_back(slot(v));
    } else {
      s.node = n;
      for (const ir::Value* v : n->inputs()) last_read[slot(v)] = steps_.size();
      for (const ir::Value* v : n->outputs()) slot(v);
    }
    steps_.push_back(std::move(s));
  }
  std::unordered_set<size_t> kept;
  for (const ir::Value* v : g.outputs()) {
    output_slots_.push_back(slot(v));
    kept.insert(slot(v));
  }
  for (const auto& [s, step] : last_read) {
    if (!kept.count(s)) steps_[step].release.push_back(s);
  }
  num_slots_ = slot_of.size();
  slot_of_ = std::move(slot_of);
}

CompiledGraph::~CompiledGraph() = default;

void CompiledGraph::run_kernel(const KernelStep& k, std::vector<IValue>& slots) const {
  if (k.row) {
    std::vector<Tensor> inputs, outputs;
    for (size_t s : k.input_slots) inputs.push_back(slots[s].to_tensor());
    if (run_row_kernel(*k.row, k.fn, inputs, outputs)) {
      for (size_t o = 0; o < outputs.size(); ++o) slots[k.output_slots[o]] = IValue(std::move(outputs[o]));
      return;
    }
    run_members(k, slots);
    return;
  }
  const codegen::Kernel& kernel = k.fused.kernel;
  const std::vector<int64_t>& shape = k.fused.shape;  // iteration order
  const std::vector<int64_t>& sizes_out = k.fused.sizes;
  const std::vector<int64_t>& strides_out = k.fused.strides;
  const size_t ni = k.input_slots.size();
  std::vector<Tensor> inputs;
  inputs.reserve(ni);
  bool as_compiled = true;
  for (size_t i = 0; i < ni; ++i) {
    inputs.push_back(slots[k.input_slots[i]].to_tensor());
    const Tensor& t = inputs.back();
    if (t.dtype() != kernel.input_dtypes[i] || t.dim() > static_cast<int64_t>(shape.size())) as_compiled = false;
    if (kernel.contiguous && !(kernel.input_scalar[i] ? t.numel() == 1 : same_layout(t, sizes_out, strides_out))) {
      as_compiled = false;
    }
  }
  if (!as_compiled) {  // the inputs are not what the kernel was built for: run the members eagerly
    run_members(k, slots);
    return;
  }
  std::vector<void*> data;
  for (const Tensor& t : inputs) data.push_back(t.data_ptr());
  for (size_t o = 0; o < k.output_slots.size(); ++o) {
    Tensor out = kiln::empty_strided(IntArrayRef(sizes_out), IntArrayRef(strides_out), kernel.output_dtypes[o]);
    data.push_back(out.data_ptr());
    slots[k.output_slots[o]] = IValue(std::move(out));
  }
  const int64_t numel = numel_of(shape);
  if (numel == 0) return;
  const codegen::KernelFn fn = k.fn;
  void** d = data.data();
  if (kernel.contiguous) {
    const int64_t sizes[1] = {numel};
    std::vector<int64_t> strides(ni, 1);
    const int64_t* st = strides.data();
    parallel_for(0, numel, kGrainSize, [&](int64_t b, int64_t e) { fn(d, sizes, st, b, e); });
    return;
  }
  const size_t r = static_cast<size_t>(kernel.rank);
  std::vector<int64_t> sizes(shape.begin(), shape.end());
  if (sizes.empty()) sizes.push_back(1);
  std::vector<int64_t> strides(ni * r, 0);  // in iteration order
  const std::vector<size_t>& order = k.fused.order;
  for (size_t i = 0; i < ni && !order.empty(); ++i) {
    const Tensor& t = inputs[i];
    const size_t tr = static_cast<size_t>(t.dim());
    for (size_t it = 0; it < r; ++it) {
      const size_t dim = order[it];
      if (dim + tr < r) continue;  // a leading broadcast dimension
      const size_t td = dim + tr - r;
      strides[i * r + it] = t.sizes()[td] == 1 ? 0 : t.strides()[td];
    }
  }
  const int64_t inner = sizes.back();
  const int64_t rows = numel / inner;
  const int64_t* sz = sizes.data();
  const int64_t* st = strides.data();
  if (r == 1) {
    parallel_for(0, numel, kGrainSize, [&](int64_t b, int64_t e) { fn(d, sz, st, b, e); });
  } else {
    parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / inner), [&](int64_t b, int64_t e) { fn(d, sz, st, b, e); });
  }
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

std::vector<IValue> CompiledGraph::run(std::vector<IValue> inputs) const {
  KILN_CHECK(inputs.size() == input_slots_.size(), "compiled graph: takes ", input_slots_.size(), " inputs but got ",
             inputs.size());
  std::vector<IValue> slots(num_slots_);
  for (size_t i = 0; i < inputs.size(); ++i) slots[input_slots_[i]] = std::move(inputs[i]);
  const auto get = [&](const ir::Value* v) -> const IValue& { return slots[slot_of_.at(v)]; };
  for (const Step& s : steps_) {
    if (s.node != nullptr) {
      std::vector<IValue> out = ir::run_node(*s.node, get);
      for (size_t i = 0; i < out.size(); ++i) slots[slot_of_.at(s.node->outputs()[i])] = std::move(out[i]);
    } else {
      run_kernel(*kernels_[static_cast<size_t>(s.kernel)], slots);
    }
    for (size_t r : s.release) slots[r] = IValue();
  }
  std::vector<IValue> out;
  out.reserve(output_slots_.size());
  for (size_t s : output_slots_) out.push_back(slots[s]);
  return out;
}

std::vector<std::string> CompiledGraph::kernel_ir() const {
  std::vector<std::string> texts;
  for (const auto& k : kernels_) texts.push_back((k->row ? k->row->kernel : k->fused.kernel).str());
  return texts;
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
