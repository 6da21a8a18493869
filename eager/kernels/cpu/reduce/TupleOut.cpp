// The out= forms of the ops returning two tensors: sort, topk, max.dim, min.dim
// and aminmax (eager/ops/sorting.yaml, reduction.yaml).
#include <tuple>
#include <utility>

#include "eager/core/Error.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [Tuple out= forms]
// -----------------------
// Each form computes its functional op (so the input checks come first, in the
// functional op's words), then checks both outs' dtypes before touching
// either: values (or aminmax's min and max) must have the result's dtype,
// indices int64, in PyTorch's words ("Expected out tensor to have dtype long
// int, but got int instead"), values first. Then each out is resized by
// resize_output's rule (a deprecation warning per out that held elements) and
// the result copied in; the outs come back as they were passed, so the Python
// named tuple holds the caller's own tensors. Computing first makes an out
// that aliases the input safe (PyTorch resizes such an out before reading the
// input, and fails or reads garbage); two outs sharing memory cannot both hold
// their result, so they raise, naming the op (PyTorch checks nothing there and
// leaves one result overwritten by the other, or fails in a later shape check).
// The autograd fallback refuses an input that requires grad, as PyTorch does.

namespace {

/// Whether two outs' elements may share memory (interleaved views count).
bool overlap(const Tensor& a, const Tensor& b) { return a.numel() > 0 && b.numel() > 0 && byte_spans_meet(a, b); }

std::tuple<Tensor, Tensor> write_outs(const char* op, const std::tuple<Tensor, Tensor>& result, const Tensor& out0,
                                      const char* name0, const Tensor& out1, const char* name1) {
  const auto& [r0, r1] = result;
  check_out_dtype(out0, r0.dtype());
  check_out_dtype(out1, r1.dtype());
  KILN_CHECK(!out0.is_same(out1) && !overlap(out0, out1), op, "(): the out tensors ", name0, " and ", name1,
             " share memory, so one result would overwrite the other; pass two separate tensors");
  copy_to_out(r0, out0);
  copy_to_out(r1, out1);
  return {out0, out1};
}

}  // namespace

std::tuple<Tensor, Tensor> sort_stable_out_cpu(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                               bool descending, const Tensor& values, const Tensor& indices) {
  return write_outs("sort", kiln::sort(self, stable, dim, descending), values, "values", indices, "indices");
}

std::tuple<Tensor, Tensor> sort_out_cpu(const Tensor& self, int64_t dim, bool descending, const Tensor& values,
                                        const Tensor& indices) {
  return write_outs("sort", kiln::sort(self, dim, descending), values, "values", indices, "indices");
}

std::tuple<Tensor, Tensor> topk_out_cpu(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                                        const Tensor& values, const Tensor& indices) {
  return write_outs("topk", kiln::topk(self, k, dim, largest, sorted), values, "values", indices, "indices");
}

std::tuple<Tensor, Tensor> max_dim_out_cpu(const Tensor& self, int64_t dim, bool keepdim, const Tensor& max,
                                           const Tensor& max_values) {
  return write_outs("max", kiln::max(self, dim, keepdim), max, "max", max_values, "max_values");
}

std::tuple<Tensor, Tensor> min_dim_out_cpu(const Tensor& self, int64_t dim, bool keepdim, const Tensor& min,
                                           const Tensor& min_indices) {
  return write_outs("min", kiln::min(self, dim, keepdim), min, "min", min_indices, "min_indices");
}

std::tuple<Tensor, Tensor> aminmax_out_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                                           const Tensor& min, const Tensor& max) {
  return write_outs("aminmax", kiln::aminmax(self, dim, keepdim), min, "min", max, "max");
}

}  // namespace kiln::native
