// The CPU generator (a Philox4x32-10 stream: a seed and an offset), the
// process-wide default generator, and how ops draw their inputs from one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "eager/core/GeneratorImpl.h"

namespace kiln {

// Note [Counter-based random numbers]
// -----------------------------------
// A sequential generator (PyTorch's CPU mt19937) hands numbers out one after
// another, so a parallel kernel's values would depend on which thread drew
// first. kiln's CPU generator is instead a Philox4x32-10 stream
// (eager/kernels/random/Philox.h): its whole state is a 64-bit seed and a
// 64-bit offset counting 128-bit blocks already used. A random op
//   1. reserves the blocks it needs in one step, under the generator's mutex
//      (reserve() returns the (seed, offset) it starts from and advances the
//      offset past them), so concurrent ops on one generator get disjoint
//      blocks and an op is atomic with respect to manual_seed and set_state;
//   2. computes every element's numbers from (seed, offset, element index)
//      alone (Note [Random groups] in Philox.h), on any number of threads.
// So one seed replays the same tensors for any kiln.set_num_threads, saving
// get_state() and restoring it with set_state() replays the same numbers, and
// compiled graphs can take (seed, offset) as inputs (DESIGN.md decision 4).
// The values differ from PyTorch's (a different engine); their distributions
// are the same.

/// Where an op's random numbers start: blocks offset, offset + 1, ... of seed's stream.
struct PhiloxInputs {
  uint64_t seed;
  uint64_t offset;
};

/// PyTorch's default_rng_seed_val: the default generator's seed until manual_seed.
inline constexpr uint64_t kDefaultRngSeed = 67280421310721;

class CpuGeneratorImpl final : public GeneratorImpl {
 public:
  explicit CpuGeneratorImpl(uint64_t seed = kDefaultRngSeed) : seed_(seed) {}

  [[nodiscard]] Device device() const override { return Device(DeviceType::CPU); }
  void set_current_seed(uint64_t seed) override;
  [[nodiscard]] uint64_t current_seed() const override;
  uint64_t seed() override;
  [[nodiscard]] uint64_t offset() const override;
  void set_offset(uint64_t offset) override;
  [[nodiscard]] std::vector<uint8_t> state() const override;
  void set_state(std::span<const uint8_t> bytes) override;
  [[nodiscard]] intrusive_ptr<GeneratorImpl> clone() const override;

  /// Reserves `blocks` Philox blocks for one op. See Note [Counter-based random numbers].
  [[nodiscard]] PhiloxInputs reserve(uint64_t blocks);

  /// Bytes of state(): a format tag, the seed and the offset (little-endian u64s).
  static constexpr size_t kStateBytes = 24;

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// A new CPU generator seeded with `seed`.
[[nodiscard]] Generator make_cpu_generator(uint64_t seed = kDefaultRngSeed);
/// The process-wide CPU generator (kiln.default_generator; kiln.manual_seed seeds it).
[[nodiscard]] const Generator& default_cpu_generator();
/// The CPU generator an op draws from: `generator`, or the default one.
/// RuntimeError when `generator` belongs to another device.
[[nodiscard]] CpuGeneratorImpl& cpu_generator_or_default(const std::optional<Generator>& generator);
/// A nondeterministic 64-bit seed (std::random_device mixed with the clock).
[[nodiscard]] uint64_t nondeterministic_seed();

}  // namespace kiln
