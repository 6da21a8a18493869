// Composite shape ops that build on the copying kernels: cat's aliases, stack
// and its h/v/d/column variants, fliplr/flipud/rot90, diag (CompositeImplicit
// in eager/ops/shape.yaml; they call the dispatcher API).
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// stack's inputs, each with a new dim of size 1 at `dim` (wrapped against
/// rank + 1), after stack's checks in PyTorch's order and words.
std::vector<Tensor> stack_inputs(TensorList tensors, int64_t dim, int64_t* wrapped) {
  KILN_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  *wrapped = wrap_dim(dim, tensors[0].dim() + 1);
  const IntArrayRef first = tensors[0].sizes();
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const IntArrayRef sizes = tensors[i].sizes();
    KILN_CHECK(sizes.size() == first.size() && std::equal(sizes.begin(), sizes.end(), first.begin()),
               "stack expects each tensor to be equal size, but got ", first, " at entry 0 and ", sizes,
               " at entry ", i);
    out.push_back(kiln::unsqueeze(tensors[i], *wrapped));
  }
  return out;
}

/// PyTorch's atleast_1d/2d/3d for the h/v/d stacks.
Tensor at_least(const Tensor& t, int64_t rank) {
  if (t.dim() >= rank) return t;
  if (t.dim() == 0) return kiln::reshape(t, DimVector(static_cast<size_t>(rank), 1));
  if (rank == 2) return kiln::unsqueeze(t, 0);             // (n) -> (1, n)
  if (t.dim() == 1) return kiln::unsqueeze(kiln::unsqueeze(t, 0), -1);  // (n) -> (1, n, 1)
  return kiln::unsqueeze(t, -1);                           // (m, n) -> (m, n, 1)
}

std::vector<Tensor> all_at_least(TensorList tensors, int64_t rank, const char* op) {
  KILN_CHECK(!tensors.empty(), op, " expects a non-empty TensorList");
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(at_least(t, rank));
  return out;
}

/// column_stack's inputs: 0-dim and 1-dim tensors become (n, 1) columns.
std::vector<Tensor> columns(TensorList tensors) {
  KILN_CHECK(!tensors.empty(), "column_stack expects a non-empty TensorList");
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.dim() <= 1 ? kiln::reshape(t, {t.numel(), 1}) : t);
  return out;
}

int64_t hstack_dim(const std::vector<Tensor>& inputs) { return inputs[0].dim() == 1 ? 0 : 1; }

}  // namespace

// --- cat's aliases -------------------------------------------------------------------

Tensor concatenate(TensorList tensors, int64_t dim) { return kiln::cat(tensors, dim); }
Tensor concatenate_out(TensorList tensors, int64_t dim, const Tensor& out) { return kiln::cat_out(out, tensors, dim); }
Tensor concat(TensorList tensors, int64_t dim) { return kiln::cat(tensors, dim); }
Tensor concat_out(TensorList tensors, int64_t dim, const Tensor& out) { return kiln::cat_out(out, tensors, dim); }

// --- stacks ----------------------------------------------------------------------------

Tensor stack(TensorList tensors, int64_t dim) {
  int64_t wrapped = 0;
  const std::vector<Tensor> inputs = stack_inputs(tensors, dim, &wrapped);
  return kiln::cat(inputs, wrapped);
}

Tensor stack_out(TensorList tensors, int64_t dim, const Tensor& out) {
  int64_t wrapped = 0;
  const std::vector<Tensor> inputs = stack_inputs(tensors, dim, &wrapped);
  return kiln::cat_out(out, inputs, wrapped);
}

Tensor hstack(TensorList tensors) {
  const std::vector<Tensor> inputs = all_at_least(tensors, 1, "hstack");
  return kiln::cat(inputs, hstack_dim(inputs));
}
Tensor hstack_out(TensorList tensors, const Tensor& out) {
  const std::vector<Tensor> inputs = all_at_least(tensors, 1, "hstack");
  return kiln::cat_out(out, inputs, hstack_dim(inputs));
}

Tensor vstack(TensorList tensors) { return kiln::cat(all_at_least(tensors, 2, "vstack"), 0); }
Tensor vstack_out(TensorList tensors, const Tensor& out) {
  return kiln::cat_out(out, all_at_least(tensors, 2, "vstack"), 0);
}

Tensor dstack(TensorList tensors) { return kiln::cat(all_at_least(tensors, 3, "dstack"), 2); }
Tensor dstack_out(TensorList tensors, const Tensor& out) {
  return kiln::cat_out(out, all_at_least(tensors, 3, "dstack"), 2);
}

Tensor column_stack(TensorList tensors) { return kiln::hstack(columns(tensors)); }
Tensor column_stack_out(TensorList tensors, const Tensor& out) { return kiln::hstack_out(out, columns(tensors)); }

// --- flips and rotations ---------------------------------------------------------------

Tensor fliplr(const Tensor& self) {
  KILN_CHECK(self.dim() >= 2, "Input must be >= 2-d.");
  return kiln::flip(self, {1});
}

Tensor flipud(const Tensor& self) {
  KILN_CHECK(self.dim() >= 1, "Input must be >= 1-d.");
  return kiln::flip(self, {0});
}

/// Rotates by 90 degrees k times in the plane of dims, from the first towards the second.
Tensor rot90(const Tensor& self, int64_t k, IntArrayRef dims) {
  const int64_t total_dims = self.dim();
  KILN_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
  KILN_CHECK(total_dims >= 2, "expected total dims >= 2, but got total dims = ", total_dims);
  const int64_t dim0 = wrap_dim(dims[0], total_dims);
  const int64_t dim1 = wrap_dim(dims[1], total_dims);
  KILN_CHECK(dim0 != dim1, "expected rotation dims to be different, but got dim0 = ", dims[0], " and dim1 = ", dims[1]);
  switch ((4 + k % 4) % 4) {
    case 1: return kiln::flip(self, {dims[1]}).transpose_(dims[0], dims[1]);
    case 2: return kiln::flip(self, dims);
    case 3: return kiln::flip(self, {dims[0]}).transpose_(dims[0], dims[1]);
    default: return kiln::clone(self, MemoryFormat::Contiguous);
  }
}

// --- diag ---------------------------------------------------------------------------------

/// 1-D: a matrix with self on diagonal `diagonal`; 2-D: a copy of that diagonal.
Tensor diag(const Tensor& self, int64_t diagonal) {
  KILN_CHECK(self.dim() == 1 || self.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 1) return kiln::diag_embed(self, diagonal, 0, 1);
  return kiln::clone(kiln::diagonal(self, diagonal, 0, 1), MemoryFormat::Contiguous);
}

Tensor diag_out(const Tensor& self, int64_t diagonal, const Tensor& out) {
  KILN_CHECK(self.dim() == 1 || self.dim() == 2, "Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 1) {
    KILN_CHECK(can_cast(self.dtype(), out.dtype()), "diag: result type ", scalar_type_name(self.dtype()),
               " can't be cast to the desired out= type ", scalar_type_name(out.dtype()));
  }
  check_out_dtype(out, self.dtype());
  const Tensor result = kiln::diag(self, diagonal);
  return copy_to_out(result, out);
}

}  // namespace kiln::native
