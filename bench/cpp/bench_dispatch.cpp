// Dispatcher overhead: a direct kernel call versus the typed fast path and the
// boxed path, on a kernel that does nothing but return its input.
#include <benchmark/benchmark.h>

#include "eager/dispatch/Dispatcher.h"
#include "eager/dispatch/Library.h"
#include "eager/dispatch/ProfilerFallback.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"

namespace {

using kiln::Tensor;

Tensor identity_cpu(const Tensor& self, int64_t) { return self; }

KILN_LIBRARY(benchdispatch, m) { m.def("identity(Tensor self, int n) -> Tensor"); }
KILN_LIBRARY_IMPL(benchdispatch, CPU, m) { m.impl("identity", &identity_cpu); }

Tensor input() { return kiln::zeros({1}, kiln::DType::Float32); }

void BM_DirectKernelCall(benchmark::State& state) {
  Tensor x = input();
  auto* volatile fn = &identity_cpu;  // keep the call opaque, as the dispatcher's is
  for (auto _ : state) benchmark::DoNotOptimize(fn(x, 1));
}
BENCHMARK(BM_DirectKernelCall);

void BM_TypedDispatch(benchmark::State& state) {
  Tensor x = input();
  const auto op = kiln::Dispatcher::singleton()
                      .find_schema_or_throw("benchdispatch::identity")
                      .typed<Tensor(const Tensor&, int64_t)>();
  for (auto _ : state) benchmark::DoNotOptimize(op.call(x, 1));
}
BENCHMARK(BM_TypedDispatch);

void BM_BoxedDispatch(benchmark::State& state) {
  Tensor x = input();
  const auto op = kiln::Dispatcher::singleton().find_schema_or_throw("benchdispatch::identity");
  kiln::Stack stack;
  stack.reserve(2);
  for (auto _ : state) {
    stack.clear();
    stack.emplace_back(x);
    stack.emplace_back(int64_t{1});
    op.call_boxed(&stack);
    benchmark::DoNotOptimize(stack.data());
  }
}
BENCHMARK(BM_BoxedDispatch);

}  // namespace

namespace {

/// The whole C++ cost of a 1-element add: dispatch, TensorIterator, allocation, kernel.
void BM_AddOneElement(benchmark::State& state) {
  Tensor x = input(), y = input();
  for (auto _ : state) benchmark::DoNotOptimize(kiln::add(x, y));
}
BENCHMARK(BM_AddOneElement);

void BM_EmptyOneElement(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kiln::empty({1}, kiln::DType::Float32));
}
BENCHMARK(BM_EmptyOneElement);

}  // namespace

namespace {

// The same typed dispatch and 1-element add after a kiln.profiler session has
// registered the Profiler fallback and turned the key off again (compare with
// BM_TypedDispatch and BM_AddOneElement: Note [The profiler key costs nothing
// when off]), and while it records. Registered last: the first of them
// registers the fallback for the rest of the process.
void profile_once() {
  kiln::profiler::start_profiling({});
  (void)kiln::profiler::stop_profiling();
}

void BM_TypedDispatchProfilerOff(benchmark::State& state) {
  profile_once();
  Tensor x = input();
  const auto op = kiln::Dispatcher::singleton()
                      .find_schema_or_throw("benchdispatch::identity")
                      .typed<Tensor(const Tensor&, int64_t)>();
  for (auto _ : state) benchmark::DoNotOptimize(op.call(x, 1));
}
BENCHMARK(BM_TypedDispatchProfilerOff);

void BM_AddOneElementProfilerOff(benchmark::State& state) {
  profile_once();
  Tensor x = input(), y = input();
  for (auto _ : state) benchmark::DoNotOptimize(kiln::add(x, y));
}
BENCHMARK(BM_AddOneElementProfilerOff);

void BM_AddOneElementProfilerRecording(benchmark::State& state) {
  Tensor x = input(), y = input();
  kiln::profiler::start_profiling({});
  for (auto _ : state) benchmark::DoNotOptimize(kiln::add(x, y));
  (void)kiln::profiler::stop_profiling();
}
BENCHMARK(BM_AddOneElementProfilerRecording)->Iterations(100000);  // every call is an event kept in memory

}  // namespace
