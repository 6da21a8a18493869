// mm, bmm, addmm, dot, mv, and the composites outer, matmul, linear, baddbmm
// and addbmm. Dtype errors are worded as PyTorch's, which differ per op.
// More products: LinalgProducts.cpp; out= forms: generated (out_from_functional), addbmm's in LinalgOut.cpp.
#include <sstream>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/linalg/LinalgHelpers.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

std::string shape_text(const Tensor& t) {
  std::ostringstream os;
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? "x" : "") << t.size(d);
  return os.str();
}

/// The BLAS-backed products take no bool operands. Each op checks its operands share a dtype first, in its own
/// words, so one operand's dtype stands for both.
void check_not_bool(const Tensor& t, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(t.dtype() != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
}

}  // namespace

void check_addmm_dtypes(const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  KILN_CHECK(self.dtype() == mat2.dtype(), "self and mat2 must have the same dtype, but got ",
             scalar_type_name(self.dtype()), " and ", scalar_type_name(mat2.dtype()));
  KILN_CHECK(mat1.dtype() == mat2.dtype(), "mat1 and mat2 must have the same dtype, but got ",
             scalar_type_name(mat1.dtype()), " and ", scalar_type_name(mat2.dtype()));
}

void check_addmv_dtypes(const Tensor& self, const Tensor& mat, const Tensor& vec) {
  KILN_CHECK(self.dtype() == mat.dtype() && mat.dtype() == vec.dtype(),
             "addmv input tensors must have the same dtype, but got ", scalar_type_name(self.dtype()), ", ",
             scalar_type_name(mat.dtype()), ", and ", scalar_type_name(vec.dtype()));
}

Tensor mm_cpu(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 2, "self must be a matrix");
  KILN_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  KILN_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", shape_text(self), " and ",
             shape_text(mat2), ")");
  KILN_CHECK(self.dtype() == mat2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
             typemeta_name(self.dtype()), " != ", typemeta_name(mat2.dtype()));
  check_not_bool(self, "addmm_impl_cpu_");
  Tensor out = self.size(1) == 0 ? zeros({self.size(0), mat2.size(1)}, self.dtype(), self.device())
                                 : empty({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  gemm_into(self, mat2, out, Scalar(int64_t{1}), Scalar(int64_t{0}));
  return out;
}

Tensor bmm_cpu(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  KILN_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  KILN_CHECK(self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1), "Expected size for first two dimensions of batch2 tensor to be: [",
             self.size(0), ", ", self.size(2), "] but got: [", mat2.size(0), ", ", mat2.size(1), "].");
  KILN_CHECK(self.dtype() == mat2.dtype(), "expected scalar type ", scalar_type_name(self.dtype()), " but found ",
             scalar_type_name(mat2.dtype()));
  check_not_bool(self, "bmm");
  const int64_t b = self.size(0), m = self.size(1), n = mat2.size(2), k = self.size(2);
  // beta = 0: gemm_into writes every element (k = 0 included) without reading it, so no zero fill.
  Tensor out = empty({b, m, n}, self.dtype(), self.device());
  if (out.impl()->is_meta()) return out;  // Note [Stubs skip meta tensors]
  auto products = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      gemm_into(select_impl(self, 0, i), select_impl(mat2, 0, i), select_impl(out, 0, i), Scalar(int64_t{1}),
                Scalar(int64_t{0}));
    }
  };
  // Note [bmm splits small products by batch]: a product below ~256^3
  // multiply-adds is too small for the BLAS to spread over threads well
  // (attention's [heads, 256, 64] products), so the batch is split across
  // kiln's threads instead, each gemm single-threaded (sync_blas_threads).
  // The split is by batch element, so results do not depend on the thread count.
  constexpr int64_t kSmallProduct = int64_t{1} << 24;
  if (b > 1 && m * n * k <= kSmallProduct) {
    parallel_for(0, b, 1, products);
  } else {
    products(0, b);
  }
  return out;
}

Tensor addmm_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  KILN_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  KILN_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", shape_text(mat1), " and ",
             shape_text(mat2), ")");
  check_addmm_dtypes(self, mat1, mat2);
  check_not_bool(mat1, "addmm_impl_cpu_");
  const int64_t m = mat1.size(0), n = mat2.size(1);
  const std::vector<int64_t> shape{m, n};
  // out starts as beta * self broadcast to [m, n] (beta == 0 ignores self, nan included).
  Tensor out = zeros(shape, mat1.dtype(), mat1.device());
  const bool use_self = !beta.equals(0.0);
  if (use_self) {
    KILN_CHECK(self.dim() <= 2, "addmm: self must be broadcastable to ", IntArrayRef(shape), ", got ", self.sizes());
    const size_t lead = 2 - static_cast<size_t>(self.dim());
    DimVector strides(2, 0);
    for (size_t d = 0; d < 2; ++d) {
      if (d < lead) continue;
      const int64_t s = self.size(static_cast<int64_t>(d - lead));
      KILN_CHECK(s == shape[d] || s == 1, "The expanded size of the tensor (", shape[d],
                 ") must match the existing size (", s, ") at non-singleton dimension ", d, ".  Target sizes: [", m,
                 ", ", n, "].  Tensor sizes: ", self.sizes());
      strides[d] = s == 1 ? 0 : self.stride(static_cast<int64_t>(d - lead));
    }
    copy_(out, as_strided_impl(self, shape, strides, self.storage_offset()));
  }
  gemm_into(mat1, mat2, out, alpha, use_self ? beta : Scalar(int64_t{0}));
  return out;
}

