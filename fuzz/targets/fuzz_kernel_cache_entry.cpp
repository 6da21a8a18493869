// Fuzz target: the kernel cache's entry reader (codegen/llvm/KernelCache.h),
// which reads files any process, crash or full disk may have left in
// KILN_CACHE_DIR. For any bytes:
//  1. read as an entry, they are refused with a reason or accepted, and an
//     accepted entry re-encodes to exactly those bytes (nothing unchecked);
//  2. as an object file (non-empty: an empty one is refused), they encode to
//     an entry that reads back to them, and
//     every truncation of that entry and every single-bit flip at the positions
//     the input picks (the header's fields, the key text, the object) is
//     refused: a damaged entry is never loaded as machine code.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "codegen/llvm/KernelCache.h"

namespace {

constexpr uint64_t kKey = 0x6b696c6e2d667a7aULL;
constexpr std::string_view kKeyText = "kiln fuzz environment; kernel 0123456789abcdef";

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "kernel cache entry fuzz: " << what << "\n";
  std::abort();
}

void expect_refused(std::string_view entry, const std::string& what) {
  std::string why;
  if (kiln::codegen::decode_kernel_cache_entry(entry, kKey, kKeyText, &why).has_value()) fail(what + " was accepted");
  if (why.empty()) fail(what + " was refused without a reason");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using kiln::codegen::decode_kernel_cache_entry;
  using kiln::codegen::encode_kernel_cache_entry;

  std::string why;
  if (auto object = decode_kernel_cache_entry(bytes, kKey, kKeyText, &why)) {
    if (encode_kernel_cache_entry(kKey, kKeyText, *object) != bytes) fail("an accepted entry does not re-encode");
  } else if (why.empty()) {
    fail("an entry was refused without a reason");
  }

  const std::string entry = encode_kernel_cache_entry(kKey, kKeyText, bytes);
  if (bytes.empty()) {  // no object file is empty: the reader refuses one
    expect_refused(entry, "an entry with an empty object");
    return 0;
  }
  const auto round_trip = decode_kernel_cache_entry(entry, kKey, kKeyText, &why);
  if (!round_trip || *round_trip != bytes) fail("a fresh entry does not read back: " + why);
  // Every truncation near the ends and at input-chosen lengths, and a padded entry.
  for (size_t cut = 0; cut < entry.size(); cut += (cut < 64 || entry.size() - cut < 64) ? 1 : 1 + cut / 3) {
    expect_refused(std::string_view(entry).substr(0, cut), "an entry cut to " + std::to_string(cut) + " bytes");
  }
  expect_refused(entry + '\0', "an entry with a byte appended");
  // Single-bit flips: every header bit, then positions the input's bytes pick.
  std::string flipped = entry;
  auto flip_refused = [&](size_t at, int bit) {
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << bit));
    expect_refused(flipped, "an entry with bit " + std::to_string(bit) + " of byte " + std::to_string(at) + " flipped");
    flipped[at] = entry[at];
  };
  for (size_t at = 0; at < kiln::codegen::kKernelCacheHeaderBytes; ++at) flip_refused(at, static_cast<int>(at % 8));
  for (size_t i = 0; i + 1 < size && i < 64; i += 2) {
    const size_t at = (static_cast<size_t>(data[i]) << 8 | data[i + 1]) % entry.size();
    flip_refused(at, data[i] % 8);
  }
  return 0;
}
