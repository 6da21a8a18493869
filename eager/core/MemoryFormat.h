// MemoryFormat: the layout an op should give a new tensor (PyTorch's
// c10::MemoryFormat): row-major, channels-last (NHWC, NDHWC) or "preserve"
// (follow the input's layout). A schema's `MemoryFormat` argument; boxed as
// an int, as PyTorch boxes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "eager/core/ArrayRef.h"

namespace kiln {

enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };
inline constexpr int kNumMemoryFormats = 4;

/// "contiguous_format", "preserve_format", "channels_last", "channels_last_3d": the Python names.
[[nodiscard]] constexpr std::string_view memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "contiguous_format";
    case MemoryFormat::Preserve: return "preserve_format";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::ChannelsLast3d: return "channels_last_3d";
  }
  return "unknown_memory_format";
}

/// Strides of a dense tensor of `sizes` in format `f` (Contiguous or ChannelsLast*;
/// PyTorch's get_channels_last_strides_2d/3d, which multiply the raw sizes). Other
/// formats or ranks give the row-major strides.
[[nodiscard]] inline DimVector strides_for_memory_format(IntArrayRef sizes, MemoryFormat f) {
  const size_t n = sizes.size();
  auto dim_order = [&](std::initializer_list<size_t> innermost_first) {
    DimVector strides(n, 1);
    int64_t step = 1;
    for (size_t d : innermost_first) {
      strides[d] = step;
      step *= sizes[d];
    }
    return strides;
  };
  if (f == MemoryFormat::ChannelsLast && n == 4) return dim_order({1, 3, 2, 0});
  if (f == MemoryFormat::ChannelsLast3d && n == 5) return dim_order({1, 4, 3, 2, 0});
  return contiguous_strides(sizes);
}

}  // namespace kiln
