// Backward formulas of the triangular solve and of the LAPACK decompositions
// (eager/ops/lapack.yaml), written with kiln ops so they record for a second
// derivative. Real matrices, except linalg_eig's (complex by nature) and the
// complex solve's.
//
// Note [Decomposition gradients]
// ------------------------------
// Each formula is the adjoint of the decomposition's differential; with
// <X, Y> = sum(X * Y) and ^T the transpose of the last two dims:
//   solve_triangular, X = A^-1 B:  gB = A^-T g, gA = -gB X^T (right: X = B A^-1,
//     gB = g A^-T, gA = -X^T gB), kept to A's triangle (without the diagonal
//     when unitriangular: those entries are never read).
//   cholesky, A = L L^T: L^-1 dA L^-T = L^-1 dL + (L^-1 dL)^T, so
//     gA = L^-T sym(tril(L^T gL)) L^-1 with sym(M) = (M + tril(M, -1)^T) / 2,
//     the gradient on symmetric matrices (PyTorch's too).
//   eigh, A = V diag(w) V^T: dw = diag(V^T dA V), dV = V (F o V^T dA V) with
//     F_ij = 1 / (w_j - w_i); restricted to symmetric dA,
//     gA = V (diag(gw) + skew(V^T gV) / 2 / E) V^T, E_ij = w_j - w_i.
//   qr, A = Q R with m >= n: the strictly lower part of Q^T dA R^-1 is Q^T dQ's,
//     which gives gA = (gQ + Q copy_upper(gR R^T - Q^T gQ)) R^-T, copy_upper
//     mirroring the upper triangle into the lower. For m < n, A = [X | Y] with
//     X = Q U square: gY = Q gV, and X's gradient is the square case's with
//     gQ + Y gV^T for gQ.
//   lu_factor, P^T A = L U (L unit lower, U upper; square): L^-1 P^T dA U^-1 has
//     L^-1 dL strictly below the diagonal and dU U^-1 on and above it, so
//     gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. Tall (m > n): the rows
//     below the square part, L2 = A2 U^-1, give gA2 = gL2 U^-T and take
//     L2^T gA2 off gU; wide (m < n): U2 = L^-1 A2 gives gA2 = L^-T gU2 and
//     takes gA2 U2^T off gL.
//   svd, A = U diag(S) V^T (thin): with E_ij = S_j^2 - S_i^2 and
//     skew(X) = X - X^T,
//     gA = U [skew(U^T gU) / E S + S skew(V^T gV) / E + diag(gS)] V^T
//          + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T);
//     full_matrices' extra columns do not enter (they are narrowed off first).
// Complex matrices: every ^T above is ^H (mH), and copy_upper keeps the
// mirrored diagonal real (PyTorch's syminvadj). eig, A = V diag(L) V^-1:
//   gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H with
//   E_ij = L_j - L_i; a real A takes the real part. The complex SVD adds
//   i Im(diag(U^H gU)) / S to the inner diagonal (each singular pair's phase).
// Undefined incoming gradients arrive as zeros (the generated nodes fill them).
#pragma once

#include <algorithm>
#include <complex>
#include <string_view>

#include "eager/core/Error.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

namespace linalg_detail {

[[nodiscard]] inline Tensor mT(const Tensor& t) { return kiln::transpose(t, -2, -1); }
/// The conjugate transpose: mT for real matrices; the formulas' ^T is ^H for complex ones.
[[nodiscard]] inline Tensor mH(const Tensor& t) { return kiln::adjoint(t); }

/// A boolean identity of size n, broadcastable against (..., n, n).
[[nodiscard]] inline Tensor identity_mask(int64_t n, const Tensor& like) {
  return kiln::eye(n, DType::Bool, like.device());
}

/// The triangle of a triangular solve's A its result depends on.
[[nodiscard]] inline Tensor keep_triangle(const Tensor& g, bool upper, bool unitriangular) {
  const int64_t offset = unitriangular ? 1 : 0;
  return upper ? kiln::triu(g, offset) : kiln::tril(g, -offset);
}

/// (M + M^T) with M's upper triangle mirrored into its lower one (diagonal once).
[[nodiscard]] inline Tensor copy_upper(const Tensor& m) {
  if (!is_complex(m.dtype())) return kiln::add(kiln::triu(m), mT(kiln::triu(m, 1)));
  // X + X^H - Re(diag X) with X = triu(m): the mirrored matrix is Hermitian, so its diagonal is real.
  const Tensor X = kiln::triu(m);
  const Tensor d = kiln::diagonal(X, 0, -2, -1).contiguous();
  const Tensor real_d = kiln::select(kiln::view_as_real(d), -1, 0);
  return kiln::sub(kiln::add(X, mH(X)), kiln::diag_embed(real_d, 0, -2, -1));
}

/// gA of A = Q R for m >= n (Q m x n, R n x n upper).
[[nodiscard]] inline Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  const Tensor M = kiln::sub(kiln::matmul(gR, mH(R)), kiln::matmul(mH(Q), gQ));
  const Tensor B = kiln::add(gQ, kiln::matmul(Q, copy_upper(M)));
  // B R^-H: solve X R^H = B with R^H lower triangular.
  return kiln::linalg_solve_triangular(mH(R), B, /*upper=*/false, /*left=*/false, /*unitriangular=*/false);
}

