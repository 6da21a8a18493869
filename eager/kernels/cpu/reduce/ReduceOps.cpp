// Reductions and scans (eager/ops/reduction.yaml): dims, output shapes and
// dtypes, PyTorch's errors, and the reshaping into rows; the loops are in
// per_capability/ReduceOpsKernel.cpp. Also the composites (var/std overloads,
// logsumexp, nansum, max/min of two tensors).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/reduce/ReduceOpsStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(reduce_fn, reduce_stub);
KILN_DEFINE_DISPATCH(scan_fn, scan_stub);

// Note [Reductions as rows]
// -------------------------
// Every reduction is computed on a contiguous 3-D [batch, len, inner] block
// whose middle dim is reduced: out[b, k] = reduce over r of x[b, r, k]. When
// the input's memory is dense, its dims (size-1 dims dropped, the rest taken
// in memory order, by stride) fall into at most kept | reduced | kept runs,
// and its kept dims lie in memory in their logical order, the block is a view
// of the input itself: a full reduction of a transposed tensor reads memory in
// order, sum(dim=0) reduces across rows with the inner dim vectorised, a
// last-dim reduction reduces contiguous rows. Otherwise the input is permuted
// so the reduced dims come last and copied into [rows, len, 1] (the layout
// copies are fast, Note [Layout copies]). Reading in memory order changes only
// the order of a sum's terms, as PyTorch's reordering does; argmax/argmin and
// max.dim's indices count in logical order, so they take the view only when
// one dim is reduced. A long single row (a full reduction) is split into
// fixed-size chunks combined in order: the result never depends on the thread
// count. float16/bfloat16 compute in float and integers sum in int64, as
// PyTorch's accumulate types.

namespace {

struct ReducePlan {
  DimVector kept_shape;    // output shape with keepdim=True
  DimVector out_shape;     // output shape as asked
  std::vector<bool> reduced;
  int64_t rows = 1;
  int64_t len = 1;
};

/// dims: nullopt or empty means every dim (PyTorch's `dim=None` / `dim=[]`).
ReducePlan plan(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim) {
  ReducePlan p;
  const int64_t nd = self.dim();
  p.reduced.assign(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  if (!dims || dims->empty()) {
    std::fill(p.reduced.begin(), p.reduced.end(), true);
  } else {
    for (int64_t d : *dims) {
      const int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1));
      KILN_CHECK(!p.reduced[static_cast<size_t>(w)], "dim ", w, " appears multiple times in the list of dims");
      p.reduced[static_cast<size_t>(w)] = true;
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    const bool r = p.reduced[static_cast<size_t>(d)];
    p.kept_shape.push_back(r ? 1 : self.size(d));
    if (!r || keepdim) p.out_shape.push_back(r ? 1 : self.size(d));
    (r ? p.len : p.rows) *= self.size(d);
  }
  return p;
}

/// The contiguous [batch, len, inner] block over `self`'s own memory, or
/// nullopt when its layout does not allow one (Note [Reductions as rows]).
std::optional<Tensor> block_view(const Tensor& self, const ReducePlan& p, bool one_reduced_dim) {
  if (self.numel() == 0) return std::nullopt;
  struct Dim {
    int64_t size, stride, logical;
    bool reduced;
  };
  std::vector<Dim> dims;
  int64_t reduced_dims = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) == 1) continue;
    const bool r = p.reduced[static_cast<size_t>(d)];
    dims.push_back({self.size(d), self.stride(d), d, r});
    reduced_dims += r ? 1 : 0;
  }
  if (one_reduced_dim && reduced_dims > 1) return std::nullopt;
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  int64_t expected = 1;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (it->stride != expected) return std::nullopt;  // gaps, overlap or broadcast: not dense
    expected *= it->size;
  }
  int64_t last_kept = -1;
  std::vector<std::pair<bool, int64_t>> runs;  // (reduced, elements), in memory order
  for (const Dim& d : dims) {
    if (!d.reduced) {
      if (d.logical < last_kept) return std::nullopt;  // the output would come out permuted
      last_kept = d.logical;
    }
    if (runs.empty() || runs.back().first != d.reduced) {
      runs.emplace_back(d.reduced, d.size);
    } else {
      runs.back().second *= d.size;
    }
  }
  int64_t batch = 1, len = 1, inner = 1;
  size_t i = 0;
  if (i < runs.size() && !runs[i].first) batch = runs[i++].second;
  if (i < runs.size() && runs[i].first) len = runs[i++].second;
  if (i < runs.size() && !runs[i].first) inner = runs[i++].second;
  if (i != runs.size()) return std::nullopt;  // reduced | kept | reduced ...
  ViewGeometry g;
  g.sizes = {batch, len, inner};
  g.strides = {len * inner, inner, 1};
  g.offset = self.storage_offset();
  return make_view(self, g);
}