Tensor dot_cpu(const Tensor& self, const Tensor& tensor) {
  KILN_CHECK(self.dim() == 1 && tensor.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ",
             tensor.dim(), "D tensors");
  KILN_CHECK(self.dtype() == tensor.dtype(), "dot : expected both vectors to have same dtype, but found ",
             scalar_type_name(self.dtype()), " and ", scalar_type_name(tensor.dtype()));
  KILN_CHECK(self.numel() == tensor.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
             "] and src [", tensor.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
             tensor.numel(), " elements respectively");
  const int64_t k = self.numel();
  Tensor out = zeros({1, 1}, self.dtype(), self.device());
  gemm_into(as_strided_impl(self, std::vector<int64_t>{1, k}, std::vector<int64_t>{k ? self.stride(0) * k : 1, self.stride(0)},
                            self.storage_offset()),
            as_strided_impl(tensor, std::vector<int64_t>{k, 1}, std::vector<int64_t>{tensor.stride(0), 1},
                            tensor.storage_offset()),
            out, Scalar(int64_t{1}), Scalar(int64_t{0}));
  return kiln::view(out, std::vector<int64_t>{});
}

Tensor mv_cpu(const Tensor& self, const Tensor& vec) {
  KILN_CHECK(self.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ", self.dim(), ", ",
             self.dim(), ", ", vec.dim());
  KILN_CHECK(self.size(1) == vec.size(0), "size mismatch, got input (", self.size(0), "), mat (", self.size(0), "x",
             self.size(1), "), vec (", vec.size(0), ")");
  check_addmv_dtypes(vec, self, vec);  // PyTorch's mv makes its result from vec, so that comes first
  check_not_bool(self, "addmv_impl_cpu");
  Tensor out = zeros({self.size(0), 1}, self.dtype(), self.device());
  gemm_into(self, as_strided_impl(vec, std::vector<int64_t>{vec.size(0), 1}, std::vector<int64_t>{vec.stride(0), 1},
                                  vec.storage_offset()),
            out, Scalar(int64_t{1}), Scalar(int64_t{0}));
  return kiln::view(out, std::vector<int64_t>{self.size(0)});
}

// --- composites: their parts go through the dispatcher (autograd, capture) ---

// Note [matmul is a composite]
// ----------------------------
// matmul only rearranges its operands and calls dot/mv/mm/bmm, every step
// through the dispatcher (Tensor methods, never the non-dispatching helpers of
// Views.h), so autograd and capture see ordinary ops and need no matmul
// formula. As in PyTorch: a >= 3-D left operand times a 1-D/2-D right one folds
// its batch into the rows of one mm; everything else broadcasts the batch
// dimensions, expands both operands to them and runs one bmm.
Tensor matmul(const Tensor& self, const Tensor& other) {
  const int64_t da = self.dim(), db = other.dim();
  KILN_CHECK(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db,
             "D");
  if (da == 1 && db == 1) return kiln::dot(self, other);
  if (da == 2 && db == 1) return kiln::mv(self, other);
  if (da == 1 && db == 2) return kiln::mm(self.unsqueeze(0), other).squeeze(0);
  if (da == 2 && db == 2) return kiln::mm(self, other);
  if (da >= 3 && db <= 2) {
    // Fold the batch into rows: [..., m, k] @ [k, n] -> [(...m), k] @ [k, n] (mv for a 1-D right operand).
    const int64_t k = self.size(-1);
    // The row count is explicit: with k = 0, [-1, 0] would not say how many rows there are.
    const int64_t rows = product(self.sizes().subspan(0, self.dim() - 1));
    const Tensor folded = kiln::reshape(self, std::vector<int64_t>{rows, k});
    const Tensor flat = db == 2 ? kiln::mm(folded, other) : kiln::mv(folded, other);
    DimVector shape(self.sizes());
    if (db == 2) {
      shape.back() = other.size(1);
    } else {
      shape.pop_back();
    }
    return kiln::reshape(flat, shape);
  }
  const Tensor a = da == 1 ? self.unsqueeze(0) : self;
  const Tensor b = db == 1 ? other.unsqueeze(1) : other;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const DimVector batch = broadcast_shapes(a.sizes().subspan(0, a.dim() - 2), b.sizes().subspan(0, b.dim() - 2));
  const int64_t batch_numel = product(batch);
  DimVector a_shape(batch), b_shape(batch);
  a_shape.push_back(m);
  a_shape.push_back(k);
  b_shape.push_back(b.size(-2));
  b_shape.push_back(n);
  const Tensor a3 = kiln::reshape(a.expand(a_shape), std::vector<int64_t>{batch_numel, m, k});
  const Tensor b3 = kiln::reshape(b.expand(b_shape), std::vector<int64_t>{batch_numel, b.size(-2), n});
  DimVector shape(batch);
  if (da > 1) shape.push_back(m);
  if (db > 1) shape.push_back(n);
  return kiln::reshape(kiln::bmm(a3, b3), shape);
}

