// Fuzz target: random tensor geometries (sizes, strides, storage offsets,
// including zero strides, overlapping and empty views) through as_strided,
// TensorIterator ops, reductions, views and indexing. The input bytes choose a
// geometry and a few operations; each result is checked against a reference
// computed by reading the base storage through the strides by hand, and each
// error must be a kiln::Error raised exactly where PyTorch raises one (a view
// past the storage's end, an index out of range, an in-place write to a view
// whose elements overlap).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"

namespace {

using kiln::DType;
using kiln::Tensor;

/// Reads the fuzzer's bytes; past the end every byte is 0.
struct ByteReader {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  uint8_t next() { return at < size ? data[at++] : 0; }
  bool done() const { return at >= size; }
};

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "tensor geometry fuzz: " << what << "\n";
  std::abort();
}

/// A strided view's elements in row-major order, read from `base` (contiguous,
/// one dimension) by hand: the reference every result is checked against.
struct Geometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  int64_t numel() const {
    return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  }
  /// Storage index of each element, row-major.
  std::vector<int64_t> addresses() const {
    std::vector<int64_t> out;
    const int64_t n = numel();
    out.reserve(static_cast<size_t>(n));
    std::vector<int64_t> index(sizes.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t address = offset;
      for (size_t d = 0; d < sizes.size(); ++d) address += index[d] * strides[d];
      out.push_back(address);
      for (size_t d = sizes.size(); d-- > 0;) {
        if (++index[d] < sizes[d]) break;
        index[d] = 0;
      }
    }
    return out;
  }
  /// One past the largest storage index the view touches; an empty view touches
  /// none, so any offset is in bounds (as in PyTorch).
  int64_t extent() const {
    if (numel() == 0) return 0;
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
    return last + 1;
  }
};

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32: return t.data_ptr<float>()[i];
    case DType::Float64: return t.data_ptr<double>()[i];
    case DType::Int64: return static_cast<double>(t.data_ptr<int64_t>()[i]);
    default: fail("unexpected dtype");
  }
}

/// The values of `t` in row-major order (through a contiguous clone).
std::vector<double> values(const Tensor& t) {
  const Tensor c = kiln::clone(t, kiln::MemoryFormat::Contiguous);
  if (!c.is_contiguous()) fail("clone(contiguous) is not contiguous");
  std::vector<double> out(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) out[static_cast<size_t>(i)] = element(c, i);
  return out;
}

std::vector<int64_t> vec(kiln::IntArrayRef r) { return {r.begin(), r.end()}; }

void expect_values(const Tensor& t, const std::vector<double>& expected, const char* what) {
  const std::vector<double> got = values(t);
  if (got != expected) fail(std::string(what) + ": values differ from the reference");
}

/// Expects `fn` to raise a kiln::Error.
template <typename Fn>
void expect_error(Fn fn, const char* what) {
  try {
    fn();
  } catch (const kiln::Error&) {
    return;
  }
  fail(std::string(what) + ": expected a kiln error");
}