/// `self` (converted to `dtype`) as a contiguous [batch, len, inner] block
/// with batch * inner == p.rows and len == p.len.
Tensor as_block(const Tensor& self, const ReducePlan& p, DType dtype, bool one_reduced_dim = false) {
  Tensor t = self.dtype() == dtype ? self : to_dtype_copy(self, dtype);
  if (auto block = block_view(t, p, one_reduced_dim)) return *block;
  DimVector perm;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!p.reduced[static_cast<size_t>(d)]) perm.push_back(d);
  }
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (p.reduced[static_cast<size_t>(d)]) perm.push_back(d);
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity) t = t.permute(perm);
  t = contiguous_values(t);
  return kiln::view(t, std::vector<int64_t>{p.rows, p.len, 1});
}

bool is_floating(DType t) { return is_floating_point(t); }

DType compute_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }

/// Sum and prod: integers and bool accumulate (and return) int64, unless dtype= says otherwise.
DType sum_result_dtype(const Tensor& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_floating(self.dtype()) ? self.dtype() : DType::Int64;
}

DType accumulate_dtype(DType result) {
  if (is_floating(result)) return result == DType::Float64 ? DType::Float64 : DType::Float32;
  return DType::Int64;
}

/// Runs `op` row-wise and returns the output shaped as `p` says, in `result` dtype.
Tensor reduce(const Tensor& self, const ReducePlan& p, RowReduce op, DType work, DType result, double param = 0) {
  const Tensor block = as_block(self, p, work);
  const DType out_dtype = (op == RowReduce::All || op == RowReduce::Any) ? DType::Bool : work;
  Tensor out = kiln::empty({p.rows}, out_dtype, self.device());
  if (p.rows > 0) reduce_stub(block, out, Tensor(), op, param);
  if (out.dtype() != result) out = to_dtype_copy(out, result);
  return kiln::view(out, p.out_shape);
}

Tensor as_bool(const Tensor& self) { return self.dtype() == DType::Bool ? self : kiln::ne(self, 0); }

/// amax/amin/max.dim on an empty reduced dim: IndexError as PyTorch words it.
void check_nonempty_dims(const Tensor& self, const ReducePlan& p, const char* name) {
  if (self.numel() != 0) return;
  for (int64_t d = 0; d < self.dim(); ++d) {
    KILN_CHECK_INDEX(!(p.reduced[static_cast<size_t>(d)] && self.size(d) == 0), name,
                     "(): Expected reduction dim ", d, " to have non-zero size.");
  }
}


}  // namespace

// --- sum, mean, prod -----------------------------------------------------------------------

namespace {

/// A complex sum as the sum of the [..., 2] real view over the same dims (the
/// real and imaginary parts add independently), viewed back as complex.
Tensor complex_sum(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  KILN_CHECK(!dtype || is_complex(*dtype), "sum(): the dtype of a complex sum must be complex, got ",
             scalar_type_name(*dtype));
  const Tensor source = dtype && *dtype != self.dtype() ? to_dtype_copy(self, *dtype) : self;
  if (self.dim() == 0) {
    if (dim) for (int64_t d : *dim) (void)wrap_dim(d, 1);
    return source.clone();
  }
  DimVector dims;
  if (dim && !dim->empty()) {
    for (int64_t d : *dim) dims.push_back(wrap_dim(d, self.dim()));
  } else {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
  }
  const Tensor real_sum = sum_dim_cpu(view_as_real_impl(source), IntArrayRef(dims), keepdim, std::nullopt);
  return view_as_complex_impl(real_sum.contiguous());
}

Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype, bool product);

