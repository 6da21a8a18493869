// Device parsing and printing.
#include "eager/core/Device.h"

#include <charconv>

#include "eager/core/Error.h"

namespace kiln {

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::CUDA:
      return "cuda";
    case DeviceType::Meta:
      return "meta";
  }
  return "unknown";
}

Device::Device(std::string_view spec) : type_(DeviceType::CPU), index_(-1) {
  const auto colon = spec.find(':');
  const std::string_view type_part = spec.substr(0, colon);
  if (type_part == "cpu") {
    type_ = DeviceType::CPU;
  } else if (type_part == "cuda") {
    type_ = DeviceType::CUDA;
  } else if (type_part == "meta") {
    type_ = DeviceType::Meta;
  } else {
    KILN_FAIL(Runtime, "Expected one of cpu, cuda, meta device type at start of device string: ", spec);
  }
  if (colon == std::string_view::npos) return;
  const std::string_view index_part = spec.substr(colon + 1);
  int value = -1;
  const auto* end = index_part.data() + index_part.size();
  const auto [ptr, ec] = std::from_chars(index_part.data(), end, value);
  KILN_CHECK(!index_part.empty() && ec == std::errc() && ptr == end && value >= 0 && value < 128 &&
                 (index_part.size() == 1 || index_part[0] != '0'),
             "Invalid device string: '", spec, "'");
  KILN_CHECK(type_ == DeviceType::CUDA || value == 0, device_type_name(type_) == "cpu" ? "CPU" : "Meta",
             " device index must be -1 or zero, got ", value);
  index_ = type_ == DeviceType::CUDA ? static_cast<int8_t>(value) : -1;
}

std::string Device::str() const {
  std::string s(device_type_name(type_));
  if (has_index()) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace kiln