void run(ByteReader& in) {
  static constexpr DType kDTypes[] = {DType::Float32, DType::Float64, DType::Int64};
  const DType dtype = kDTypes[in.next() % 3];
  Geometry g;
  const size_t ndim = in.next() % 5;
  for (size_t d = 0; d < ndim; ++d) {
    g.sizes.push_back(in.next() % 6);
    g.strides.push_back(in.next() % 9);
  }
  g.offset = in.next() % 17;
  // The storage: exactly what the view needs, or one element short or over.
  const int64_t storage = std::max<int64_t>(0, g.extent() + (in.next() % 3) - 1);

  Tensor base = kiln::empty({storage}, dtype);
  for (int64_t i = 0; i < storage; ++i) {
    if (dtype == DType::Float32) base.data_ptr<float>()[i] = static_cast<float>(i);
    if (dtype == DType::Float64) base.data_ptr<double>()[i] = static_cast<double>(i);
    if (dtype == DType::Int64) base.data_ptr<int64_t>()[i] = i;
  }
  if (g.extent() > storage) {
    expect_error([&] { (void)kiln::as_strided(base, g.sizes, g.strides, g.offset); }, "as_strided past the storage");
    return;
  }
  const Tensor view = kiln::as_strided(base, g.sizes, g.strides, g.offset);
  if (vec(view.sizes()) != g.sizes || vec(view.strides()) != g.strides || view.storage_offset() != g.offset) {
    fail("as_strided did not keep the geometry");
  }
  const std::vector<int64_t> addresses = g.addresses();
  std::vector<double> ref(addresses.begin(), addresses.end());
  expect_values(view, ref, "as_strided");

  for (int step = 0; step < 4 && !in.done(); ++step) {
    const uint8_t op = in.next() % 7;
    const int64_t dim = ndim == 0 ? 0 : in.next() % ndim;
    switch (op) {
      case 0: {  // a binary TensorIterator op of the view with itself
        std::vector<double> twice = ref;
        for (double& v : twice) v *= 2;
        expect_values(kiln::add(view, view), twice, "add(view, view)");
        break;
      }
      case 1: {  // a reduction over one dimension
        if (ndim == 0) break;
        const Tensor s = kiln::sum(view, std::optional<kiln::IntArrayRef>(std::vector<int64_t>{dim}), false);
        std::vector<int64_t> out_sizes = g.sizes;
        out_sizes.erase(out_sizes.begin() + dim);
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < dim; ++d) outer *= g.sizes[d];
        for (size_t d = dim + 1; d < ndim; ++d) inner *= g.sizes[d];
        std::vector<double> expected(static_cast<size_t>(outer * inner), 0.0);
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t k = 0; k < g.sizes[dim]; ++k) {
            for (int64_t i = 0; i < inner; ++i) {
              expected[static_cast<size_t>(o * inner + i)] += ref[static_cast<size_t>((o * g.sizes[dim] + k) * inner + i)];
            }
          }
        }
        if (vec(s.sizes()) != out_sizes) fail("sum: wrong sizes");
        if (dtype == DType::Float32) {
          // float32 sums of small integers are exact; compare in float all the same.
          std::vector<double> got = values(s);
          for (size_t i = 0; i < got.size(); ++i) {
            if (static_cast<float>(got[i]) != static_cast<float>(expected[i])) fail("sum: values differ");
          }
        } else {
          expect_values(s, expected, "sum over a dimension");
        }
        break;
      }
      case 2: {  // narrow, sometimes out of range
        if (ndim == 0) break;
        const int64_t start = static_cast<int64_t>(in.next() % 8) - 1;
        const int64_t length = static_cast<int64_t>(in.next() % 8) - 1;
        const int64_t size = g.sizes[dim];
        const int64_t begin = start < 0 ? start + size : start;
        if (length < 0 || begin < 0 || begin + length > size || start < -size || start > size) {
          expect_error([&] { (void)kiln::narrow(view, dim, start, length); }, "narrow out of range");
          break;
        }
        const Tensor n = kiln::narrow(view, dim, start, length);
        Geometry ng = g;
        ng.sizes[dim] = length;
        ng.offset += begin * g.strides[dim];
        const std::vector<int64_t> na = ng.addresses();
        expect_values(n, std::vector<double>(na.begin(), na.end()), "narrow");
        break;
      }
      case 3: {  // index_select with indices that may be out of range
        if (ndim == 0) break;
        const int64_t count = in.next() % 4;
        Tensor index = kiln::empty({count}, DType::Int64);
        bool in_range = true;
        for (int64_t i = 0; i < count; ++i) {
          const int64_t value = static_cast<int64_t>(in.next() % 8) - 1;
          index.data_ptr<int64_t>()[i] = value;
          in_range = in_range && value >= 0 && value < g.sizes[dim];
        }
        if (!in_range) {
          expect_error([&] { (void)kiln::index_select(view, dim, index); }, "index_select out of range");
          break;
        }
        std::vector<double> expected;
        // Row-major over the selected shape: one slice per index, interleaved by the outer dims.
        Geometry out_g = g;
        out_g.sizes[dim] = count;
        std::vector<int64_t> idx(ndim, 0);
        for (int64_t i = 0; i < out_g.numel(); ++i) {
          int64_t address = g.offset;
          for (size_t d = 0; d < ndim; ++d) {
            const int64_t at = static_cast<int64_t>(d) == dim ? index.data_ptr<int64_t>()[idx[d]] : idx[d];
            address += at * g.strides[d];
          }
          expected.push_back(static_cast<double>(address));
          for (size_t d = ndim; d-- > 0;) {
            if (++idx[d] < out_g.sizes[d]) break;
            idx[d] = 0;
          }
        }
        expect_values(kiln::index_select(view, dim, index), expected, "index_select");
        break;
      }
      case 4: {  // permute then clone: a TensorIterator copy in another order
        std::vector<int64_t> perm(ndim);
        std::iota(perm.begin(), perm.end(), int64_t{0});
        for (size_t d = ndim; d > 1; --d) std::swap(perm[d - 1], perm[in.next() % d]);
        Geometry pg;
        for (int64_t p : perm) {
          pg.sizes.push_back(g.sizes[p]);
          pg.strides.push_back(g.strides[p]);
        }
        pg.offset = g.offset;
        const std::vector<int64_t> pa = pg.addresses();
        expect_values(kiln::permute(view, perm), std::vector<double>(pa.begin(), pa.end()), "permute");
        break;
      }
      case 5: {  // in-place add on the view: an error when its elements overlap
        const std::set<int64_t> distinct(addresses.begin(), addresses.end());
        const bool overlapping = distinct.size() != addresses.size();
        Tensor target = kiln::clone(base);
        Tensor target_view = kiln::as_strided(target, g.sizes, g.strides, g.offset);
        try {
          target_view.add_(1);
        } catch (const kiln::Error&) {
          if (!overlapping) fail("add_ raised on a view whose elements do not overlap");
          break;
        }
        if (overlapping) break;  // PyTorch also lets some overlapping views through; nothing to check
        std::vector<double> expected = ref;
        for (double& v : expected) v += 1;
        expect_values(target_view, expected, "add_ on a view");
        break;
      }
      case 6: {  // copy the view into a fresh tensor of another layout
        // A destination laid out with its dimensions reversed (not contiguous for ndim >= 2).
        std::vector<int64_t> reversed(g.sizes.rbegin(), g.sizes.rend());
        std::vector<int64_t> back(ndim);
        for (size_t d = 0; d < ndim; ++d) back[d] = static_cast<int64_t>(ndim - 1 - d);
        const Tensor out = kiln::permute(kiln::empty(reversed, dtype), back);
        out.copy_(view);
        expect_values(out, ref, "copy_");
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in{data, size};
  run(in);
  return 0;
}
