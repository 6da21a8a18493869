// GeneratorImpl and Generator: the device-agnostic face of a random number
// generator, so op schemas (`Generator? generator`), IValues and the Python
// layer can carry one. The engines live in eager/kernels/random/ (the CPU one
// is Philox4x32-10, see Note [Counter-based random numbers] there).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "eager/core/Device.h"
#include "eager/core/IntrusivePtr.h"

namespace kiln {

/// One generator's state and its seeding API (as torch.Generator's methods).
/// Implementations are thread-safe: ops on several threads may share one.
class GeneratorImpl : public IntrusiveTarget {
 public:
  [[nodiscard]] virtual Device device() const = 0;
  /// Seeds the generator and rewinds it (manual_seed).
  virtual void set_current_seed(uint64_t seed) = 0;
  /// The seed last set (initial_seed).
  [[nodiscard]] virtual uint64_t current_seed() const = 0;
  /// Seeds from a nondeterministic source and returns the seed (seed()).
  virtual uint64_t seed() = 0;
  /// Position in the stream (counter-based engines only; others raise).
  [[nodiscard]] virtual uint64_t offset() const = 0;
  virtual void set_offset(uint64_t offset) = 0;
  /// The whole state as bytes (get_state), and restoring it (set_state):
  /// RuntimeError for bytes that are not a state of this kind of generator.
  [[nodiscard]] virtual std::vector<uint8_t> state() const = 0;
  virtual void set_state(std::span<const uint8_t> bytes) = 0;
  /// A new generator with a copy of this one's state.
  [[nodiscard]] virtual intrusive_ptr<GeneratorImpl> clone() const = 0;
};

/// A shared handle to a GeneratorImpl (copying it shares the generator).
class Generator {
 public:
  Generator() = default;
  explicit Generator(intrusive_ptr<GeneratorImpl> impl) : impl_(std::move(impl)) {}

  [[nodiscard]] bool defined() const { return static_cast<bool>(impl_); }
  [[nodiscard]] GeneratorImpl* impl() const { return impl_.get(); }
  GeneratorImpl* operator->() const { return impl_.get(); }
  [[nodiscard]] Device device() const { return impl_->device(); }
  bool operator==(const Generator& other) const { return impl_ == other.impl_; }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

}  // namespace kiln