/// A complex product as the last element of the cumulative product along the dim
/// (complex multiplication mixes the parts, so the real view cannot serve as for sum).
Tensor complex_prod(const Tensor& self, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  KILN_CHECK(!dtype || is_complex(*dtype), "prod(): the dtype of a complex product must be complex, got ",
             scalar_type_name(*dtype));
  const Tensor source = dtype && *dtype != self.dtype() ? to_dtype_copy(self, *dtype) : self;
  if (!dim) {
    if (source.numel() == 0) return kiln::ones({}, source.dtype(), source.device());
    const Tensor running = scan(kiln::reshape(source, {-1}), 0, std::nullopt, true);
    return kiln::select(running, 0, -1).clone();
  }
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(self.dim(), 1));
  if (self.dim() == 0) return source.clone();
  const ReducePlan p = plan(self, IntArrayRef(&d, 1), keepdim);
  if (self.size(d) == 0) return kiln::ones(p.out_shape, source.dtype(), source.device());
  const Tensor running = scan(source, d, std::nullopt, true);
  const Tensor last = kiln::narrow(running, d, self.size(d) - 1, 1);
  return (keepdim ? last : kiln::squeeze(last, d)).contiguous();
}

}  // namespace

Tensor sum_dim_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(self.dtype())) return complex_sum(self, dim, keepdim, dtype);
  const ReducePlan p = plan(self, dim, keepdim);
  const DType result = sum_result_dtype(self, dtype);
  const DType work = accumulate_dtype(result);
  if (result == DType::Bool) {
    // A bool sum is an any over the values as bools (0.5 counts), as PyTorch.
    return reduce(as_bool(self), p, RowReduce::Any, DType::Bool, result);
  }
  if (self.dtype() == DType::Bool || !is_floating(work)) {
    return reduce(self, p, RowReduce::Sum, DType::Int64, result);
  }
  return reduce(self, p, RowReduce::Sum, work, result);
}

Tensor sum_cpu(const Tensor& self, std::optional<DType> dtype) { return sum_dim_cpu(self, std::nullopt, false, dtype); }

Tensor sum_of_terms(const Tensor& x, IntArrayRef dims, bool keepdim, RowReduce op) {
  KILN_INTERNAL_ASSERT(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, "sum_of_terms: float or double");
  const ReducePlan p = plan(x, dims.empty() ? std::nullopt : std::optional<IntArrayRef>(dims), keepdim);
  return reduce(x, p, op, x.dtype(), x.dtype());
}

Tensor mean_dim_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  const DType result = dtype.value_or(self.dtype());
  if (is_complex(self.dtype()) || is_complex(result)) {
    // The complex sum (over the real view) divided by the count.
    const ReducePlan p = plan(self, dim, keepdim);
    const Tensor total = complex_sum(is_complex(self.dtype()) ? self : to_dtype_copy(self, result), dim, keepdim,
                                     is_complex(result) ? std::optional<DType>(result) : std::nullopt);
    return kiln::div(total, static_cast<double>(p.len));
  }
  KILN_CHECK(is_floating(result),
             "mean(): could not infer output dtype. ",
             dtype ? "Optional dtype must be either a floating point or complex dtype. Got: "
                   : "Input dtype must be either a floating point or complex dtype. Got: ",
             scalar_type_name(result));
  const ReducePlan p = plan(self, dim, keepdim);
  const DType work = accumulate_dtype(result);
  Tensor total = reduce(self, p, RowReduce::Sum, work, work);
  const double count = static_cast<double>(p.len);
  Tensor out = kiln::div(total, count);  // 0 / 0 is nan for an empty reduction, as PyTorch
  return out.dtype() == result ? out : to_dtype_copy(out, result);
}

Tensor mean_cpu(const Tensor& self, std::optional<DType> dtype) { return mean_dim_cpu(self, std::nullopt, false, dtype); }

Tensor prod_dim_cpu(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(self.dtype())) return complex_prod(self, dim, keepdim, dtype);
  const int64_t dims[1] = {dim};
  const ReducePlan p = plan(self, IntArrayRef(dims, 1), keepdim);
  const DType result = sum_result_dtype(self, dtype);
  if (result == DType::Bool) return reduce(as_bool(self), p, RowReduce::All, DType::Bool, result);  // as sum's
  return reduce(self, p, RowReduce::Prod, accumulate_dtype(result), result);
}

