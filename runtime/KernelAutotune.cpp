// Choosing a kernel's schedule by timing (KernelAutotune.h).
#include "runtime/KernelAutotune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "codegen/llvm/KernelJit.h"
#include "codegen/llvm/VectorMath.h"
#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "passes/type_facts.h"
#include "runtime/PointwiseLaunch.h"
#include "runtime/RowKernelRun.h"

namespace kiln::runtime {

namespace {

/// The choice cache (Note [Choosing a kernel's schedule]).
struct Choices {
  std::mutex mu;
  std::map<std::string, codegen::KernelSchedule> chosen;
  int64_t timed = 0;
  int64_t from_disk = 0;
};

Choices& choices() {
  static Choices* c = new Choices();  // never destroyed, as the JIT
  return *c;
}

void append(std::string& key, const std::vector<int64_t>& v) {
  key += '[';
  for (int64_t x : v) key += std::to_string(x) + ',';
  key += ']';
}

/// A tensor's whole storage filled with values that take every kernel's ordinary path: floats in
/// [-2, 2), float16/bfloat16 1.0, integers 1..5 (no division by zero), bools true.
void fill_for_timing(const Tensor& t) {
  char* p = static_cast<char*>(t.data_ptr());
  const size_t bytes = t.storage()->nbytes();
  const size_t n = bytes / itemsize(t.dtype());
  const auto value = [](size_t i) { return static_cast<double>((i * 2654435761u) % 4096) / 1024.0 - 2.0; };
  switch (t.dtype()) {
    case DType::Float32:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<float*>(p)[i] = static_cast<float>(value(i));
      break;
    case DType::Float64:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<double*>(p)[i] = value(i);
      break;
    case DType::Float16:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(p)[i] = 0x3c00;
      break;
    case DType::BFloat16:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(p)[i] = 0x3f80;
      break;
    case DType::Bool: std::memset(p, 1, bytes); break;
    case DType::Int8:
    case DType::UInt8:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(1 + i % 5);
      break;
    case DType::Int16:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(1 + i % 5);
      break;
    case DType::Int32:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(1 + i % 5);
      break;
    case DType::Int64:
      for (size_t i = 0; i < n; ++i) reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(1 + i % 5);
      break;
    default: std::memset(p, 0, bytes); break;
  }
}

/// Seconds of one run of `launch`: the minimum over 3 runs of `reps` launches after one warm-up; a launch
/// that takes over 20 ms is its own warm-up (the first run counts) and runs twice (compile time stays seconds).
double time_runs(const std::function<void()>& launch, int64_t reps) {
  const auto first = std::chrono::steady_clock::now();
  launch();
  const std::chrono::duration<double> warm_up = std::chrono::steady_clock::now() - first;
  const bool long_launch = warm_up.count() > 0.02;
  double best = long_launch ? warm_up.count() : std::numeric_limits<double>::infinity();
  for (int run = 0; run < (long_launch ? 1 : 3); ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r) launch();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / static_cast<double>(reps));
  }
  return best;
}

/// Launches per timed run: about a millisecond of work, guessed at ~1 ns an element.
int64_t reps_for(int64_t elements) { return std::clamp<int64_t>(1000000 / std::max<int64_t>(elements, 1), 1, 200); }

/// The candidate with the least time; the default (index 0) unless another is at least 3% faster.
size_t fastest(const std::vector<double>& seconds) {
  size_t best = 0;
  for (size_t i = 1; i < seconds.size(); ++i) {
    if (seconds[i] < seconds[best]) best = i;
  }
  return best != 0 && seconds[best] < 0.97 * seconds[0] ? best : 0;
}

/// A schedule as a disk choice's text: "lanes unroll grain".
std::string choice_text(const codegen::KernelSchedule& s) {
  return std::to_string(s.vector_lanes) + " " + std::to_string(s.unroll) + " " + std::to_string(s.grain);
}

/// The schedule of a disk choice's text, or nullopt when it is not one max-autotune could have chosen.
std::optional<codegen::KernelSchedule> parse_choice(const std::string& text) {
  codegen::KernelSchedule s;
  long long grain = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%d %d %lld%c", &s.vector_lanes, &s.unroll, &grain, &rest) != 3) return std::nullopt;
  s.grain = grain;
  const int host = codegen::host_vector_lanes();
  if ((s.vector_lanes != 0 && s.vector_lanes != 2 * host) || (s.unroll != 1 && s.unroll != 2 && s.unroll != 4) ||
      s.grain < 0) {
    return std::nullopt;
  }
  return s;
}

/// The chosen schedule under `key`: remembered in this process, else stored on disk by an earlier one
/// (Note [Autotune choices on disk], codegen/llvm/KernelCache.h), else `choose()`'s, remembered and stored.
codegen::KernelSchedule remembered(const std::string& key, const std::function<codegen::KernelSchedule()>& choose) {
  Choices& c = choices();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.chosen.find(key);
    if (it != c.chosen.end()) return it->second;
  }
  if (const std::optional<std::string> stored = codegen::load_autotune_choice(key)) {
    if (const std::optional<codegen::KernelSchedule> s = parse_choice(*stored)) {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.from_disk;
      return c.chosen.emplace(key, *s).first->second;
    }
  }
  const codegen::KernelSchedule s = choose();  // unlocked: timing takes a while, and compiles lock the JIT
  codegen::store_autotune_choice(key, choice_text(s));
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.timed;
  return c.chosen.emplace(key, s).first->second;
}

}  // namespace

