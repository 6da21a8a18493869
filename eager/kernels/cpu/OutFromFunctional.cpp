// The out= dtype rules of the generated out= forms (Note [Out= dtype rules]).
#include "eager/kernels/cpu/OutFromFunctional.h"

#include "eager/core/Error.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"

namespace kiln::native {

Tensor out_castable(const char*, const Tensor& result, const Tensor& out) { return copy_castable_to_out(result, out); }

Tensor out_exact_dtype(const char*, const Tensor& result, const Tensor& out) {
  check_out_dtype(out, result.dtype());
  return copy_to_out(result, out);
}

Tensor out_input_dtype(const char*, const Tensor& result, const Tensor& out) {
  KILN_CHECK(result.dtype() == out.dtype(), "Expected the dtype for input and out to match, but got ",
             scalar_type_name(result.dtype()), " for input's dtype and ", scalar_type_name(out.dtype()),
             " for out's dtype.");
  return copy_to_out(result, out);
}

Tensor out_bool(const char* op, const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == DType::Bool || out.dtype() == DType::UInt8, op,
             " only supports bool tensor for result, got: ", scalar_type_name(out.dtype()));
  return copy_to_out(result, out);  // a uint8 result (all/any of uint8) into a bool out too, as PyTorch allows
}

Tensor out_floating(const char* op, const Tensor& result, const Tensor& out) {
  KILN_CHECK(is_floating_point(out.dtype()), op, "(): Expected floating point type for result tensor, but got: ",
             scalar_type_name(out.dtype()));
  return copy_castable_to_out(result, out);
}

Tensor out_dot_dtype(const char*, const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "result dtype ", scalar_type_name(out.dtype()),
             " does not match input dtype ", scalar_type_name(result.dtype()));
  return copy_to_out(result, out);
}

Tensor out_tensordot_dtype(const char*, const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "tensordot: Expected the output tensor to have dtype ",
             scalar_type_name(result.dtype()), ", but got an output tensor with dtype ", scalar_type_name(out.dtype()));
  return copy_to_out(result, out);
}

Tensor out_addmm_dtype(const char*, const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "self and mat2 must have the same dtype, but got ",
             scalar_type_name(out.dtype()), " and ", scalar_type_name(result.dtype()));
  return copy_to_out(result, out);
}

Tensor out_multi_dot_dtype(const char*, const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "multi_dot(): expected out tensor to have dtype ",
             typemeta_name(result.dtype()), " but got ", typemeta_name(out.dtype()));
  return copy_to_out(result, out);
}

DType in_out_dtype(const char*, std::optional<DType> dtype, const Tensor& out) {
  if (dtype) check_out_dtype(out, *dtype);
  return dtype.value_or(out.dtype());
}

DType in_out_dtype_floating(const char* op, std::optional<DType> dtype, const Tensor& out) {
  const DType compute = in_out_dtype(op, dtype, out);
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(compute), "\"", op, "_cpu\" not implemented for '",
                             scalar_type_name(compute), "'");
  return compute;
}

DType in_out_dtype_not_bool(const char* op, std::optional<DType> dtype, const Tensor& out) {
  const DType compute = in_out_dtype(op, dtype, out);
  KILN_CHECK_NOT_IMPLEMENTED(compute != DType::Bool, "\"", op, "_out_cpu\" not implemented for '",
                             scalar_type_name(compute), "'");
  return compute;
}

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

}  // namespace

std::tuple<Tensor, Tensor> outs_pair(const char* op, const std::tuple<Tensor, Tensor>& result, const Tensor& out0,
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

}  // namespace kiln::native