Tensor prod_cpu(const Tensor& self, std::optional<DType> dtype) {
  if (is_complex(self.dtype())) return complex_prod(self, std::nullopt, false, dtype);
  const ReducePlan p = plan(self, std::nullopt, false);
  const DType result = sum_result_dtype(self, dtype);
  if (result == DType::Bool) return reduce(as_bool(self), p, RowReduce::All, DType::Bool, result);  // as sum's
  return reduce(self, p, RowReduce::Prod, accumulate_dtype(result), result);
}

// --- amax, amin, max, min, argmax, argmin ---------------------------------------------------

namespace {

Tensor extreme(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, bool is_max, const char* name) {
  const ReducePlan p = plan(self, dim, keepdim);
  if (dim && !dim->empty() && self.numel() == 0 && self.dim() > 0) {
    // amax/amin name an empty dim as the caller gave it (-1 stays -1), the first in the caller's order, as torch
    for (const int64_t d : *dim) {
      KILN_CHECK_INDEX(self.size(wrap_dim(d, self.dim())) != 0, name, "(): Expected reduction dim ", d,
                       " to have non-zero size.");
    }
  }
  KILN_CHECK((dim && !dim->empty()) || self.numel() != 0, name, "(): Expected reduction dim to be specified for "
             "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  check_nonempty_dims(self, p, name);
  return reduce(self, p, is_max ? RowReduce::Max : RowReduce::Min, compute_dtype(self.dtype()), self.dtype());
}

std::tuple<Tensor, Tensor> extreme_dim(const Tensor& self, int64_t dim, bool keepdim, bool is_max, const char* name) {
  const int64_t dims[1] = {dim};
  const ReducePlan p = plan(self, IntArrayRef(dims, 1), keepdim);
  check_nonempty_dims(self, p, name);
  const DType work = compute_dtype(self.dtype());
  const Tensor block = as_block(self, p, work, /*one_reduced_dim=*/true);
  Tensor values = kiln::empty({p.rows}, work, self.device());
  Tensor indices = kiln::empty({p.rows}, DType::Int64, self.device());
  if (p.rows > 0) reduce_stub(block, values, indices, is_max ? RowReduce::Max : RowReduce::Min, 0);
  if (values.dtype() != self.dtype()) values = to_dtype_copy(values, self.dtype());
  return {kiln::view(values, p.out_shape), kiln::view(indices, p.out_shape)};
}

Tensor arg_extreme(const Tensor& self, std::optional<int64_t> dim, bool keepdim, bool is_max, const char* name) {
  KILN_CHECK(self.dtype() != DType::Bool, name, "(): does not support bool input");
  if (!dim) {
    KILN_CHECK_INDEX(self.numel() != 0, name, "(): Expected reduction dim to be specified for input.numel() == 0.");
  }
  const int64_t dims[1] = {dim.value_or(0)};
  ReducePlan p = plan(self, dim ? std::optional<IntArrayRef>(IntArrayRef(dims, 1)) : std::nullopt, keepdim);
  check_nonempty_dims(self, p, name);
  if (!dim && keepdim) p.out_shape = DimVector(static_cast<size_t>(self.dim()), 1);
  const DType work = compute_dtype(self.dtype());
  const Tensor block = as_block(self, p, work, /*one_reduced_dim=*/true);
  Tensor values = kiln::empty({p.rows}, work, self.device());
  Tensor indices = kiln::empty({p.rows}, DType::Int64, self.device());
  if (p.rows > 0) reduce_stub(block, values, indices, is_max ? RowReduce::Max : RowReduce::Min, 0);
  return kiln::view(indices, p.out_shape);
}

Tensor full_extreme(const Tensor& self, bool is_max, const char* name) {
  KILN_CHECK(self.numel() != 0, name,
             "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
             "'dim' argument.");
  return extreme(self, std::nullopt, false, is_max, name);
}

}  // namespace

Tensor amax_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) { return extreme(self, dim, keepdim, true, "amax"); }
Tensor amin_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) { return extreme(self, dim, keepdim, false, "amin"); }
Tensor max_cpu(const Tensor& self) { return full_extreme(self, true, "max"); }
Tensor min_cpu(const Tensor& self) { return full_extreme(self, false, "min"); }
std::tuple<Tensor, Tensor> max_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim(self, dim, keepdim, true, "max");
}
std::tuple<Tensor, Tensor> min_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_dim(self, dim, keepdim, false, "min");
}
Tensor argmax_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(self, dim, keepdim, true, "argmax");
}
Tensor argmin_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(self, dim, keepdim, false, "argmin");
}
Tensor max_other(const Tensor& self, const Tensor& other) { return kiln::maximum(self, other); }
Tensor min_other(const Tensor& self, const Tensor& other) { return kiln::minimum(self, other); }

