// The CPU Philox generator. See Note [Counter-based random numbers].
#include "eager/kernels/random/Generator.h"

#include <chrono>
#include <cstring>
#include <random>

#include "eager/core/Error.h"

namespace kiln {

namespace {

/// Leads the state bytes so a state from another engine (or a later format) is refused.
constexpr uint64_t kStateFormat = 0x31584f4c49485050;  // "PPHILOX1", little-endian

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t get_u64(std::span<const uint8_t> bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(bytes[at + static_cast<size_t>(i)]) << (8 * i);
  return v;
}

}  // namespace

void CpuGeneratorImpl::set_current_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t CpuGeneratorImpl::current_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

uint64_t CpuGeneratorImpl::seed() {
  const uint64_t s = nondeterministic_seed();
  set_current_seed(s);
  return s;
}

uint64_t CpuGeneratorImpl::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}

void CpuGeneratorImpl::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}

std::vector<uint8_t> CpuGeneratorImpl::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint8_t> out;
  out.reserve(kStateBytes);
  put_u64(out, kStateFormat);
  put_u64(out, seed_);
  put_u64(out, offset_);
  return out;
}

void CpuGeneratorImpl::set_state(std::span<const uint8_t> bytes) {
  KILN_CHECK(bytes.size() == kStateBytes, "Expected a CPU Philox generator state of size ", kStateBytes,
             " but found the input RNG state size to be ", bytes.size());
  KILN_CHECK(get_u64(bytes, 0) == kStateFormat,
             "The RNG state is not a CPU Philox generator state (it does not start with kiln's format tag)");
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = get_u64(bytes, 8);
  offset_ = get_u64(bytes, 16);
}

intrusive_ptr<GeneratorImpl> CpuGeneratorImpl::clone() const {
  auto copy = make_intrusive<CpuGeneratorImpl>();
  copy->set_state(state());
  return copy;
}

PhiloxInputs CpuGeneratorImpl::reserve(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  const PhiloxInputs inputs{seed_, offset_};
  offset_ += blocks;  // wraps after 2^64 blocks (2^68 bytes), as a counter may
  return inputs;
}

Generator make_cpu_generator(uint64_t seed) { return Generator(make_intrusive<CpuGeneratorImpl>(seed)); }

const Generator& default_cpu_generator() {
  static const Generator generator = make_cpu_generator();
  return generator;
}

CpuGeneratorImpl& cpu_generator_or_default(const std::optional<Generator>& generator) {
  if (!generator.has_value() || !generator->defined()) {
    return static_cast<CpuGeneratorImpl&>(*default_cpu_generator().impl());
  }
  KILN_CHECK(generator->device().is_cpu(), "Expected a 'cpu' device type for generator but found '",
             device_type_name(generator->device().type()), "'");
  return static_cast<CpuGeneratorImpl&>(*generator->impl());
}

uint64_t nondeterministic_seed() {
  std::random_device device;
  const uint64_t high = device(), low = device();
  const auto ticks = static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  // splitmix64 of the mix, so equal device draws still give distinct seeds.
  uint64_t z = ((high << 32) ^ low) + ticks * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace kiln
