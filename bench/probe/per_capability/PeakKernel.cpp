// A floating-point peak probe: independent fused multiply-adds on Vec<float>,
// so benchmarks can report matrix products as a fraction of this machine's peak.
#include <chrono>

#include "bench/probe/PeakStub.h"
#include "eager/kernels/cpu/vec/Vec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

double fp32_peak_gflops(double seconds) {
  using V = Vec<float>;
  constexpr int kChains = 12;  // enough independent FMAs to cover the latency
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = V::splat(static_cast<float>(i) * 1e-3f);
  const V a = V::splat(0.999999f), b = V::splat(1e-7f);
  int64_t iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    for (int rep = 0; rep < 4096; ++rep) {
      for (int i = 0; i < kChains; ++i) acc[i] = fmadd(acc[i], a, b);
    }
    iterations += 4096;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    float lane[V::size];
    acc[i].storeu(lane);
    sink += lane[0];
  }
  volatile float keep = sink;
  (void)keep;
  return static_cast<double>(iterations) * kChains * V::size * 2.0 / elapsed / 1e9;
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(fp32_peak_stub, &KILN_CPU_NS::fp32_peak_gflops);

}  // namespace kiln::native
