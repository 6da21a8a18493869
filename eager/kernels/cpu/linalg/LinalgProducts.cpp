// Products built from mm/bmm/dot/mv and the shape ops: addmv, addr, inner,
// vdot, trace, kron, tensordot, matrix_power, linalg.multi_dot, chain_matmul,
// and the in-place forms of the addmm family. All composites: every step goes
// through the dispatcher, so autograd and capture see ordinary ops and these
// need no derivative formulas of their own.
#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/linalg/LinalgHelpers.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t lo = -std::max<int64_t>(rank, 1), hi = std::max<int64_t>(rank, 1) - 1;
  KILN_CHECK_INDEX(dim >= lo && dim <= hi, "Dimension out of range (expected to be in range of [", lo, ", ", hi,
                   "], but got ", dim, ")");
  (void)op;
  return dim < 0 ? dim + rank : dim;
}

/// PyTorch's in-place rule for the addmm family: the result must have self's shape.
Tensor copy_result_into(const Tensor& self, const Tensor& result) {
  KILN_CHECK(std::equal(self.sizes().begin(), self.sizes().end(), result.sizes().begin(), result.sizes().end()), "Bad in-place call: input tensor size ", self.sizes(),
             " and output tensor size ", result.sizes(), " should match");
  return self.copy_(result);
}

}  // namespace

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1, "vector + matrix @ vector expected, got ",
             self.dim(), ", ", mat.dim(), ", ", vec.dim());
  KILN_CHECK(mat.size(1) == vec.size(0) && (self.dim() == 0 || self.size(0) == 1 || self.size(0) == mat.size(0)),
             "size mismatch, got input (", self.dim() == 0 ? 1 : self.size(0), "), mat (", mat.size(0), "x",
             mat.size(1), "), vec (", vec.size(0), ")");
  check_addmv_dtypes(self, mat, vec);
  return scaled_sum(self, kiln::mv(mat, vec), beta, alpha);
}

Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  KILN_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  // The outer product as a broadcast multiply: every dtype, bool included (and/or), as PyTorch's addr.
  return scaled_sum(self, kiln::mul(vec1.unsqueeze(1), vec2.unsqueeze(0)), beta, alpha);
}

Tensor tensordot(const Tensor& self, const Tensor& other, IntArrayRef dims_self, IntArrayRef dims_other) {
  KILN_CHECK(dims_self.size() == dims_other.size(), "both dimension lists should have same length");
  KILN_CHECK(self.dtype() == other.dtype(), "both inputs should have same dtype");
  Tensor a = self, b = other;
  std::vector<bool> contracted_a(static_cast<size_t>(self.dim()), false), contracted_b(static_cast<size_t>(other.dim()), false);
  std::vector<int64_t> da, db;
  int64_t k = 1;
  for (size_t i = 0; i < dims_self.size(); ++i) {
    const int64_t d1 = wrap_dim(dims_self[i], self.dim(), "tensordot");
    const int64_t d2 = wrap_dim(dims_other[i], other.dim(), "tensordot");
    KILN_CHECK(!contracted_a[static_cast<size_t>(d1)] && !contracted_b[static_cast<size_t>(d2)],
               "tensordot: dim ", contracted_a[static_cast<size_t>(d1)] ? d1 : d2, " appears multiple times in the list of dims");
    contracted_a[static_cast<size_t>(d1)] = contracted_b[static_cast<size_t>(d2)] = true;
    const int64_t s1 = self.size(d1), s2 = other.size(d2);
    if (s2 == 1 && s1 != 1) {
      a = kiln::sum(a, std::vector<int64_t>{d1}, true);  // a size-1 partner contracts with the sum
    } else if (s1 == 1 && s2 != 1) {
      b = kiln::sum(b, std::vector<int64_t>{d2}, true);
    } else {
      KILN_CHECK(s1 == s2, "contracted dimensions need to match, but first has size ", s1, " in dim ", d1,
                 " and second has size ", s2, " in dim ", d2);
    }
    da.push_back(d1);
    db.push_back(d2);
    k *= a.size(d1);
  }
  // a -> [free_a..., contracted...] as [M, K]; b -> [contracted..., free_b...] as [K, N].
  std::vector<int64_t> perm_a, perm_b(db), out_shape;
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (contracted_a[static_cast<size_t>(d)]) continue;
    perm_a.push_back(d);
    out_shape.push_back(a.size(d));
    m *= a.size(d);
  }
  perm_a.insert(perm_a.end(), da.begin(), da.end());
  for (int64_t d = 0; d < other.dim(); ++d) {
    if (contracted_b[static_cast<size_t>(d)]) continue;
    perm_b.push_back(d);
    out_shape.push_back(b.size(d));
    n *= b.size(d);
  }
  const Tensor lhs = kiln::reshape(kiln::permute(a, perm_a), std::vector<int64_t>{m, k});
  const Tensor rhs = kiln::reshape(kiln::permute(b, perm_b), std::vector<int64_t>{k, n});
  return kiln::reshape(kiln::mm(lhs, rhs), out_shape);
}

