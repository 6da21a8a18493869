// Advanced indexing: the plan (make_advanced_index) and the ops on it: index,
// index_put_ and their functional and out= forms.
// See Note [Where advanced indices put their dims] and Note [Indexing by byte offsets].
#include "eager/kernels/cpu/indexing/IndexAdvanced.h"

#include <algorithm>
#include <sstream>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/kernels/cpu/ResultInto.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {
namespace indexing {

namespace {

bool is_mask(DType t) { return t == DType::Bool || t == DType::UInt8; }

void check_index_types(OptionalTensorList indices) {
  for (const auto& index : indices) {
    if (!index.has_value() || !index->defined()) continue;
    const DType t = index->dtype();
    KILN_CHECK_INDEX(t == DType::Int64 || t == DType::Int32 || is_mask(t),
                     "tensors used as indices must be long, int, byte or bool tensors");
  }
}

/// PyTorch's expandTensors: each mask becomes the columns of its nonzero(), one per mask dim.
std::vector<Tensor> expand_masks(const Tensor& self, OptionalTensorList indices) {
  std::vector<Tensor> result;
  for (const auto& index : indices) {
    if (!index.has_value() || !index->defined()) {
      result.emplace_back();
      continue;
    }
    const Tensor& t = *index;
    if (!is_mask(t.dtype())) {
      result.push_back(t);
      continue;
    }
    if (t.dtype() == DType::UInt8) {
      static bool warned = false;
      if (!warned) {
        warned = true;
        KILN_WARN("indexing with dtype kiln.uint8 is now deprecated, please use a dtype kiln.bool instead.");
      }
    }
    for (int64_t j = 0; j < t.dim(); ++j) {
      const int64_t src = static_cast<int64_t>(result.size()) + j;
      KILN_CHECK_INDEX(src < self.dim(), "too many indices for tensor of dimension ", self.dim());
      KILN_CHECK_INDEX(t.size(j) == self.size(src), "The shape of the mask ", t.sizes(), " at index ", j,
                       " does not match the shape of the indexed tensor ", self.sizes(), " at index ", src);
    }
    // A CUDA mask's nonzero() through the CPU (no CUDA nonzero kernel yet); meta masks read no data.
    const Tensor nonzero = t.device().type() != DeviceType::CUDA
                               ? nonzero_cpu(t)
                               : kiln::_to_copy(nonzero_cpu(kiln::_to_copy(t, std::nullopt, Device(DeviceType::CPU))),
                                                std::nullopt, t.device());
    for (int64_t j = 0; j < t.dim(); ++j) result.push_back(select_impl(nonzero, 1, j));
  }
  return result;
}

std::string shapes_text(const std::vector<Tensor>& tensors) {
  std::ostringstream os;
  bool first = true;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    os << (first ? "" : ", ") << t.sizes();
    first = false;
  }
  return os.str();
}

/// True when the defined entries are all next to each other.
bool has_contiguous_subspace(const std::vector<Tensor>& indices) {
  auto defined = [](const Tensor& t) { return t.defined(); };
  const auto first = std::find_if(indices.begin(), indices.end(), defined);
  const auto last = std::find_if(indices.rbegin(), indices.rend(), defined).base();
  return std::all_of(first, last, defined);
}

}  // namespace

