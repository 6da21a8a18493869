// The unsigned word a byte-moving kernel copies one element as.
#pragma once

#include <cstdint>

namespace kiln::native {

/// A 16-byte element (complex128) moved as one unit.
struct Word16 {
  uint64_t lo, hi;
};

/// Calls fn(Word{}) with the trivially copyable type of `itemsize` bytes: uint8_t,
/// uint16_t, uint32_t, uint64_t, or Word16 for 16 (every kiln dtype is one of these).
template <typename Fn>
decltype(auto) with_element_word(int64_t itemsize, const Fn& fn) {
  switch (itemsize) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: return fn(Word16{});
  }
}

}  // namespace kiln::native