Tensor inner(const Tensor& self, const Tensor& other) {
  if (self.dim() == 0 || other.dim() == 0) return kiln::mul(self, other);
  KILN_CHECK(self.size(-1) == other.size(-1), "inner() the last dimension must match on both input tensors but got shapes ",
             self.sizes(), " and ", other.sizes());
  return kiln::tensordot(self, other, std::vector<int64_t>{-1}, std::vector<int64_t>{-1});
}

Tensor vdot(const Tensor& self, const Tensor& other) {
  return kiln::dot(is_complex(self.dtype()) ? kiln::conj_physical(self) : self, other);
}

Tensor trace(const Tensor& self) {
  KILN_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Bool, "\"trace\" not implemented for 'Bool'");
  return kiln::sum(kiln::diagonal(self));  // integers sum to int64, as PyTorch's trace
}

Tensor kron(const Tensor& self, const Tensor& other) {
  // Pad both to one rank r; then kron(a, b)[i * b_d + j] = a[i] * b[j] per dim: multiply
  // a as [a_0, 1, a_1, 1, ...] by b as [1, b_0, 1, b_1, ...] and merge each pair.
  const int64_t rank = std::max(self.dim(), other.dim());
  std::vector<int64_t> a_shape, b_shape, out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t ad = d - (rank - self.dim()), bd = d - (rank - other.dim());
    const int64_t sa = ad >= 0 ? self.size(ad) : 1, sb = bd >= 0 ? other.size(bd) : 1;
    a_shape.insert(a_shape.end(), {sa, 1});
    b_shape.insert(b_shape.end(), {1, sb});
    out_shape.push_back(sa * sb);
  }
  return kiln::reshape(kiln::mul(kiln::reshape(self, a_shape), kiln::reshape(other, b_shape)), out_shape);
}

Tensor matrix_power(const Tensor& self, int64_t n) {
  KILN_CHECK(self.dim() >= 2, "linalg.matrix_power: The input tensor A must have at least 2 dimensions.");
  KILN_CHECK(self.size(-1) == self.size(-2), "linalg.matrix_power: A must be batches of square matrices, but they are ",
             self.size(-2), " by ", self.size(-1), " matrices");
  KILN_CHECK_NOT_IMPLEMENTED(n >= 0, "linalg.matrix_power: negative powers (n = ", n,
                             ") need a matrix inverse, which kiln does not have yet");
  if (n == 0) {
    const Tensor eye = kiln::eye(self.size(-1), self.dtype());
    return kiln::clone(eye.expand(self.sizes()));
  }
  if (n == 1) return kiln::clone(self);
  // Square and multiply: the bits of n from the lowest.
  Tensor result, power = self;
  for (int64_t bits = n;;) {
    if (bits & 1) result = result.defined() ? kiln::matmul(result, power) : power;
    bits >>= 1;
    if (bits == 0) break;
    power = kiln::matmul(power, power);
  }
  return result;
}