AdvancedIndex make_advanced_index(const Tensor& self, OptionalTensorList indices) {
  KILN_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(), "too many indices for tensor of dimension ",
                   self.dim(), " (got ", indices.size(), ")");
  check_index_types(indices);
  std::vector<Tensor> expanded = expand_masks(self, indices);

  AdvancedIndex info;
  bool any = false;
  try {
    for (const Tensor& t : expanded) {
      if (!t.defined()) continue;
      info.index_shape = any ? broadcast_shapes(info.index_shape, t.sizes()) : DimVector(t.sizes());
      any = true;
    }
  } catch (const Error&) {
    KILN_FAIL(Index, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
              shapes_text(expanded));
  }
  KILN_CHECK_INDEX(any, "at least one index must be provided");
  for (Tensor& t : expanded) {
    if (t.defined()) t = expand_to(t, info.index_shape);
  }
  expanded.resize(static_cast<size_t>(self.dim()));

  // Not adjacent: move the indexed dims (and their indices) to the front.
  info.self = self;
  if (!has_contiguous_subspace(expanded)) {
    DimVector sizes, strides;
    std::vector<Tensor> moved;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t d = 0; d < expanded.size(); ++d) {
        if (expanded[d].defined() != (pass == 0)) continue;
        sizes.push_back(self.size(static_cast<int64_t>(d)));
        strides.push_back(self.stride(static_cast<int64_t>(d)));
        moved.push_back(expanded[d]);
      }
    }
    info.self = restride(self, sizes, strides);
    expanded = std::move(moved);
  }
  info.indices = std::move(expanded);

  DimVector indexed_sizes;
  int64_t n_indexed = 0;
  for (size_t d = 0; d < info.indices.size(); ++d) {
    if (info.indices[d].defined()) {
      ++n_indexed;
      indexed_sizes.push_back(info.self.size(static_cast<int64_t>(d)));
    } else if (n_indexed == 0) {
      ++info.dims_before;
    } else {
      ++info.dims_after;
    }
  }
  // A dim of size 0 can only be indexed by an empty index (PyTorch's early check and words).
  const bool indexes_empty_dim = std::find(indexed_sizes.begin(), indexed_sizes.end(), 0) != indexed_sizes.end();
  const bool empty_index = std::find(info.index_shape.begin(), info.index_shape.end(), 0) != info.index_shape.end();
  KILN_CHECK_INDEX(!indexes_empty_dim || empty_index, "index is out of bounds for dimension with size 0");

  const auto sizes = info.self.sizes();
  const int64_t ndim = info.self.dim();
  for (int64_t d = 0; d < info.dims_before; ++d) info.result_shape.push_back(sizes[static_cast<size_t>(d)]);
  for (int64_t s : info.index_shape) info.result_shape.push_back(s);
  for (int64_t d = ndim - info.dims_after; d < ndim; ++d) info.result_shape.push_back(sizes[static_cast<size_t>(d)]);
  return info;
}

Tensor AdvancedIndex::restrided_self() const {
  const int64_t ndim = self.dim();
  DimVector strides;
  for (int64_t d = 0; d < dims_before; ++d) strides.push_back(self.stride(d));
  for (size_t i = 0; i < index_shape.size(); ++i) strides.push_back(0);
  for (int64_t d = ndim - dims_after; d < ndim; ++d) strides.push_back(self.stride(d));
  return restride(self, result_shape, strides);
}

Tensor AdvancedIndex::offsets(const ComputeOffsets& compute) const {
  Tensor offsets;
  if (product(result_shape) == 0) {
    // Nothing is read or written, so (as in PyTorch, whose loop checks the indices) none is checked.
    return empty(result_shape, DType::Int64, self.device());
  }
  int64_t ordinal = 0;  // PyTorch names an advanced index by its position among the indices
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined()) continue;
    const auto dim = static_cast<int64_t>(d);
    const int64_t size = self.size(dim);
    const auto bad = compute(offsets, indices[d], size, self.stride(dim) * self.itemsize(), IndexWrap::Negative,
                             /*accumulate=*/offsets.defined());
    KILN_CHECK_INDEX(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension ", ordinal, " with size ",
                     size);
    ++ordinal;
  }
  DimVector strides(static_cast<size_t>(dims_before), 0);
  for (int64_t s : offsets.strides()) strides.push_back(s);
  for (int64_t d = 0; d < dims_after; ++d) strides.push_back(0);
  return restride(offsets, result_shape, strides);
}

namespace {

/// PyTorch's canDispatchToMaskedFill: one mask and a one-element value (index_put_ then
/// fills with the value converted to self's dtype, whatever the value's dtype).
bool is_masked_fill(OptionalTensorList indices, const Tensor& value) {
  if (value.numel() != 1) return false;
  const Tensor* mask = nullptr;
  for (const auto& index : indices) {
    if (!index.has_value() || !index->defined()) continue;
    if (!is_mask(index->dtype()) || mask != nullptr) return false;
    mask = &*index;
  }
  if (mask == nullptr) return false;
  // PyTorch hands the work to masked_fill_, which takes bool masks only.
  KILN_CHECK(mask->dtype() == DType::Bool,
             "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char");
  return true;
}

}  // namespace

