// Device: where a tensor's memory lives (cpu, cuda:N), or meta: no memory at all.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace kiln {

/// Meta tensors have sizes, strides and a dtype but no data (DESIGN.md, decision 10;
/// Note [Meta tensors have no data], Storage.h).
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 2 };
inline constexpr int kNumDeviceTypes = 3;

[[nodiscard]] std::string_view device_type_name(DeviceType t);

/// A device type plus an index; index -1 means "the current device" (only
/// meaningful for CUDA). CPU always has index -1 and prints as "cpu".
class Device {
 public:
  constexpr Device(DeviceType type = DeviceType::CPU, int8_t index = -1) : type_(type), index_(index) {}
  /// Parses "cpu", "cuda", "cuda:1", "meta". RuntimeError for anything else.
  explicit Device(std::string_view spec);

  [[nodiscard]] constexpr DeviceType type() const { return type_; }
  [[nodiscard]] constexpr int8_t index() const { return index_; }
  [[nodiscard]] constexpr bool has_index() const { return index_ >= 0; }
  [[nodiscard]] constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  [[nodiscard]] constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  [[nodiscard]] constexpr bool is_meta() const { return type_ == DeviceType::Meta; }
  [[nodiscard]] std::string str() const;

  constexpr bool operator==(const Device&) const = default;

 private:
  DeviceType type_;
  int8_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace kiln
