// DispatchKey and DispatchKeySet: the bitset every tensor carries, which the
// dispatcher (eager/dispatch) reads to pick a kernel.
//
// These are value types the tensor core needs, so they live in eager/core
// (as c10/core does in PyTorch); the dispatcher machinery that consumes them
// lives in eager/dispatch. See Note [Dispatch key order].
#pragma once

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "eager/core/Device.h"

namespace kiln {

// Note [Dispatch key order]
// -------------------------
// A key's value is its bit position, and a higher bit wins: the dispatcher runs
// the kernel of the highest key in (tensor keys | TLS include) & ~TLS exclude.
// Autograd records a node and redispatches below itself; Capture records an IR
// node and redispatches; BackendSelect picks a backend for factory functions
// that have no tensor argument; the backend keys compute. Profiler sits on top
// so it sees every call, autograd included. The test keys exist so dispatcher
// tests can register kernels and fallbacks without disturbing real ones.
#define KILN_FORALL_DISPATCH_KEYS(_) \
  _(CPU)                             \
  _(CUDA)                            \
  _(Meta)                            \
  _(BackendSelect)                   \
  _(TestLow)                         \
  _(Capture)                         \
  _(Autograd)                        \
  _(TestHigh)                        \
  _(Profiler)

enum class DispatchKey : uint8_t {
#define KILN_DISPATCH_KEY_ENUM_(name) name,
  KILN_FORALL_DISPATCH_KEYS(KILN_DISPATCH_KEY_ENUM_)
#undef KILN_DISPATCH_KEY_ENUM_
      NumKeys,
  Undefined = 63,
};
inline constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumKeys);
static_assert(kNumDispatchKeys <= 63, "DispatchKeySet is a 64-bit set");

[[nodiscard]] std::string_view dispatch_key_name(DispatchKey k);

/// A constexpr set of dispatch keys with highest-key lookup.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(DispatchKey k)  // NOLINT: a key is a one-element set
      : bits_(k == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<uint8_t>(k)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (DispatchKey k : keys) bits_ |= DispatchKeySet(k).bits_;
  }
  static constexpr DispatchKeySet from_raw(uint64_t bits) {
    DispatchKeySet s;
    s.bits_ = bits;
    return s;
  }
  /// Every key at or below `k` (used to redispatch "below" a key).
  static constexpr DispatchKeySet at_or_below(DispatchKey k) {
    return from_raw((uint64_t{1} << (static_cast<uint8_t>(k) + 1)) - 1);
  }

  /// The keys of this set strictly below `k` (what a kernel at `k` redispatches to).
  [[nodiscard]] constexpr DispatchKeySet below(DispatchKey k) const {
    return from_raw(bits_ & ((uint64_t{1} << static_cast<uint8_t>(k)) - 1));
  }
  [[nodiscard]] constexpr bool has(DispatchKey k) const { return (bits_ & DispatchKeySet(k).bits_) != 0; }
  [[nodiscard]] constexpr bool empty() const { return bits_ == 0; }
  [[nodiscard]] constexpr uint64_t raw() const { return bits_; }
  [[nodiscard]] constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_raw(bits_ | o.bits_); }
  [[nodiscard]] constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_raw(bits_ & o.bits_); }
  [[nodiscard]] constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_raw(bits_ & ~o.bits_); }
  [[nodiscard]] constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  [[nodiscard]] constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  constexpr bool operator==(const DispatchKeySet&) const = default;

  /// The key that wins dispatch, or Undefined for the empty set.
  [[nodiscard]] constexpr DispatchKey highest() const {
    if (bits_ == 0) return DispatchKey::Undefined;
    return static_cast<DispatchKey>(63 - std::countl_zero(bits_));
  }

 private:
  uint64_t bits_ = 0;
};

/// The backend key for a device (CPU -> CPU, CUDA -> CUDA, Meta -> Meta).
[[nodiscard]] constexpr DispatchKey backend_key(DeviceType t) {
  switch (t) {
    case DeviceType::CUDA:
      return DispatchKey::CUDA;
    case DeviceType::Meta:
      return DispatchKey::Meta;
    default:
      return DispatchKey::CPU;
  }
}

}  // namespace kiln
