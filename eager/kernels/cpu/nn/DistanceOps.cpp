// cdist (eager/ops/nn.yaml), composed of dispatching ops.
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include "eager/core/Error.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [cdist]
// ------------
// cdist(x1 [*, P, M], x2 [*, R, M]) -> [*, P, R], batch dims broadcast, as PyTorch:
//  - p = 2 through matmul (PyTorch's _euclidean_dist, op for op, so values and
//    gradients agree): [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, clamped at 1e-30,
//    then sqrt, when compute_mode asks for it or (by default) when P or R > 25;
//  - otherwise from the differences d = x1[:, None] - x2[None]: sum |d|^p, then
//    the 1/p-th power (p = 1: sum |d|; p = 0: the count of nonzero d (NaN for a
//    NaN difference, where PyTorch counts 1); p = inf:
//    max |d|). The root is taken only of positive sums and zero distances give
//    0 (a where on both sides of the root), so their gradient is 0 rather than
//    NaN, as PyTorch's _cdist_backward gives.

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  KILN_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  KILN_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  KILN_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
             " X2: ", x2.size(-1));
  KILN_CHECK(is_floating_point(x1.dtype()), "cdist only supports floating-point dtypes, X1 got: ",
             scalar_type_name(x1.dtype()));
  KILN_CHECK(is_floating_point(x2.dtype()), "cdist only supports floating-point dtypes, X2 got: ",
             scalar_type_name(x2.dtype()));
  KILN_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  KILN_CHECK(mode >= 0 && mode <= 2, "possible modes: None, 0, 1, 2, but was: ", mode);
  const bool use_mm = p == 2 && (mode == 1 || (mode == 0 && (x1.size(-2) > 25 || x2.size(-2) > 25)));
  if (use_mm) {
    const Tensor n1 = kiln::sum(x1.pow(2), IntArrayRef({-1}), true);
    const Tensor n2 = kiln::sum(x2.pow(2), IntArrayRef({-1}), true);
    const Tensor a_parts[] = {x1.mul(-2), n1, kiln::ones_like(n1)};
    const Tensor b_parts[] = {x2, kiln::ones_like(n2), n2};
    const Tensor a = kiln::cat(a_parts, -1);
    const Tensor b = kiln::cat(b_parts, -1);
    return kiln::sqrt(kiln::clamp_min(kiln::matmul(a, b.transpose(-2, -1)), 1e-30));
  }
  const Tensor d = kiln::sub(x1.unsqueeze(-2), x2.unsqueeze(-3));
  // p = 0: sign(|d|) is 1 where d != 0, and its gradient is 0 (the result still requires grad, as PyTorch's).
  if (p == 0) return kiln::sum(kiln::sign(kiln::abs(d)), IntArrayRef({-1}));
  if (std::isinf(p)) return kiln::amax(kiln::abs(d), {-1});
  if (p == 1) return kiln::sum(kiln::abs(d), IntArrayRef({-1}));
  const Tensor s = p == 2 ? kiln::sum(d.mul(d), IntArrayRef({-1})) : kiln::sum(kiln::abs(d).pow(p), IntArrayRef({-1}));
  const Tensor positive = kiln::gt(s, 0);
  const Tensor safe = kiln::where(positive, s, 1);
  return kiln::where(positive, p == 2 ? kiln::sqrt(safe) : safe.pow(1.0 / p), 0);
}

}  // namespace kiln::native