/// L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T for square L (unit lower) and U (upper).
[[nodiscard]] inline Tensor lu_square_backward(const Tensor& gL, const Tensor& gU, const Tensor& L, const Tensor& U) {
  const Tensor M = kiln::add(kiln::tril(kiln::matmul(mH(L), gL), -1), kiln::triu(kiln::matmul(gU, mH(U))));
  const Tensor left = kiln::linalg_solve_triangular(mH(L), M, /*upper=*/true, /*left=*/true, /*unitriangular=*/true);
  return kiln::linalg_solve_triangular(mH(U), left, /*upper=*/false, /*left=*/false, false);
}

}  // namespace linalg_detail

/// d linalg_lu_factor_ex / d A, from the packed factors' gradient (strictly lower: L's, upper: U's).
[[nodiscard]] inline Tensor lu_factor_ex_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots) {
  using namespace linalg_detail;
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  const Tensor L = kiln::add(kiln::narrow(kiln::tril(LU, -1), -1, 0, k), kiln::eye(m, k, LU.dtype(), LU.device()));
  const Tensor U = kiln::narrow(kiln::triu(LU), -2, 0, k);
  const Tensor gL = kiln::narrow(kiln::tril(grad, -1), -1, 0, k);
  const Tensor gU = kiln::narrow(kiln::triu(grad), -2, 0, k);
  Tensor permuted;  // the gradient of P^T A
  if (m == n) {
    permuted = lu_square_backward(gL, gU, L, U);
  } else if (m > n) {
    const Tensor L1 = kiln::narrow(L, -2, 0, n), L2 = kiln::narrow(L, -2, n, m - n);
    const Tensor g2 = kiln::linalg_solve_triangular(mH(U), kiln::narrow(gL, -2, n, m - n), false, false, false);
    const Tensor g1 = lu_square_backward(kiln::narrow(gL, -2, 0, n), kiln::sub(gU, kiln::matmul(mH(L2), g2)), L1, U);
    const Tensor parts[2] = {g1, g2};
    permuted = kiln::cat(TensorList(parts, 2), -2);
  } else {
    const Tensor U1 = kiln::narrow(U, -1, 0, m), U2 = kiln::narrow(U, -1, m, n - m);
    const Tensor g2 = kiln::linalg_solve_triangular(mH(L), kiln::narrow(gU, -1, m, n - m), true, true, true);
    const Tensor g1 = lu_square_backward(kiln::sub(gL, kiln::matmul(g2, mH(U2))), kiln::narrow(gU, -1, 0, m), L, U1);
    const Tensor parts[2] = {g1, g2};
    permuted = kiln::cat(TensorList(parts, 2), -1);
  }
  // gA = P permuted: row i of P^T A is row perm[i] of A.
  const Tensor perm = kiln::unsqueeze(kiln::_lu_pivots_to_permutation(pivots, m), -1);
  const Tensor index = perm.expand(permuted.sizes());
  return kiln::scatter(kiln::zeros(permuted.sizes(), permuted.dtype(), permuted.device()), -2, index, permuted);
}

/// d linalg_solve_triangular / d self (A).
[[nodiscard]] inline Tensor solve_triangular_backward_self(const Tensor& grad, const Tensor& A, const Tensor& result,
                                                           bool upper, bool left, bool unitriangular) {
  using namespace linalg_detail;
  const Tensor gB = kiln::linalg_solve_triangular(mH(A), grad, !upper, left, unitriangular);
  const Tensor gA = left ? kiln::matmul(gB, mH(result)) : kiln::matmul(mH(result), gB);
  return keep_triangle(kiln::neg(gA), upper, unitriangular);
}

/// d linalg_solve_triangular / d B.
[[nodiscard]] inline Tensor solve_triangular_backward_B(const Tensor& grad, const Tensor& A, bool upper, bool left,
                                                        bool unitriangular) {
  return kiln::linalg_solve_triangular(linalg_detail::mH(A), grad, !upper, left, unitriangular);
}

