// The CUDA matrix products through cuBLAS: mm, bmm, addmm (matmul and linear
// are composites over these); addmm with a row bias through cuBLASLt's bias
// epilogue (Note [addmm's bias epilogue]).
#include <cstdlib>
#include <optional>
#include <string>

#include "eager/core/Error.h"
#include "eager/cuda/Cublas.h"
#include "eager/cuda/CublasLt.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"

namespace kiln::native {

namespace {

/// A row-major matrix operand as cuBLAS (column-major) sees it: the tensor,
/// whether cuBLAS must transpose it, and its leading dimension. Dims -2, -1.
struct BlasOperand {
  Tensor t;
  bool trans;
  int64_t ld;
};

BlasOperand blas_operand(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.sizes()[static_cast<size_t>(nd - 2)];
  const int64_t cols = t.sizes()[static_cast<size_t>(nd - 1)];
  const int64_t rs = t.strides()[static_cast<size_t>(nd - 2)];
  const int64_t cs = t.strides()[static_cast<size_t>(nd - 1)];
  if ((cs == 1 || cols == 1) && rs >= std::max<int64_t>(1, cols)) return {t, false, rs};
  if ((rs == 1 || rows == 1) && cs >= std::max<int64_t>(1, rows)) return {t, true, cs};
  const Tensor c = to_copy_across_devices(t, std::nullopt, t.device(), false, MemoryFormat::Contiguous);
  return {c, false, std::max<int64_t>(1, cols)};
}

void check_same_dtype(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
             cpp_type_name(a.dtype()), " != ", cpp_type_name(b.dtype()));
}

/// The cuBLAS arguments of out[b] = alpha * a[b] @ b[b] + beta * out[b] (see batched_gemm); ta and
/// tb keep the operands (copies when cuBLAS cannot read them in place) alive.
cuda::GemmArgs gemm_args(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta, Tensor& ta_keep,
                         Tensor& tb_keep) {
  const int64_t batch = a.sizes()[0];
  const int64_t m = a.sizes()[1];
  const int64_t k = a.sizes()[2];
  const int64_t n = b.sizes()[2];
  const auto [ta, a_trans, lda] = blas_operand(a);
  const auto [tb, b_trans, ldb] = blas_operand(b);
  cuda::GemmArgs g;
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's first operand is b.
  g.transa = b_trans;
  g.transb = a_trans;
  g.m = n;
  g.n = m;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  g.a = tb.data_ptr();
  g.lda = ldb;
  g.stride_a = tb.strides()[0];
  g.b = ta.data_ptr();
  g.ldb = lda;
  g.stride_b = ta.strides()[0];
  g.c = out.data_ptr();
  g.ldc = std::max<int64_t>(1, n);
  g.stride_c = m * n;
  g.batch = batch;
  ta_keep = ta;
  tb_keep = tb;
  return g;
}

/// out[b] = alpha * a[b] @ b[b] + beta * out[b] for 3-D a [B, m, k], b [B, k, n] and a contiguous out [B, m, n].
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (out.numel() == 0) return;
  Tensor ta;
  Tensor tb;
  const cuda::GemmArgs g = gemm_args(out, a, b, alpha, beta, ta, tb);
  const int device = cuda_kernels::device_of(out);
  cuda::gemm(cuda::current_stream(device), out.dtype(), g);
}

// Note [addmm's bias epilogue]
// ----------------------------
// addmm(bias, a, b) with beta == 1 and a bias that is one row broadcast over the
// result (nn.Linear's case: bias [n], or [1, n]) runs as one cuBLASLt matmul
// whose epilogue adds the bias as it writes the product, instead of a copy of
// the broadcast bias into the result and a GEMM with beta = 1 reading it back:
// one kernel and one pass over the result fewer. float32, float16 and bfloat16
// (cuBLASLt's bias epilogue computes in float); anything else, a cuBLASLt that
// does not load, or a shape it has no algorithm for takes the cuBLAS path.
// KILN_CUBLASLT=0 turns it off (for comparing the two).
constexpr size_t kLtWorkspaceBytes = size_t{4} << 20;

bool lt_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_CUBLASLT");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

