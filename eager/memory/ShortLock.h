// ShortLock: the caching allocator's mutex, for critical sections of a few hundred instructions.
//
// Note [The allocator's lock]
// ---------------------------
// Every eager op result takes the CPU caching allocator's lock twice (its block allocated, then
// freed). std::mutex (a glibc pthread mutex) spends ~55 instructions on a lock/unlock pair in its
// type and owner bookkeeping: ~110 of the ~4,100 a 1-element `kiln.add(x, y)` costs from Python
// (callgrind). ShortLock is the three-state futex mutex ("Futexes Are Tricky", mutex 2): state 0
// free, 1 held, 2 held with possible waiters. Uncontended, lock is one compare-exchange and unlock
// one exchange; a contended lock sleeps in the kernel (std::atomic::wait, a futex on Linux) rather
// than spinning, so a thread preempted while holding it costs the others no CPU. Not recursive,
// not fair (as std::mutex). Acquire/release ordering is what ThreadSanitizer checks it by.
#pragma once

#include <atomic>

namespace kiln::memory {

class ShortLock {
 public:
  ShortLock() = default;
  ShortLock(const ShortLock&) = delete;
  ShortLock& operator=(const ShortLock&) = delete;

  void lock() {
    int expected = kFree;
    if (state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed))
        [[likely]] {
      return;
    }
    lock_contended();
  }

  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kHeldWithWaiters) [[unlikely]] state_.notify_one();
  }

 private:
  static constexpr int kFree = 0;
  static constexpr int kHeld = 1;
  static constexpr int kHeldWithWaiters = 2;

  void lock_contended() {
    // Mark the lock as waited on, and sleep until its holder frees it; whoever wakes takes it
    // marked again (another sleeper may still wait).
    int state = state_.exchange(kHeldWithWaiters, std::memory_order_acquire);
    while (state != kFree) {
      state_.wait(kHeldWithWaiters, std::memory_order_relaxed);
      state = state_.exchange(kHeldWithWaiters, std::memory_order_acquire);
    }
  }

  std::atomic<int> state_{kFree};
};

}  // namespace kiln::memory