/// d linalg_cholesky_ex / d self, from the factor's gradient.
[[nodiscard]] inline Tensor cholesky_backward(const Tensor& grad, bool upper, const Tensor& factor) {
  using namespace linalg_detail;
  const Tensor L = upper ? mH(factor) : factor;
  const Tensor gL = upper ? mH(grad) : grad;
  const Tensor M = kiln::tril(kiln::matmul(mH(L), gL));
  const Tensor S = kiln::mul(kiln::add(M, mH(kiln::tril(M, -1))), 0.5);
  const Tensor left = kiln::linalg_solve_triangular(mH(L), S, /*upper=*/true, /*left=*/true, false);
  return kiln::linalg_solve_triangular(L, left, /*upper=*/false, /*left=*/false, false);
}

/// d _linalg_eigh / d A, from the eigenvalues' and eigenvectors' gradients.
[[nodiscard]] inline Tensor linalg_eigh_backward(const Tensor& g_values, const Tensor& g_vectors,
                                                 const Tensor& values, const Tensor& vectors, bool compute_v) {
  using namespace linalg_detail;
  KILN_CHECK(compute_v, "linalg_eigh_backward: torch.linalg.eigvalsh: the eigenvectors were not computed; "
             "differentiate through linalg.eigh instead");
  const Tensor& V = vectors;
  const int64_t n = values.size(-1);
  const Tensor VtgV = kiln::matmul(mH(V), g_vectors);
  const Tensor skew_half = kiln::mul(kiln::sub(VtgV, mH(VtgV)), 0.5);
  const Tensor mask = identity_mask(n, values);
  const Tensor gaps = kiln::where(mask, 1.0, kiln::sub(kiln::unsqueeze(values, -2), kiln::unsqueeze(values, -1)));
  const Tensor inner = kiln::add(kiln::div(skew_half, gaps), kiln::diag_embed(g_values, 0, -2, -1));
  return kiln::matmul(kiln::matmul(V, inner), mH(V));
}

/// d _linalg_eig / d A (Note [Decomposition gradients]): with V's columns of unit norm,
///   gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H, E_ij = L_j - L_i,
/// the second term's diagonal replaced by gL's. A real A takes the real part.
[[nodiscard]] inline Tensor linalg_eig_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V,
                                                const Tensor& A, bool compute_v) {
  using namespace linalg_detail;
  KILN_CHECK(compute_v, "linalg_eig_backward: torch.linalg.eigvals: the eigenvectors were not computed; "
             "differentiate through linalg.eig instead");
  const int64_t n = L.size(-1);
  const Tensor Vh = kiln::adjoint(V);
  const Tensor VhgV = kiln::matmul(Vh, gV);
  const Tensor diag_VhgV = kiln::diagonal(VhgV, 0, -2, -1);
  const Tensor real_diag = kiln::select(kiln::view_as_real(diag_VhgV.contiguous()), -1, 0);
  // The loss must not depend on each eigenvector's phase (V -> V e^{i phi} leaves the decomposition valid).
  const Tensor imag_diag = kiln::select(kiln::view_as_real(diag_VhgV.contiguous()), -1, 1);
  KILN_CHECK(*kiln::all(kiln::le(kiln::abs(imag_diag), 1e-2)).data_ptr<bool>(),
             "linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication by "
             "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.");
  Tensor inner = kiln::sub(VhgV, kiln::matmul(Vh, kiln::mul(V, kiln::unsqueeze(real_diag, -2))));
  const Tensor Lc = kiln::conj_physical(L);
  const Tensor mask = identity_mask(n, L);
  const Tensor gaps = kiln::where(mask, 1.0, kiln::sub(kiln::unsqueeze(Lc, -2), kiln::unsqueeze(Lc, -1)));
  inner = kiln::add(kiln::where(mask, 0, kiln::div(inner, gaps)), kiln::diag_embed(gL, 0, -2, -1));
  const Tensor gA = kiln::_linalg_solve(Vh, kiln::matmul(inner, Vh), "linalg.eig");
  return is_complex(A.dtype()) ? gA : kiln::select(kiln::view_as_real(gA.contiguous()), -1, 0).contiguous();
}

