// Advanced indexing (PyTorch's make_info / AdvancedIndex): how index tensors
// (int64, int32, bool and uint8 masks) select from a tensor, as a plan the
// gather (index) and the put (index_put_) both run.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::indexing {

// Note [Where advanced indices put their dims]
// --------------------------------------------
// The index tensors broadcast together to one shape B. When every index is
// next to the others (x[:, i, j]), B takes their place in the result:
// x.shape[:first] + B + x.shape[last+1:]. When a plain dim separates them
// (x[i, :, j]) there is no natural place, so B goes first and the other dims
// follow in order: B + (the dims not indexed). Masks count as one index per
// mask dim (their nonzero() columns). kiln does what PyTorch's make_info does:
// transpose the indexed dims to the front when they are not adjacent, then
// restride (Note [Indexing by byte offsets]).

/// compute_offsets' contract (IndexUtils.h), on some device: the CPU's loop or a CUDA kernel.
using ComputeOffsets = std::function<std::optional<BadIndex>(Tensor& offsets, const Tensor& index, int64_t size,
                                                             int64_t stride_bytes, IndexWrap wrap, bool accumulate)>;

struct AdvancedIndex {
  Tensor self;                        // the indexed tensor, its indexed dims moved to the front when not adjacent
  std::vector<Tensor> indices;        // one per dim of `self` (undefined: not indexed), broadcast to `index_shape`
  DimVector index_shape;              // B
  int64_t dims_before = 0;            // dims of `self` before the indexed ones
  int64_t dims_after = 0;             // dims of `self` after them
  DimVector result_shape;             // self.shape[:dims_before] + B + self.shape[dims_before + k:]

  /// `self` restrided to result_shape: stride 0 over B (the start of each selected slice).
  [[nodiscard]] Tensor restrided_self() const;
  /// The int64 byte offsets of the selected elements, checked (IndexError naming the
  /// first bad index: "index 5 is out of bounds for dimension 0 with size 3"),
  /// restrided to result_shape. `compute` computes them on self's device.
  [[nodiscard]] Tensor offsets(const ComputeOffsets& compute = compute_offsets) const;
};

/// Checks the indices (types, mask shapes, broadcasting) and plans the indexing,
/// reading no element of `self` and checking no index value yet. A CUDA mask has its
/// nonzero() computed on the CPU (a copy there and back).
[[nodiscard]] AdvancedIndex make_advanced_index(const Tensor& self, OptionalTensorList indices);

/// index_put_'s plan after its checks (overlap, value shape and dtype), shared by the CPU and
/// CUDA kernels: what to put (`value`, a one-element value converted to self's dtype when
/// PyTorch hands the put to masked_fill_) and where (`info`).
struct IndexPutPlan {
  AdvancedIndex info;
  Tensor value;
};
[[nodiscard]] IndexPutPlan plan_index_put(const Tensor& self, OptionalTensorList indices, const Tensor& values,
                                          bool accumulate);

}  // namespace kiln::native::indexing