std::tuple<Tensor, Tensor> aminmax_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const int64_t dims[1] = {dim.value_or(0)};
  const ReducePlan p = plan(self, dim ? std::optional<IntArrayRef>(IntArrayRef(dims, 1)) : std::nullopt, keepdim);
  if (!dim) {
    KILN_CHECK(self.numel() != 0,
               "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
  } else if (self.dim() > 0) {
    const int64_t d = wrap_dim(*dim, self.dim());
    KILN_CHECK_INDEX(self.size(d) != 0, "aminmax: Expected reduction dim ", d, " to have non-zero size.");
  }
  const DType work = compute_dtype(self.dtype());
  return {reduce(self, p, RowReduce::Min, work, self.dtype()), reduce(self, p, RowReduce::Max, work, self.dtype())};
}

// --- all, any --------------------------------------------------------------------------------

namespace {
/// all/any return uint8 for uint8 inputs and bool otherwise, as PyTorch.
Tensor logical(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, bool is_all) {
  const DType result = self.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  // An empty dim list reduces over nothing (unlike sum's and amax's, which mean every dim): each element's truth.
  if (dims && dims->empty()) return kiln::_to_copy(as_bool(self), result, std::nullopt, false, std::nullopt);
  const ReducePlan p = plan(self, dims, keepdim);
  return reduce(as_bool(self), p, is_all ? RowReduce::All : RowReduce::Any, DType::Bool, result);
}
}  // namespace

Tensor all_cpu(const Tensor& self) { return logical(self, std::nullopt, false, true); }
Tensor all_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return logical(self, IntArrayRef(&dim, 1), keepdim, true);
}
Tensor all_dims_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return logical(self, dim, keepdim, true);
}
Tensor any_cpu(const Tensor& self) { return logical(self, std::nullopt, false, false); }
Tensor any_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  return logical(self, IntArrayRef(&dim, 1), keepdim, false);
}
Tensor any_dims_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return logical(self, dim, keepdim, false);
}

// --- var, std --------------------------------------------------------------------------------

Tensor var_correction_cpu(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                          bool keepdim) {
  if (is_complex(self.dtype())) {
    // The variance of a complex tensor is that of its real part plus that of its imaginary part (real).
    const Tensor parts = view_as_real_impl(self);
    return kiln::add(kiln::var(kiln::select(parts, -1, 0), dim, correction, keepdim),
                     kiln::var(kiln::select(parts, -1, 1), dim, correction, keepdim));
  }
  KILN_CHECK(is_floating(self.dtype()), "std and var only support floating point and complex dtypes");
  const ReducePlan p = plan(self, dim, keepdim);
  const double c = correction ? correction->to_double() : 1.0;
  return reduce(self, p, RowReduce::Var, accumulate_dtype(self.dtype()), self.dtype(), c);
}

Tensor var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return kiln::var(self, dim, Scalar(unbiased ? int64_t{1} : int64_t{0}), keepdim);
}
Tensor var(const Tensor& self, bool unbiased) {
  return kiln::var(self, std::nullopt, Scalar(unbiased ? int64_t{1} : int64_t{0}), false);
}
Tensor std_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                      bool keepdim) {
  return kiln::sqrt(kiln::var(self, dim, correction, keepdim));
}
Tensor std_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return kiln::std(self, dim, Scalar(unbiased ? int64_t{1} : int64_t{0}), keepdim);
}
Tensor std(const Tensor& self, bool unbiased) {
  return kiln::std(self, std::nullopt, Scalar(unbiased ? int64_t{1} : int64_t{0}), false);
}

