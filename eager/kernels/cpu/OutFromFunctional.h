// The rules the generated out= forms apply after running their functional op
// (Note [Out= forms from the functional op], tools/opgen/out_from_functional.py).
#pragma once

#include <optional>
#include <tuple>

#include "eager/ops/Tensor.h"

namespace kiln::native {

// Note [Out= dtype rules]
// -----------------------
// An out= form that computes its functional op and copies the result into
// `out` (resized by resize_output's rules and warning) checks out's dtype as
// PyTorch does for that op, each in PyTorch's words. Each rule takes the op's
// name (for messages), the functional result and out, and returns out:
//  - out_castable: any out the result can be cast to (mean, var, std; outer,
//    addr and kron, which PyTorch computes pointwise);
//  - out_exact_dtype: out must have the result's dtype (the BLAS products:
//    "Expected out tensor to have dtype float, but got long int instead";
//    argmax/argmin, whose result is int64; linalg_vector_norm);
//  - out_input_dtype: amax/amin, the input's dtype (the result's);
//  - out_bool: all/any, a bool or uint8 out;
//  - out_floating: logsumexp, a floating out the result can be cast to;
//  - in_out_dtype (and _floating, _not_bool): sum, nansum, prod, cumsum and
//    cumprod compute in out's dtype when dtype= is not given; the generated
//    form passes it as the functional op's dtype, then copies as out_castable;
//  - out_dot_dtype, out_tensordot_dtype, out_multi_dot_dtype: the result's
//    dtype, in dot's, tensordot's (inner's too) and multi_dot's words;
//  - out_addmm_dtype: addbmm, which PyTorch runs as an addmm into out, so out
//    meets addmm's check that self (there: out) and mat2 share a dtype.
// Computing first and copying costs one pass over the output, and makes an
// out that aliases an input safe. outs_pair is the rule of the ops returning
// two tensors (Note [Tuple out= forms] in OutFromFunctional.cpp).

Tensor out_castable(const char* op, const Tensor& result, const Tensor& out);
Tensor out_exact_dtype(const char* op, const Tensor& result, const Tensor& out);
Tensor out_input_dtype(const char* op, const Tensor& result, const Tensor& out);
Tensor out_bool(const char* op, const Tensor& result, const Tensor& out);
Tensor out_floating(const char* op, const Tensor& result, const Tensor& out);
Tensor out_dot_dtype(const char* op, const Tensor& result, const Tensor& out);
Tensor out_tensordot_dtype(const char* op, const Tensor& result, const Tensor& out);
Tensor out_multi_dot_dtype(const char* op, const Tensor& result, const Tensor& out);
Tensor out_addmm_dtype(const char* op, const Tensor& result, const Tensor& out);

/// The dtype sum, nansum, prod, cumsum and cumprod compute in for out= (PyTorch's
/// structured reductions): dtype= when given (out must have it), else out's dtype.
/// The _floating and _not_bool forms also refuse the dtypes PyTorch has no loop
/// for (nansum: integers; the scans: bool), naming its kernel.
DType in_out_dtype(const char* op, std::optional<DType> dtype, const Tensor& out);
DType in_out_dtype_floating(const char* op, std::optional<DType> dtype, const Tensor& out);
DType in_out_dtype_not_bool(const char* op, std::optional<DType> dtype, const Tensor& out);

std::tuple<Tensor, Tensor> outs_pair(const char* op, const std::tuple<Tensor, Tensor>& result, const Tensor& out0,
                                     const char* name0, const Tensor& out1, const char* name1);

}  // namespace kiln::native
