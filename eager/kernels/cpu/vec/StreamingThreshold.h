// The output size from which kernels write with non-temporal stores (Note
// [Streaming stores], vec/VecBinary.h): one constant for the pointwise loops,
// the layout copies and cat, compiled once or per capability alike.
#pragma once

#include <cstdint>

namespace kiln::native {

/// Outputs of at least this many bytes stream past the cache (16 MiB: half of a 32 MiB L3).
inline constexpr int64_t kStreamingBytes = int64_t{16} << 20;

}  // namespace kiln::native
