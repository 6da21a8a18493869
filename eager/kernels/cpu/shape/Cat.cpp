// cat and cat.out: PyTorch's checks (the legacy skip of empty 1-D inputs, type
// promotion across inputs, channels-last outputs, out= casting and overlap),
// then the copy: one memcpy per input and row when everything is contiguous and
// of one dtype, else a layout copy (or copy_, to convert) per input.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// Bytes per parallel chunk of the contiguous row copy.
constexpr int64_t kCatGrainBytes = int64_t{1} << 17;  // 128 KiB

/// Empty 1-D inputs are skipped whatever the other inputs' shapes (PyTorch's legacy rule).
bool skipped(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

struct CatMeta {
  int64_t dim = 0;
  std::optional<size_t> valid;  // the first input that is not skipped
  DType dtype = DType::Float32;
  MemoryFormat format = MemoryFormat::Contiguous;
  DimVector sizes{0};
};

/// PyTorch's cat_compute_output_memory_format: channels-last only when every input suggests it.
MemoryFormat output_format(TensorList tensors) {
  std::optional<MemoryFormat> format;
  for (const Tensor& t : tensors) {
    const MemoryFormat f = suggest_memory_format(t);
    if (f == MemoryFormat::Contiguous) return f;
    if (format && *format != f) return MemoryFormat::Contiguous;
    format = f;
  }
  return format.value_or(MemoryFormat::Contiguous);
}

CatMeta cat_meta(TensorList tensors, int64_t dim, const Tensor* out) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  }
  CatMeta meta;
  meta.dim = dim;
  for (const Tensor& t : tensors) {  // the dim wraps against the first input that is not skipped
    if (skipped(t)) continue;
    meta.dim = wrap_dim(dim, t.dim());
    break;
  }
  KILN_CHECK_VALUE(!tensors.empty(), "kiln.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!skipped(tensors[i])) {
      meta.valid = i;
      break;
    }
  }
  meta.format = output_format(tensors);
  meta.dtype = result_type(tensors);
  if (out != nullptr) {
    KILN_CHECK_TYPE(can_cast(meta.dtype, out->dtype()),
                    "kiln.cat(): input types can't be cast to the desired output type ",
                    scalar_type_name(out->dtype()));
    meta.dtype = out->dtype();
  }
  if (!meta.valid) return meta;
  const Tensor& first = tensors[*meta.valid];
  int64_t size_at_dim = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    KILN_CHECK(t.dim() == first.dim(), "Tensors must have same number of dimensions: got ", first.dim(), " and ",
               t.dim());
    for (int64_t d = 0; d < first.dim(); ++d) {
      if (d == meta.dim) continue;
      KILN_CHECK(first.sizes()[d] == t.sizes()[d], "Sizes of tensors must match except in dimension ", meta.dim,
                 ". Expected size ", first.sizes()[d], " but got size ", t.sizes()[d], " for tensor number ", i,
                 " in the list.");
    }
    size_at_dim += t.sizes()[meta.dim];
  }
  meta.sizes = DimVector(first.sizes());
  meta.sizes[meta.dim] = size_at_dim;
  return meta;
}

/// Every input contiguous, of the result's dtype, and the result contiguous: each
/// output row (the dims before `dim`) is the inputs' rows one after another.
bool rows_are_contiguous(const Tensor& result, TensorList tensors) {
  if (!result.is_contiguous()) return false;
  return std::all_of(tensors.begin(), tensors.end(), [&](const Tensor& t) {
    return skipped(t) || (t.is_contiguous() && t.dtype() == result.dtype());
  });
}

/// Whether to write the output row by row, a piece of each input per row, rather
/// than input by input. Row by row writes the output once, in order, but reads
/// one stream per input: past a few inputs and the cache the prefetchers lose
/// them (cat dim 1 of 64 2048x32 float32: 4.0 ms row by row, 1.65 ms input by
/// input, torch 2.1-2.3), while small results stay cached and gain from the one pass
/// (64 256x32 inputs: 0.057 vs 0.089 ms).
bool interleave_rows(const Tensor& result, TensorList tensors) {
  constexpr int64_t kCachedBytes = int64_t{4} << 20;
  return tensors.size() <= 4 || result.numel() * result.itemsize() < kCachedBytes;
}

void cat_contiguous_rows(const Tensor& result, TensorList tensors, int64_t dim) {
  const int64_t itemsize = result.itemsize();
  const int64_t outer = product(result.sizes().subspan(0, static_cast<size_t>(dim)));
  const int64_t inner = product(result.sizes().subspan(static_cast<size_t>(dim) + 1));
  std::vector<RowPiece> pieces;
  for (const Tensor& t : tensors) {
    if (skipped(t) || t.numel() == 0) continue;
    pieces.push_back({static_cast<const char*>(t.data_ptr()), t.sizes()[dim] * inner * itemsize});
  }
  const int64_t row_bytes = result.sizes()[dim] * inner * itemsize;
  char* out = static_cast<char*>(result.data_ptr());
  if (outer == 1) {  // one row: each input is one block, copied in parallel pieces
    int64_t offset = 0;
    for (const RowPiece& p : pieces) {
      copy_strided(out + offset, {1}, p.data, {1}, {p.bytes}, 1);
      offset += p.bytes;
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(kCatGrainBytes / std::max<int64_t>(row_bytes, 1), 1);
  const bool streaming = outer * row_bytes >= kStreamingBytes;
  parallel_for(0, outer, grain, [&](int64_t begin, int64_t end) {
    concat_rows_stub(out, row_bytes, pieces.data(), pieces.size(), begin, end, streaming);
  });
}

/// Fills `result` (already of the meta's shape and dtype) with the inputs.
void cat_fill(const Tensor& result, TensorList tensors, int64_t dim) {
  if (result.numel() == 0 || result.impl()->is_meta()) return;  // a loop: Note [Stubs skip meta tensors]
  if (rows_are_contiguous(result, tensors) && interleave_rows(result, tensors)) {
    cat_contiguous_rows(result, tensors, dim);
    return;
  }
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (skipped(t)) continue;
    const int64_t size = t.sizes()[dim];
    if (t.dtype() == result.dtype()) {
      char* dst = static_cast<char*>(result.data_ptr()) + offset * result.strides()[dim] * result.itemsize();
      copy_strided(dst, result.strides(), static_cast<const char*>(t.data_ptr()), t.strides(), t.sizes(),
                   t.itemsize());
    } else if (t.numel() > 0) {
      kiln::slice(result, dim, offset, offset + size, 1).copy_(t);  // converts
    }
    offset += size;
  }
}

}  // namespace

Tensor cat_cpu(TensorList tensors, int64_t dim) {
  const CatMeta meta = cat_meta(tensors, dim, nullptr);
  const Tensor& like = tensors[meta.valid.value_or(0)];
  Tensor result = empty_strided(meta.sizes, strides_for_memory_format(meta.sizes, meta.format), meta.dtype,
                                like.device());
  if (meta.valid) cat_fill(result, tensors, meta.dim);
  return result;
}

Tensor cat_out_cpu(TensorList tensors, int64_t dim, const Tensor& out) {
  const CatMeta meta = cat_meta(tensors, dim, &out);
  resize_output(out, meta.sizes);
  if (meta.valid && !out.impl()->is_meta()) {
    check_no_internal_overlap(out);
    for (const Tensor& t : tensors) check_no_overlap(out, t);
    cat_fill(out, tensors, meta.dim);
  }
  out.impl()->bump_version();
  return out;
}

}  // namespace kiln::native