Tensor linalg_multi_dot(TensorList tensors) {
  const int64_t count = static_cast<int64_t>(tensors.size());
  KILN_CHECK(count >= 2, "multi_dot(): expected at least 2 tensors but got ", count);
  const int64_t first = tensors[0].dim(), last = tensors[count - 1].dim();
  KILN_CHECK(first == 1 || first == 2, "multi_dot(): the first tensor must be 1D or 2D but got ", first, "D");
  KILN_CHECK(last == 1 || last == 2, "multi_dot(): the last tensor must be 1D or 2D but got ", last, "D");
  std::vector<Tensor> mats;
  for (int64_t i = 0; i < count; ++i) {
    const Tensor& t = tensors[i];
    KILN_CHECK(t.dtype() == tensors[0].dtype(), "multi_dot(): all tensors must have be the same dtype but tensor 0 is ",
               typemeta_name(tensors[0].dtype()), " and tensor ", i, " ", typemeta_name(t.dtype()));
    if (i > 0 && i < count - 1) KILN_CHECK(t.dim() == 2, "multi_dot(): tensor ", i, " must be 2D but got ", t.dim(), "D");
    mats.push_back(i == 0 && first == 1 ? t.unsqueeze(0) : (i == count - 1 && last == 1 ? t.unsqueeze(1) : t));
  }
  for (int64_t i = 0; i + 1 < count; ++i) {
    KILN_CHECK(mats[i].size(1) == mats[i + 1].size(0), "multi_dot(): tensors ", i, " and ", i + 1, " with shapes ",
               tensors[i].sizes(), " and ", tensors[i + 1].sizes(), " cannot be multiplied");
  }
  // The cheapest order (the textbook matrix-chain dynamic program over multiply-adds).
  const size_t c = mats.size();
  std::vector<int64_t> dims{mats[0].size(0)};
  for (const Tensor& t : mats) dims.push_back(t.size(1));
  std::vector<std::vector<int64_t>> cost(c, std::vector<int64_t>(c, 0)), split(c, std::vector<int64_t>(c, 0));
  for (size_t len = 1; len < c; ++len) {
    for (size_t i = 0; i + len < c; ++i) {
      const size_t j = i + len;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t s = i; s < j; ++s) {
        const int64_t q = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1];
        if (q < cost[i][j]) {
          cost[i][j] = q;
          split[i][j] = static_cast<int64_t>(s);
        }
      }
    }
  }
  std::function<Tensor(size_t, size_t)> product = [&](size_t i, size_t j) -> Tensor {
    if (i == j) return mats[i];
    const size_t s = static_cast<size_t>(split[i][j]);
    return kiln::mm(product(i, s), product(s + 1, j));
  };
  Tensor result = product(0, c - 1);
  if (first == 1) result = result.squeeze(0);
  if (last == 1) result = result.squeeze(-1);
  return result;
}

Tensor chain_matmul(TensorList matrices) {
  KILN_CHECK(!matrices.empty(), "chain_matmul(): Expected one or more matrices");
  for (size_t i = 0; i < matrices.size(); ++i) {
    KILN_CHECK(matrices[i].dim() == 2, "chain_matmul(): Expected 2D tensor at position ", i, ", but got ",
               matrices[i].dim(), "D");
  }
  if (matrices.size() == 1) return kiln::clone(matrices[0]);
  return kiln::linalg_multi_dot(matrices);
}

// --- in-place forms ---

Tensor addmm_(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  return copy_result_into(self, kiln::addmm(self, mat1, mat2, beta, alpha));
}
Tensor baddbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) {
  return copy_result_into(self, kiln::baddbmm(self, batch1, batch2, beta, alpha));
}
Tensor addbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) {
  return copy_result_into(self, kiln::addbmm(self, batch1, batch2, beta, alpha));
}
Tensor addmv_(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  return copy_result_into(self, kiln::addmv(self, mat, vec, beta, alpha));
}
Tensor addr_(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  return copy_result_into(self, kiln::addr(self, vec1, vec2, beta, alpha));
}

}  // namespace kiln::native
