// intrusive_ptr: a refcounted handle whose count lives in the object, so a raw
// pointer (from Python, from a kernel table) can be turned back into an owner.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln {

/// Base of every intrusively refcounted object (Storage, TensorImpl, ...).
class IntrusiveTarget {
 public:
  IntrusiveTarget() = default;
  IntrusiveTarget(const IntrusiveTarget&) = delete;
  IntrusiveTarget& operator=(const IntrusiveTarget&) = delete;
  virtual ~IntrusiveTarget() = default;

  [[nodiscard]] uint32_t use_count() const { return refcount_.load(std::memory_order_acquire); }

 private:
  template <typename T>
  friend class intrusive_ptr;
  void incref() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  /// True when this was the last reference.
  bool decref() const { return refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  mutable std::atomic<uint32_t> refcount_{0};
};

template <typename T>
class intrusive_ptr {
 public:
  constexpr intrusive_ptr() noexcept = default;
  constexpr intrusive_ptr(std::nullptr_t) noexcept {}  // NOLINT
  /// Takes a fresh object (refcount 0) or adds a reference to a live one.
  explicit intrusive_ptr(T* p) noexcept : p_(p) {
    if (p_) p_->incref();
  }
  intrusive_ptr(const intrusive_ptr& o) noexcept : intrusive_ptr(o.p_) {}
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  intrusive_ptr(intrusive_ptr<U> o) noexcept : p_(o.release()) {}  // NOLINT: upcast
  ~intrusive_ptr() { reset(); }

  intrusive_ptr& operator=(intrusive_ptr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  template <typename... Args>
  static intrusive_ptr make(Args&&... args) {
    return intrusive_ptr(new T(std::forward<Args>(args)...));
  }

  /// Gives up ownership without decrementing; pair with reclaim().
  T* release() noexcept { return std::exchange(p_, nullptr); }
  /// Adopts a pointer previously given up by release().
  static intrusive_ptr reclaim(T* p) noexcept {
    intrusive_ptr r;
    r.p_ = p;
    return r;
  }

  void reset() noexcept {
    if (p_ && p_->decref()) delete p_;
    p_ = nullptr;
  }

  [[nodiscard]] T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  [[nodiscard]] uint32_t use_count() const noexcept { return p_ ? p_->use_count() : 0; }
  bool operator==(const intrusive_ptr& o) const noexcept { return p_ == o.p_; }

 private:
  template <typename U>
  friend class intrusive_ptr;
  T* p_ = nullptr;
};

template <typename T, typename... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>::make(std::forward<Args>(args)...);
}

}  // namespace kiln
