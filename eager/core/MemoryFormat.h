// MemoryFormat: how a new tensor's strides are laid out (schema type
// `MemoryFormat?`, Python's kiln.contiguous_format, kiln.preserve_format,
// kiln.channels_last, kiln.channels_last_3d).
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln {

enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };
inline constexpr int kNumMemoryFormats = 4;

/// "contiguous_format", "preserve_format", "channels_last", "channels_last_3d" (as torch names them).
[[nodiscard]] constexpr std::string_view memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "contiguous_format";
    case MemoryFormat::Preserve: return "preserve_format";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::ChannelsLast3d: return "channels_last_3d";
  }
  return "unknown_format";
}

}  // namespace kiln
