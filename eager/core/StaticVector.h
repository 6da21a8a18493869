// StaticVector: a vector with a fixed capacity that lives entirely inline
// (no heap), for short lists of non-trivial values (an op's operands).
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "eager/core/Error.h"

namespace kiln {

template <typename T, size_t N>
class StaticVector {
 public:
  StaticVector() = default;
  StaticVector(const StaticVector& o) {
    for (const T& v : o) push_back(v);
  }
  StaticVector& operator=(const StaticVector& o) {
    if (this != &o) {
      clear();
      for (const T& v : o) push_back(v);
    }
    return *this;
  }
  ~StaticVector() { clear(); }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    KILN_CHECK(size_ < N, "StaticVector: more than ", N, " elements");
    T* p = new (slot(size_)) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void clear() {
    for (size_t i = 0; i < size_; ++i) slot(i)->~T();
    size_ = 0;
  }

  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return *slot(i); }
  const T& operator[](size_t i) const { return *slot(i); }
  T* begin() { return slot(0); }
  T* end() { return slot(size_); }
  const T* begin() const { return slot(0); }
  const T* end() const { return slot(size_); }
  T& back() { return *slot(size_ - 1); }

 private:
  T* slot(size_t i) { return std::launder(reinterpret_cast<T*>(storage_) + i); }
  const T* slot(size_t i) const { return std::launder(reinterpret_cast<const T*>(storage_) + i); }

  alignas(T) unsigned char storage_[N * sizeof(T)];
  size_t size_ = 0;
};

}  // namespace kiln