namespace {
bool is_zero(const Scalar& s) { return s.equals(0.0); }
bool is_one(const Scalar& s) { return s.equals(1.0); }
}  // namespace

/// PyTorch reads a floating-point alpha or beta of the addmm family as an integer (truncated) when the
/// tensors are integers, so the result keeps their dtype.
Scalar in_dtype_of(const Scalar& s, DType dtype) {
  if (!is_integral(dtype, /*include_bool=*/false) || !s.is_floating_point()) return s;
  return Scalar(static_cast<int64_t>(s.to_double()));
}

/// On bool tensors the family is logical: (beta && self) || (alpha && product), a bool result.
Tensor scaled_sum_bool(const Tensor& self, const Tensor& product, const Scalar& beta, const Scalar& alpha) {
  const Tensor scaled = is_zero(alpha) ? kiln::logical_and(product, kiln::logical_not(product)) : product;
  if (is_zero(beta)) {
    KILN_CHECK(self.dim() <= product.dim(), "self must be broadcastable to ", product.sizes(), ", got ", self.sizes());
    (void)broadcast_shapes(self.sizes(), product.sizes());
    return scaled;
  }
  return kiln::logical_or(self, scaled);
}

Tensor scaled_sum(const Tensor& self, const Tensor& product, const Scalar& beta_given, const Scalar& alpha_given) {
  if (product.dtype() == DType::Bool && self.dtype() == DType::Bool) return scaled_sum_bool(self, product, beta_given,
                                                                                              alpha_given);
  const Scalar beta = in_dtype_of(beta_given, product.dtype()), alpha = in_dtype_of(alpha_given, product.dtype());
  const Tensor scaled = is_one(alpha) ? product : kiln::mul(product, alpha);
  if (is_zero(beta)) {
    KILN_CHECK(self.dim() <= product.dim(), "self must be broadcastable to ", product.sizes(), ", got ", self.sizes());
    (void)broadcast_shapes(self.sizes(), product.sizes());
    return scaled;
  }
  return kiln::add(is_one(beta) ? self : kiln::mul(self, beta), scaled);
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  KILN_CHECK(self.dim() == 1 && vec2.dim() == 1, "outer: expected 1-D tensors, got ", self.dim(), "-D and ",
             vec2.dim(), "-D");
  return kiln::mul(self.unsqueeze(1), vec2);
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  KILN_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  KILN_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  KILN_CHECK(self.dtype() == batch1.dtype(), "Input dtypes must be the same, got: input ", typemeta_name(self.dtype()),
             ", batch1: ", typemeta_name(batch1.dtype()), ", batch2: ", typemeta_name(batch2.dtype()));
  return scaled_sum(self, kiln::bmm(batch1, batch2), beta, alpha);
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  KILN_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  KILN_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  KILN_CHECK(batch1.size(0) == batch2.size(0), "batch1 and batch2 must have same number of batches, got ",
             batch1.size(0), " and ", batch2.size(0));
  KILN_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
             batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  check_addmm_dtypes(self, batch1, batch2);  // PyTorch runs addbmm as an addmm
  // The sum over the batch of batch1[b] @ batch2[b] is one mm of the batch laid side by side:
  // [n, (B k)] @ [(B k), p].
  const int64_t n = batch1.size(1), k = batch1.size(2), p = batch2.size(2), b = batch1.size(0);
  const Tensor lhs = kiln::reshape(batch1.transpose(0, 1), std::vector<int64_t>{n, b * k});
  const Tensor rhs = kiln::reshape(batch2, std::vector<int64_t>{b * k, p});
  return scaled_sum(self, kiln::mm(lhs, rhs), beta, alpha);
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  const bool has_bias = bias && bias->defined();
  // PyTorch runs a 1-D or 2-D input, or a contiguous one, with a bias as one addmm (bias, input folded to
  // rows, weight^T), so it meets addmm's dtype checks.
  if (has_bias && (input.dim() <= 2 || input.is_contiguous())) check_addmm_dtypes(*bias, input, weight);
  Tensor out = kiln::matmul(input, kiln::transpose(weight, 0, 1));
  if (!has_bias) return out;
  // Otherwise PyTorch adds the bias in place, so the result keeps the product's dtype.
  return kiln::add(out, bias->dtype() == out.dtype() ? *bias : bias->to(out.dtype()));
}


}  // namespace kiln::native