/// The bias as cuBLASLt reads it (n contiguous values), if `self` is one row broadcast over [m, n].
std::optional<Tensor> bias_row(const Tensor& self, int64_t n) {
  if (self.dim() == 1 && self.size(0) == n && (self.stride(0) == 1 || n == 1)) return self;
  if (self.dim() == 2 && self.size(1) == n && (self.size(0) == 1 || self.stride(0) == 0) &&
      (self.stride(1) == 1 || n == 1)) {
    return self.select(0, 0);
  }
  return std::nullopt;
}

bool addmm_with_bias_epilogue(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                              double alpha) {
  const DType dt = out.dtype();
  if (!lt_enabled() || !(dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16)) return false;
  const std::optional<Tensor> bias = bias_row(self, mat2.sizes()[1]);
  if (!bias || out.numel() == 0 || mat1.sizes()[1] == 0) return false;
  Tensor ta;
  Tensor tb;
  const cuda::GemmArgs g = gemm_args(out.unsqueeze(0), mat1.unsqueeze(0), mat2.unsqueeze(0), alpha, 0.0, ta, tb);
  const Tensor workspace = kiln::empty({static_cast<int64_t>(kLtWorkspaceBytes)}, DType::UInt8, out.device());
  const int device = cuda_kernels::device_of(out);
  return cuda::gemm_bias_epilogue(cuda::current_stream(device), dt, g, bias->data_ptr(), workspace.data_ptr(),
                                  kLtWorkspaceBytes);
}

Tensor bmm_cuda(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  KILN_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  const auto ops = cuda_kernels::on_one_device({self, mat2}, "bmm");
  check_same_dtype(self, mat2);
  KILN_CHECK(self.sizes()[0] == mat2.sizes()[0] && self.sizes()[2] == mat2.sizes()[1],
             "Expected size for first two dimensions of batch2 tensor to be: [", self.sizes()[0], ", ",
             self.sizes()[2], "] but got: [", mat2.sizes()[0], ", ", mat2.sizes()[1], "].");
  cuda::DeviceGuard guard(cuda_kernels::device_of(self));
  Tensor out = kiln::empty({self.sizes()[0], self.sizes()[1], mat2.sizes()[2]}, self.dtype(), self.device());
  if (self.sizes()[2] == 0) {
    cuda_fill(out, Scalar(int64_t{0}));
    return out;
  }
  batched_gemm(out, ops[0], ops[1], 1.0, 0.0);
  return out;
}

Tensor mm_cuda(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 2, "self must be a matrix");
  KILN_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  KILN_CHECK(self.sizes()[1] == mat2.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (", self.sizes()[0], "x",
             self.sizes()[1], " and ", mat2.sizes()[0], "x", mat2.sizes()[1], ")");
  return bmm_cuda(self.unsqueeze(0), mat2.unsqueeze(0)).squeeze(0);
}

Tensor addmm_cuda(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "mat1 and mat2 must be matrices");
  KILN_CHECK(mat1.sizes()[1] == mat2.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (", mat1.sizes()[0], "x",
             mat1.sizes()[1], " and ", mat2.sizes()[0], "x", mat2.sizes()[1], ")");
  const auto ops = cuda_kernels::on_one_device({self, mat1, mat2}, "addmm");
  check_same_dtype(mat1, mat2);
  check_same_dtype(ops[0], mat1);
  cuda::DeviceGuard guard(cuda_kernels::device_of(mat1));
  Tensor out = kiln::empty({mat1.sizes()[0], mat2.sizes()[1]}, mat1.dtype(), mat1.device());
  const double b = beta.to_double();
  if (b == 1.0 && addmm_with_bias_epilogue(out, ops[0], ops[1], ops[2], alpha.to_double())) return out;
  if (b != 0.0) {
    cuda_copy(out, ops[0], false);  // self broadcast to [m, n]
  } else {
    cuda_fill(out, Scalar(int64_t{0}));  // beta == 0 ignores self, NaNs included
  }
  if (mat1.sizes()[1] == 0) return b == 0.0 || b == 1.0 ? out : out.mul(beta);
  batched_gemm(out.unsqueeze(0), ops[1].unsqueeze(0), ops[2].unsqueeze(0), alpha.to_double(), b);
  return out;
}

}  // namespace

void register_cuda_blas_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("mm", &mm_cuda);
  lib->impl("bmm", &bmm_cuda);
  lib->impl("addmm", &addmm_cuda);
}

}  // namespace kiln::native