std::tuple<Tensor, Tensor> var_mean_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                                               const std::optional<Scalar>& correction, bool keepdim) {
  KILN_CHECK(is_floating(self.dtype()) || is_complex(self.dtype()),
             "var_mean only support floating point and complex dtypes");  // named as torch names it
  return {kiln::var(self, dim, correction, keepdim), kiln::mean(self, dim, keepdim)};
}
std::tuple<Tensor, Tensor> var_mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                                        bool keepdim) {
  return kiln::var_mean(self, dim, Scalar(unbiased ? int64_t{1} : int64_t{0}), keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, bool unbiased) {
  return kiln::var_mean(self, std::nullopt, Scalar(unbiased ? int64_t{1} : int64_t{0}), false);
}
std::tuple<Tensor, Tensor> std_mean_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                                               const std::optional<Scalar>& correction, bool keepdim) {
  KILN_CHECK(is_floating(self.dtype()) || is_complex(self.dtype()),
             "std_mean only support floating point and complex dtypes");  // named as torch names it
  return {kiln::std(self, dim, correction, keepdim), kiln::mean(self, dim, keepdim)};
}
std::tuple<Tensor, Tensor> std_mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                                        bool keepdim) {
  return kiln::std_mean(self, dim, Scalar(unbiased ? int64_t{1} : int64_t{0}), keepdim);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& self, bool unbiased) {
  return kiln::std_mean(self, std::nullopt, Scalar(unbiased ? int64_t{1} : int64_t{0}), false);
}

Tensor count_nonzero_dims(const Tensor& self, IntArrayRef dim) {
  return kiln::sum(kiln::ne(self, 0), dim, false, DType::Int64);
}
Tensor count_nonzero(const Tensor& self, std::optional<int64_t> dim) {
  if (!dim) return kiln::sum(kiln::ne(self, 0), std::nullopt, false, DType::Int64);
  const int64_t dims[1] = {*dim};
  return kiln::count_nonzero(self, IntArrayRef(dims, 1));
}

// --- composites ------------------------------------------------------------------------------

Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  // max-shifted for stability; a row of -inf (or +inf) keeps its max unshifted.
  const Tensor x = is_floating(self.dtype()) ? self : to_dtype_copy(self, DType::Float32);
  if (x.numel() == 0) return kiln::log(kiln::sum(kiln::exp(x), dim, keepdim));  // log(0) = -inf, as PyTorch
  Tensor m = kiln::amax(x, dim, true).detach();
  m = kiln::where(kiln::isinf(m), 0, m);
  Tensor out = kiln::add(kiln::log(kiln::sum(kiln::exp(kiln::sub(x, m)), dim, true)), m);
  if (!keepdim) {
    const ReducePlan p = plan(self, dim, false);
    out = kiln::reshape(out, p.out_shape);
  }
  return out;
}

Tensor nansum(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  const Tensor cleaned = is_floating(self.dtype()) ? kiln::where(kiln::isnan(self), 0, self) : self;
  return kiln::sum(cleaned, dim, keepdim, dtype);
}

// --- cumsum, cumprod -------------------------------------------------------------------------

namespace {
Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype, bool product) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  const int64_t d = wrap_dim(dim, nd);
  // A complex scan keeps its dtype and accumulates in it (the real and imaginary parts together).
  const DType result = is_complex(self.dtype()) && !dtype ? self.dtype() : sum_result_dtype(self, dtype);
  const DType work = is_complex(result) ? result : accumulate_dtype(result);
  const Tensor x = contiguous_values(self.dtype() == work ? self : to_dtype_copy(self, work));
  Tensor out = kiln::empty(self.sizes(), work, self.device());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i < d) outer *= self.size(i);
    if (i > d) inner *= self.size(i);
  }
  const int64_t len = self.dim() == 0 ? 1 : self.size(d);
  if (self.numel() > 0) scan_stub(x, out, outer, len, inner, product);
  return out.dtype() == result ? out : to_dtype_copy(out, result);
}
}  // namespace

Tensor cumsum_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return scan(self, dim, dtype, false); }
Tensor cumprod_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype) { return scan(self, dim, dtype, true); }

}  // namespace kiln::native