/// d linalg_qr / d A.
[[nodiscard]] inline Tensor linalg_qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R,
                                               std::string_view mode) {
  using namespace linalg_detail;
  KILN_CHECK(mode != "r", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
             "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const int64_t m = Q.size(-2), n = R.size(-1);
  KILN_CHECK(!(mode == "complete" && m > n),
             "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  if (m >= n) return qr_backward_tall(gQ, gR, Q, R);
  // Wide: A = [X | Y], X = Q U (m x m), Y = Q V.
  const Tensor U = kiln::narrow(R, -1, 0, m), gU = kiln::narrow(gR, -1, 0, m);
  const Tensor gV = kiln::narrow(gR, -1, m, n - m);
  const Tensor Y = kiln::matmul(Q, kiln::narrow(R, -1, m, n - m));
  const Tensor gX = qr_backward_tall(kiln::add(gQ, kiln::matmul(Y, mH(gV))), gU, Q, U);
  const Tensor gY = kiln::matmul(Q, gV);
  const Tensor parts[2] = {gX, gY};
  return kiln::cat(TensorList(parts, 2), -1);
}

/// d _linalg_svd / d A, from the gradients of U, S and Vh.
[[nodiscard]] inline Tensor svd_backward(const Tensor& gU_full, const Tensor& gS, const Tensor& gVh_full,
                                         const Tensor& U_full, const Tensor& S, const Tensor& Vh_full,
                                         bool full_matrices, bool compute_uv) {
  using namespace linalg_detail;
  KILN_CHECK(compute_uv, "linalg.svd: the singular vectors were not computed (compute_uv=False); differentiate "
             "through linalg.svd or linalg.svdvals");
  const int64_t k = S.size(-1);
  const Tensor U = full_matrices ? kiln::narrow(U_full, -1, 0, k) : U_full;
  const Tensor Vh = full_matrices ? kiln::narrow(Vh_full, -2, 0, k) : Vh_full;
  if (!gU_full.defined() && !gVh_full.defined()) {
    // Only the singular values have a gradient (svdvals, the matrix 2-norm): U diag(gS) Vh, with no
    // division by the gaps between singular values, so repeated or zero ones (a zero matrix, the
    // identity) give the gradient, not NaN from 0 / 0, as torch's svd_backward.
    if (!gS.defined()) {
      DimVector shape(U_full.sizes());  // A's: (..., m, n)
      shape.back() = Vh_full.size(-1);
      return kiln::zeros(shape, U_full.dtype(), U_full.device());
    }
    return kiln::matmul(kiln::mul(U, kiln::unsqueeze(gS, -2)), Vh);
  }
  // One of gU, gVh undefined (that factor unused): zeros of its shape.
  const Tensor gU_given = gU_full.defined() ? gU_full : kiln::zeros_like(U_full);
  const Tensor gVh_given = gVh_full.defined() ? gVh_full : kiln::zeros_like(Vh_full);
  const Tensor gS_given = gS.defined() ? gS : kiln::zeros_like(S);
  const Tensor gU = full_matrices ? kiln::narrow(gU_given, -1, 0, k) : gU_given;
  const Tensor gV = mH(full_matrices ? kiln::narrow(gVh_given, -2, 0, k) : gVh_given);
  const Tensor V = mH(Vh);
  const int64_t m = U.size(-2), n = V.size(-2);
  const Tensor UtgU = kiln::matmul(mH(U), gU);
  const Tensor VtgV = kiln::matmul(mH(V), gV);
  const Tensor S2 = kiln::mul(S, S);
  const Tensor mask = identity_mask(k, S);
  const Tensor gaps = kiln::where(mask, 1.0, kiln::sub(kiln::unsqueeze(S2, -2), kiln::unsqueeze(S2, -1)));
  const Tensor S_row = kiln::unsqueeze(S, -2);  // scales columns: X diag(S)
  const Tensor S_col = kiln::unsqueeze(S, -1);  // scales rows: diag(S) X
  // skew(X) / E off the diagonal (a complex skew-Hermitian X has an imaginary diagonal: handled below)
  auto off_diagonal = [&](const Tensor& X) { return kiln::where(mask, 0, kiln::div(kiln::sub(X, mH(X)), gaps)); };
  Tensor inner = kiln::mul(off_diagonal(UtgU), S_row);
  inner = kiln::add(inner, kiln::mul(S_col, off_diagonal(VtgV)));
  inner = kiln::add(inner, kiln::diag_embed(gS_given, 0, -2, -1));
  if (is_complex(U.dtype())) {
    // + i Im(diag(U^H gU)) / S on the diagonal: the phase of each singular pair.
    const Tensor d = kiln::diagonal(UtgU, 0, -2, -1).contiguous();
    const Tensor imag_d = kiln::select(kiln::view_as_real(d), -1, 1);
    const Tensor phase = kiln::mul(kiln::div(imag_d, S), Scalar(std::complex<double>(0.0, 1.0)));
    inner = kiln::add(inner, kiln::diag_embed(phase, 0, -2, -1));
  }
  Tensor gA = kiln::matmul(kiln::matmul(U, inner), Vh);
  if (m > k) {
    const Tensor outside = kiln::sub(gU, kiln::matmul(U, UtgU));  // (I - U U^H) gU
    gA = kiln::add(gA, kiln::matmul(kiln::div(outside, S_row), Vh));
  }
  if (n > k) {
    const Tensor outside = kiln::sub(gV, kiln::matmul(V, VtgV));  // (I - V V^H) gV
    gA = kiln::add(gA, kiln::matmul(U, mH(kiln::div(outside, S_row))));
  }
  return gA;
}

}  // namespace kiln::autograd::formula
