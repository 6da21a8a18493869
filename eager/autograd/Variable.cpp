// Tensor operations the autograd engine needs.
#include "eager/autograd/Variable.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd {

Tensor detached_alias(const Tensor& t) {
  auto impl = make_intrusive<TensorImpl>(t.storage(), t.dtype(), t.sizes(), t.strides(), t.storage_offset());
  impl->share_version_counter(t.impl()->version_counter());
  return Tensor(std::move(impl));
}

// One functional op (clone), not empty + copy_: a graph capture recording a backward (kiln.compile's
// joint and training-step captures) then holds no in-place write, which would keep the graph unfused.
Tensor detached_copy(const Tensor& t) { return kiln::clone(detached_alias(t), MemoryFormat::Contiguous); }

Tensor to_dtype(const Tensor& t, DType dtype) {
  Tensor out = kiln::empty(t.sizes(), dtype, t.device());
  out.copy_(detached_alias(t));
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return kiln::add(a, b); }

Tensor add_(const Tensor& a, const Tensor& b) { return a.add_(b); }

Tensor sum_to(const Tensor& grad, IntArrayRef shape, const char* node_name) {
  const IntArrayRef gshape = grad.sizes();
  if (gshape.size() == shape.size() && std::equal(shape.begin(), shape.end(), gshape.begin())) return grad;
  KILN_CHECK(shape.size() <= gshape.size(), "Function ", node_name, " returned an invalid gradient - got ", gshape,
             " but expected shape compatible with ", shape);
  const size_t lead = gshape.size() - shape.size();
  DimVector dims;
  for (size_t i = 0; i < gshape.size(); ++i) {
    const int64_t target = i < lead ? 1 : shape[i - lead];
    KILN_CHECK(target == gshape[i] || target == 1, "Function ", node_name, " returned an invalid gradient - got ",
               gshape, " but expected shape compatible with ", shape);
    if (target == 1 && gshape[i] != 1) dims.push_back(static_cast<int64_t>(i));
  }
  // One sum over every broadcast dim (through the dispatcher, so create_graph records it).
  const Tensor out = dims.empty() ? grad : kiln::sum(grad, IntArrayRef(dims), true);
  return (out.is_contiguous() ? out : detached_copy(out)).view(shape);
}

}  // namespace kiln::autograd