IndexPutPlan plan_index_put(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  KILN_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(), "too many indices for tensor of dimension ",
                   self.dim(), " (got ", indices.size(), ")");
  if (has_internal_overlap(self)) {
    KILN_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing this "
              "operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  Tensor value = values;
  if (!accumulate && is_masked_fill(indices, values)) {
    // (a CUDA value is read through a copy to the host)
    const bool on_cuda = values.device().is_cuda();
    value = scalar_tensor(item(on_cuda ? kiln::_to_copy(values, std::nullopt, Device(DeviceType::CPU)) : values),
                          self.dtype());
  }
  check_no_overlap(self, value);
  for (const auto& index : indices) {
    if (index.has_value() && index->defined()) check_no_overlap(self, *index);
  }
  IndexPutPlan plan{make_advanced_index(self, indices), value};
  KILN_CHECK(is_expandable_to(value.sizes(), plan.info.result_shape), "shape mismatch: value tensor of shape ",
             value.sizes(), " cannot be broadcast to indexing result of shape ", plan.info.result_shape);
  KILN_CHECK(value.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
             scalar_type_name(self.dtype()), " for the destination and ", scalar_type_name(value.dtype()),
             " for the source.");
  return plan;
}

}  // namespace indexing

using namespace indexing;

Tensor index_cpu(const Tensor& self, OptionalTensorList indices) {
  const AdvancedIndex info = make_advanced_index(self, indices);
  const auto defined = [](const Tensor& t) { return t.defined(); };
  if (std::count_if(info.indices.begin(), info.indices.end(), defined) == 1) {
    // One index tensor (x[idx], x[:, idx], a 1-d mask): offsets and gather in one pass.
    const auto d = std::find_if(info.indices.begin(), info.indices.end(), defined) - info.indices.begin();
    const Tensor& index = info.indices[static_cast<size_t>(d)];
    DimVector strides(static_cast<size_t>(info.dims_before), 0);
    for (int64_t s : index.strides()) strides.push_back(s);
    for (int64_t i = 0; i < info.dims_after; ++i) strides.push_back(0);
    const int64_t size = info.self.size(d);
    const auto [result, bad] =
        run_gather_direct(Tensor(), info.restrided_self(), restride(index, info.result_shape, strides), index, size,
                          info.self.stride(d) * self.itemsize(), IndexWrap::Negative, self.dtype());
    KILN_CHECK_INDEX(!bad, "index ", bad ? bad->value : 0, " is out of bounds for dimension 0 with size ", size);
    return result;
  }
  return run_gather(Tensor(), info.restrided_self(), info.offsets(), self.dtype());
}

Tensor index_out_cpu(const Tensor& self, OptionalTensorList indices, const Tensor& out) {
  const AdvancedIndex info = make_advanced_index(self, indices);
  check_no_internal_overlap(out);
  check_no_overlap(out, self);
  const Tensor offsets = info.offsets();
  KILN_CHECK(out.dtype() == self.dtype(), "Expected out tensor to have dtype ", cpp_type_name(self.dtype()),
             ", but got ", cpp_type_name(out.dtype()), " instead");
  const auto shape = IntArrayRef(info.result_shape);
  if (std::equal(shape.begin(), shape.end(), out.sizes().begin(), out.sizes().end())) {
    run_gather(out, info.restrided_self(), offsets, self.dtype());
  } else {
    // A resized out= tensor takes the layout the iterator gives a new result, as in PyTorch.
    const Tensor result = run_gather(Tensor(), info.restrided_self(), offsets, self.dtype());
    resize_output(out, shape);
    out.impl()->set_geometry(shape, result.strides(), out.storage_offset());
    kiln::copy_(out, result);
  }
  out.impl()->bump_version();
  return out;
}

namespace {

Tensor index_put_in_place(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  const IndexPutPlan plan = plan_index_put(self, indices, values, accumulate);
  const Tensor offsets = plan.info.offsets();  // every index checked before anything is written
  run_put(plan.info.restrided_self(), plan.value, offsets, accumulate ? PutReduce::Add : PutReduce::Assign);
  self.impl()->bump_version();
  return self;
}

}  // namespace

// The kernel of index_put_, index_put and index_put.out (Note [Three ways to
// write a result]): the function and out= forms put into a copy of self that
// keeps its strides; out= then copies that into out.
Tensor index_put_into(ResultInto into, const Tensor& out, const Tensor& self, OptionalTensorList indices,
                      const Tensor& values, bool accumulate) {
  if (into == ResultInto::InPlace) return index_put_in_place(self, indices, values, accumulate);
  const Tensor result = index_put_in_place(clone_preserving_strides(self), indices, values, accumulate);
  return into == ResultInto::Out ? copy_to_out(result, out) : result;
}

}  // namespace kiln::native