std::vector<codegen::KernelSchedule> pointwise_code_candidates(const codegen::Kernel* k) {
  std::vector<codegen::KernelSchedule> out;
  const int host = codegen::host_vector_lanes();
  bool vector_loads = k == nullptr || k->contiguous;
  for (size_t i = 0; k != nullptr && i < k->inner_stride_hint.size(); ++i) {
    vector_loads = vector_loads || k->inner_stride_hint[i] >= 0;
  }
  for (int lanes : {0, 2 * host}) {
    for (int unroll : {1, 2, 4}) {
      if (unroll > 1 && !vector_loads) continue;
      codegen::KernelSchedule s;
      s.vector_lanes = lanes;
      s.unroll = unroll;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<int64_t> grain_candidates(int64_t elements) {
  std::vector<int64_t> out = {0};
  if (elements > kGrainSize) out.push_back(8 * kGrainSize);  // fewer, longer chunks
  if (elements > 8 * kGrainSize) out.push_back(elements);    // one chunk: no thread hand-off
  return out;
}

codegen::KernelSchedule autotune_pointwise(const codegen::FusionKernel& fk,
                                           const std::vector<const ir::Value*>& inputs) {
  int64_t numel = 1;
  for (int64_t x : fk.shape) numel *= x;
  if (numel == 0) return {};
  std::vector<Tensor> tensors;  // inputs, then outputs
  std::string key = std::to_string(fk.kernel.hash()) + " threads " + std::to_string(get_num_threads());
  append(key, fk.shape);
  append(key, fk.strides);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* v = inputs[i];
    const auto sizes = passes::concrete_sizes(v);
    const auto& strides = v->type().tensor_type().strides;
    KILN_CHECK(sizes && strides && strides->size() == sizes->size(), "autotune: input ", v->name(),
               " has no concrete layout");
    std::vector<int64_t> st;
    for (const ir::SymbolicSize& s : *strides) st.push_back(s.value());
    tensors.push_back(kiln::empty_strided(IntArrayRef(*sizes), IntArrayRef(st), fk.kernel.input_dtypes[i]));
    fill_for_timing(tensors.back());
    append(key, *sizes);
    append(key, st);
  }
  for (DType d : fk.kernel.output_dtypes) {
    tensors.push_back(kiln::empty_strided(IntArrayRef(fk.sizes), IntArrayRef(fk.strides), d));
  }
  return remembered(key, [&] {
    std::vector<const Tensor*> in;
    std::vector<void*> data;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (i < inputs.size()) in.push_back(&tensors[i]);
      data.push_back(tensors[i].data_ptr());
    }
    const IterationStrides at = iteration_strides(fk, in);
    const int64_t reps = reps_for(numel);
    // The code variants at the default split, compiled together (each its own cache entry).
    std::vector<codegen::KernelSchedule> code = pointwise_code_candidates(&fk.kernel);
    std::vector<codegen::Kernel> variants(code.size(), fk.kernel);
    const codegen::CompiledKernels compiled = codegen::compile_kernels(variants, false, code);
    std::vector<double> seconds;
    for (codegen::KernelFn fn : compiled.functions) {
      seconds.push_back(time_runs([&] { launch_cpu_pointwise(fn, fk, data.data(), at, 0); }, reps));
    }
    const size_t best = fastest(seconds);
    codegen::KernelSchedule chosen = code[best];
    // The best code's splits (the default split's time measured again beside them).
    const std::vector<int64_t> grains = grain_candidates(numel);
    if (grains.size() > 1) {
      std::vector<double> by_grain;
      for (int64_t g : grains) {
        const codegen::KernelFn fn = compiled.functions[best];
        by_grain.push_back(time_runs([&] { launch_cpu_pointwise(fn, fk, data.data(), at, g); }, reps));
      }
      chosen.grain = grains[fastest(by_grain)];
    }
    return chosen;
  });
}

codegen::KernelSchedule autotune_row(const codegen::RowKernel& rk) {
  const codegen::Kernel& k = rk.kernel;
  if (k.columns || rk.rows == 0 || rk.cols == 0) return {};  // a column kernel splits as eager does
  std::string key = std::to_string(k.hash()) + " rows " + std::to_string(rk.rows) + "x" + std::to_string(rk.cols) +
                    " threads " + std::to_string(get_num_threads());
  for (const auto& sizes : rk.input_sizes) append(key, sizes);
  return remembered(key, [&] {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < k.input_dtypes.size(); ++i) {
      inputs.push_back(kiln::empty(IntArrayRef(rk.input_sizes[i]), k.input_dtypes[i]));
      fill_for_timing(inputs.back());
    }
    std::vector<codegen::Kernel> one = {k};
    const codegen::KernelFn fn = codegen::compile_kernels(one).functions.at(0);
    const int64_t elements = rk.rows * rk.cols;
    const std::vector<int64_t> grains = grain_candidates(elements);
    if (grains.size() == 1) return codegen::KernelSchedule{};
    std::vector<double> seconds;
    std::vector<Tensor> outputs;
    for (int64_t g : grains) {
      seconds.push_back(time_runs([&] {
        KILN_CHECK(run_row_kernel(rk, fn, inputs, outputs, g), "autotune: the row kernel refused its own inputs");
      }, reps_for(elements)));
    }
    codegen::KernelSchedule chosen;
    chosen.grain = grains[fastest(seconds)];
    return chosen;
  });
}

int64_t autotuned_kernel_count() {
  Choices& c = choices();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.timed;
}

int64_t autotune_choices_from_disk() {
  Choices& c = choices();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.from_disk;
}

}  // namespace kiln::runtime
