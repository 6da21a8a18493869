// C++ microbenchmarks of tensor creation and views (no Python in the loop).
#include <benchmark/benchmark.h>

#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace {

void BM_EmptyFloat(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    kiln::Tensor t = kiln::empty({n}, kiln::DType::Float32);
    benchmark::DoNotOptimize(t.data_ptr());
  }
}
BENCHMARK(BM_EmptyFloat)->Arg(16)->Arg(1 << 16)->Arg(1 << 24);

void BM_ZerosFloat(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    kiln::Tensor t = kiln::zeros({n}, kiln::DType::Float32);
    benchmark::DoNotOptimize(t.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_ZerosFloat)->Arg(16)->Arg(1 << 16)->Arg(1 << 24);

void BM_TransposeView(benchmark::State& state) {
  kiln::Tensor t = kiln::empty({64, 64}, kiln::DType::Float32);
  for (auto _ : state) {
    kiln::Tensor v = kiln::transpose(t, 0, 1);
    benchmark::DoNotOptimize(v.impl());
  }
}
BENCHMARK(BM_TransposeView);

}  // namespace
