// TensorIterator: shape, dtype, output, overlap, and loop-order computation.
#include "eager/kernels/TensorIterator.h"

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>

#include "eager/core/Error.h"
#include "eager/core/Storage.h"
#include "eager/core/TensorImpl.h"
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln {

// --- config ----------------------------------------------------------------------

TensorIteratorConfig& TensorIteratorConfig::add_output(const Tensor& output) {
  KILN_INTERNAL_ASSERT(inputs_.empty(), "add outputs before inputs");
  outputs_.push_back(output);
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::add_const_input(const Tensor& input) {
  inputs_.push_back(input);
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::promote_inputs_to_common_dtype(bool v) {
  promote_inputs_ = v;
  if (v) check_same_dtype_ = false;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::promote_integer_inputs_to_float(bool v) {
  promote_integer_to_float_ = v;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::cast_common_dtype_to_outputs(bool v) {
  cast_to_outputs_ = v;
  if (v) check_same_dtype_ = false;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::enforce_safe_casting_to_output(bool v) {
  enforce_safe_casting_ = v;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::check_all_same_dtype(bool v) {
  check_same_dtype_ = v;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::declare_static_dtype(DType dtype) {
  static_dtype_ = dtype;
  check_same_dtype_ = false;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::declare_static_shape(IntArrayRef shape) {
  static_shape_ = DimVector(shape);
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::resize_outputs(bool v) {
  resize_outputs_ = v;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::set_op_name(const char* name) {
  op_name_ = name;
  return *this;
}

TensorIterator TensorIteratorConfig::build() { return TensorIterator(*this); }

// --- build -----------------------------------------------------------------------

// Note [TensorIterator's same-shape fast path]
// ---------------------------------------------
// Most eager calls are the plain case: new outputs, and inputs of one dtype
// and one shape, each contiguous, on one non-meta device (a 1-element add from
// Python spends half its C++ time building the iterator). For those the
// general passes below reduce to fixed answers: the broadcast shape is the
// inputs' shape; the result type of equal dtypes (no wrapped number, no 0-dim
// input, so one promotion tier) is that dtype; nothing is converted or
// resized; the dense layout holds (one iteration dimension of numel
// elements); the outputs are new and contiguous, so nothing can overlap them.
// build_same_shape fills the members the general passes would (less the
// dimension orders, which only those passes read), and anything else (a static dtype or shape, an out= tensor, integers promoted
// to float, a broadcast) takes the general path. The config's tensors are
// moved into the operands: build() is a config's last use.

TensorIterator::TensorIterator(TensorIteratorConfig& config) {
  auto build_same_shape = [&]() -> bool {
    if (config.static_shape_ || config.static_dtype_ || config.inputs_.empty()) return false;
    for (const Tensor& t : config.outputs_) {
      if (t.defined()) return false;
    }
    const TensorImpl* first = config.inputs_[0].defined() ? config.inputs_[0].impl() : nullptr;
    if (first == nullptr || first->dim() == 0 || !first->is_contiguous() || first->is_meta()) return false;
    const DType dtype = first->dtype();
    const Device device = first->device();
    const IntArrayRef sizes = first->sizes();
    for (const Tensor& t : config.inputs_) {
      if (!t.defined()) return false;
      const TensorImpl* impl = t.impl();
      if (impl != first &&
          (impl->dtype() != dtype || !impl->is_contiguous() || impl->is_wrapped_number() ||
           impl->device() != device || impl->sizes().size() != sizes.size() ||
           !std::equal(sizes.begin(), sizes.end(), impl->sizes().begin()))) {
        return false;
      }
    }
    if (first->is_wrapped_number()) return false;
    if (config.promote_integer_to_float_ && !is_floating_point(dtype) && !is_complex(dtype)) return false;
    shape_ = DimVector(sizes);
    numel_ = first->numel();
    common_dtype_ = out_dtype_ = dtype;
    iter_shape_.assign(1, numel_);  // user_perm_ and perm_ serve allocate_outputs and strided operands only
    dense_ = true;
    noutputs_ = static_cast<int>(config.outputs_.size());
    const int64_t item = kiln::itemsize(dtype);
    // allocate_outputs' strides for the dense order; empty_strided's checks hold already (the
    // inputs have this shape, so the sizes are valid and numel * itemsize bytes cannot overflow).
    const DimVector strides = contiguous_strides(shape_);
    const auto nbytes = static_cast<size_t>(numel_ * item);
    for (size_t i = 0; i < config.outputs_.size(); ++i) {
      Operand& op = operands_.emplace_back();
      op.tensor = Tensor(make_intrusive<TensorImpl>(new_storage(nbytes, device), dtype, shape_, strides, 0));
      op.is_output = true;
      op.allocated = true;
      op.data = static_cast<char*>(op.tensor.data_ptr());
      op.byte_strides.assign(1, item);
    }
    for (Tensor& t : config.inputs_) {
      Operand& op = operands_.emplace_back();
      op.tensor = std::move(t);
      op.data = static_cast<char*>(op.tensor.data_ptr());
      op.byte_strides.assign(1, item);
    }
    return true;
  };
  if (build_same_shape()) return;

  for (Tensor& t : config.outputs_) {
    Operand& op = operands_.emplace_back();
    op.tensor = std::move(t);
    op.is_output = true;
  }
  noutputs_ = static_cast<int>(config.outputs_.size());
  for (Tensor& t : config.inputs_) {
    KILN_CHECK(t.defined(), config.op_name_, ": an input tensor is undefined");
    operands_.emplace_back().tensor = std::move(t);
  }
  check_meta_devices(config);
  compute_shape(config);
  compute_types(config);
  resize_outputs(config);
  reorder_and_coalesce();  // before allocation, so new outputs follow the inputs' layout
  allocate_outputs();
  if (!meta_) check_memory_overlap(config);
  // Byte strides per iteration dim, after outputs exist.
  if (dense_) {
    for (auto& op : operands_) {
      op.data = meta_ ? nullptr : static_cast<char*>(op.tensor.data_ptr());
      op.byte_strides.assign(1, op.tensor.itemsize());
    }
    return;
  }
  for (auto& op : operands_) {
    const DimVector strides = broadcast_strides(op.tensor, shape_);
    op.byte_strides.assign(iter_shape_.size(), 0);
    op.data = meta_ ? nullptr : static_cast<char*>(op.tensor.data_ptr());
    const int64_t item = op.tensor.itemsize();
    // perm_ maps each coalesced dim to its innermost user dim; strides are those of that dim.
    for (size_t i = 0; i < iter_shape_.size(); ++i) op.byte_strides[i] = strides[static_cast<size_t>(perm_[i])] * item;
  }
}

void TensorIterator::check_meta_devices(const TensorIteratorConfig& config) {
  for (const auto& op : operands_) meta_ = meta_ || (op.tensor.defined() && op.tensor.impl()->is_meta());
  if (!meta_) return;
  // As PyTorch: a meta op takes meta tensors and 0-dim CPU tensors (Python numbers) only.
  for (const auto& op : operands_) {
    if (!op.tensor.defined() || op.tensor.impl()->is_meta()) continue;
    KILN_CHECK(op.tensor.dim() == 0 && op.tensor.device().is_cpu(), "Tensor on device ", op.tensor.device(),
               " is not on the expected device meta!");
  }
  (void)config;
}

void TensorIterator::compute_shape(const TensorIteratorConfig& config) {
  if (config.static_shape_) {
    shape_ = *config.static_shape_;
  } else {
    bool first = true;
    for (const auto& op : operands_) {
      if (op.is_output) continue;
      const IntArrayRef sizes = op.tensor.sizes();
      if (first) {
        shape_ = DimVector(sizes);
      } else if (sizes.size() != shape_.size() || !std::equal(sizes.begin(), sizes.end(), shape_.begin())) {
        shape_ = broadcast_shapes(shape_, sizes);  // equal shapes (the common case) need no broadcast
      }
      first = false;
    }
    if (first) {  // no inputs: the outputs give the shape
      for (const auto& op : operands_) {
        if (op.tensor.defined()) shape_ = DimVector(op.tensor.sizes());
      }
    }
  }
  numel_ = product(shape_);
}

void TensorIterator::compute_types(const TensorIteratorConfig& config) {
  ResultTypeState state;
  for (const auto& op : operands_) {
    if (!op.is_output) state.update(op.tensor);
  }
  if (!state.empty()) {
    common_dtype_ = state.result();
  } else if (config.static_dtype_) {
    common_dtype_ = *config.static_dtype_;
  } else {
    common_dtype_ = operands_.empty() ? default_dtype() : operands_[0].tensor.dtype();
  }
  if (config.promote_integer_to_float_ && !is_floating_point(common_dtype_) && !is_complex(common_dtype_)) common_dtype_ = default_dtype();

  if (config.check_same_dtype_) {
    for (const auto& op : operands_) {
      if (!op.tensor.defined()) continue;
      KILN_CHECK(op.tensor.dtype() == common_dtype_ || !config.check_same_dtype_, config.op_name_,
                 ": expected all tensors to be of the same dtype, but found ", op.tensor.dtype(), " and ",
                 common_dtype_);
    }
  }
  // Inputs compute in the common dtype.
  if (config.promote_inputs_ || config.promote_integer_to_float_) {
    for (auto& op : operands_) {
      if (op.is_output || op.tensor.dtype() == common_dtype_) continue;
      const bool wrapped = op.tensor.impl()->is_wrapped_number();
      op.original = op.tensor;  // read by original_scalar_input
      op.tensor = to_dtype_copy(op.tensor, common_dtype_);
      op.tensor.impl()->set_wrapped_number(wrapped);
    }
  }
  const DType out_dtype = config.static_dtype_.value_or(common_dtype_);
  for (auto& op : operands_) {
    if (!op.is_output || !op.tensor.defined()) continue;
    if (config.enforce_safe_casting_) {
      KILN_CHECK(can_cast(common_dtype_, op.tensor.dtype()), "result type ", scalar_type_name(common_dtype_),
                 " can't be cast to the desired output type ", scalar_type_name(op.tensor.dtype()));
    }
    if (op.tensor.dtype() != out_dtype) {
      KILN_CHECK(config.cast_to_outputs_, config.op_name_, ": expected the output to have dtype ", out_dtype,
                 " but got ", op.tensor.dtype());
      op.original = op.tensor;  // computed into a temporary, copied back by cast_outputs()
      op.tensor = Tensor();
    }
  }
  if (config.static_dtype_) common_dtype_ = config.static_dtype_.value_or(common_dtype_);
  out_dtype_ = out_dtype;
}

bool TensorIterator::all_dense_same_shape() const {
  for (const auto& op : operands_) {
    if (!op.tensor.defined()) continue;
    const Tensor& t = op.tensor;
    if (!t.is_contiguous() || t.sizes().size() != shape_.size() ||
        !std::equal(shape_.begin(), shape_.end(), t.sizes().begin())) {
      return false;
    }
  }
  return true;
}

void TensorIterator::reorder_and_coalesce() {
  const size_t ndim = shape_.size();
  if (ndim > 0 && all_dense_same_shape()) {
    // Row-major everywhere: one dimension of numel elements, strides from the last user dim.
    user_perm_.resize(ndim);
    for (size_t i = 0; i < ndim; ++i) user_perm_[i] = static_cast<int64_t>(ndim - 1 - i);
    iter_shape_.assign(1, numel_);
    perm_.assign(1, static_cast<int64_t>(ndim - 1));
    dense_ = true;
    return;
  }
  // perm_[i] = the user dim at iteration position i (0 = innermost); start from row-major.
  perm_.resize(ndim);
  for (size_t i = 0; i < ndim; ++i) perm_[i] = static_cast<int64_t>(ndim - 1 - i);
  StaticVector<DimVector, kMaxOperands> strides;
  for (const auto& op : operands_) {
    if (op.tensor.defined()) strides.push_back(broadcast_strides(op.tensor, shape_));
  }
  // -1: d0 belongs inside d1 (keep), 1: swap, 0: no evidence.
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& s : strides) {
      const int64_t s0 = s[static_cast<size_t>(d0)], s1 = s[static_cast<size_t>(d1)];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape_[static_cast<size_t>(d0)] > shape_[static_cast<size_t>(d1)]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < ndim; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      const int c = should_swap(perm_[d0], perm_[d1]);
      if (c > 0) {
        std::swap(perm_[d0], perm_[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  // Coalesce neighbours (in iteration order) that every operand walks densely.
  iter_shape_.clear();
  DimVector kept_perm;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t d = perm_[i];
    const int64_t size = shape_[static_cast<size_t>(d)];
    if (!iter_shape_.empty()) {
      const int64_t prev_dim = kept_perm.back();
      bool can_merge = true;
      for (const auto& s : strides) {
        const int64_t inner_extent = iter_shape_.back() * s[static_cast<size_t>(prev_dim)];
        if (size != 1 && iter_shape_.back() != 1 && s[static_cast<size_t>(d)] != inner_extent) can_merge = false;
      }
      if (can_merge) {
        // The merged dim keeps the inner dim's strides (or the outer's when the inner has size 1).
        if (iter_shape_.back() == 1) kept_perm.back() = d;
        iter_shape_.back() *= size;
        continue;
      }
    }
    iter_shape_.push_back(size);
    kept_perm.push_back(d);
  }
  user_perm_ = perm_;
  perm_ = kept_perm;
}

void TensorIterator::resize_outputs(const TensorIteratorConfig& config) {
  for (auto& op : operands_) {
    if (!op.is_output) continue;
    const Tensor& out = op.original.defined() ? op.original : op.tensor;
    if (!out.defined()) continue;
    const bool same_shape =
        out.sizes().size() == shape_.size() && std::equal(shape_.begin(), shape_.end(), out.sizes().begin());
    if (same_shape) continue;
    KILN_CHECK(config.resize_outputs_, "output with shape ", out.sizes(), " doesn't match the broadcast shape ",
               shape_);
    native::resize_output(out, shape_);
  }
}

void TensorIterator::allocate_outputs() {
  // A new output (or a temporary for an out= of another dtype) follows the
  // iteration order, so a transposed input gives a transposed result.
  DimVector strides(shape_.size(), 0);
  int64_t running = 1;
  for (size_t i = 0; i < user_perm_.size(); ++i) {
    const auto d = static_cast<size_t>(user_perm_[i]);
    strides[d] = running;
    running *= std::max<int64_t>(shape_[d], 1);
  }
  const Device device = meta_ ? Device(DeviceType::Meta) : ninputs() > 0 ? input(0).device() : Device();
  for (auto& op : operands_) {
    if (op.is_output && !op.tensor.defined()) {
      op.tensor = empty_strided(shape_, strides, out_dtype_, device);
      op.allocated = true;
    }
  }
}

namespace {

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.dtype() == b.dtype() && a.sizes().size() == b.sizes().size() &&
         std::equal(a.sizes().begin(), a.sizes().end(), b.sizes().begin()) &&
         std::equal(a.strides().begin(), a.strides().end(), b.strides().begin());
}

}  // namespace

void TensorIterator::check_memory_overlap(const TensorIteratorConfig& config) const {
  for (const auto& out : operands_) {
    // Outputs this iterator allocated cannot overlap anything.
    if (!out.is_output || out.allocated || out.tensor.numel() == 0) continue;
    for (int64_t d = 0; d < out.tensor.dim(); ++d) {
      KILN_CHECK(!(out.tensor.size(d) > 1 && out.tensor.stride(d) == 0),
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.");
    }
    for (const auto& in : operands_) {
      if (in.is_output || in.tensor.numel() == 0 || in.tensor.storage() != out.tensor.storage()) continue;
      if (same_geometry(in.tensor, out.tensor)) continue;
      KILN_CHECK(!byte_spans_meet(in.tensor, out.tensor),
                 "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                 "single memory location. Please clone() the tensor before performing the operation.");
    }
  }
  (void)config;
}

// --- running -----------------------------------------------------------------------

bool TensorIterator::is_cpu_scalar_input(int i) const {
  const Operand& op = operands_[static_cast<size_t>(noutputs_ + i)];
  const Tensor& t = op.original.defined() ? op.original : op.tensor;
  return !meta_ && t.defined() && t.numel() == 1 && t.device().is_cpu();
}

Scalar TensorIterator::original_scalar_input(int i) const {
  const Operand& op = operands_[static_cast<size_t>(noutputs_ + i)];
  const Tensor& t = op.original.defined() ? op.original : op.tensor;
  KILN_CHECK(t.numel() == 1, "original_scalar_input: input ", i, " has ", t.numel(), " elements");
  const char* data = static_cast<const char*>(t.data_ptr());
  return visit_dtype_and_complex(t.dtype(), [&](auto tag) -> Scalar {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, data, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      return Scalar(static_cast<double>(v));
    } else if constexpr (is_complex_v<T>) {
      return Scalar(std::complex<double>(v.real(), v.imag()));
    } else {
      return Scalar(static_cast<double>(static_cast<float>(v)));  // float16/bfloat16, exactly
    }
  });
}

const Tensor& TensorIterator::output(int i) const {
  const Operand& op = operands_[static_cast<size_t>(i)];
  return op.original.defined() ? op.original : op.tensor;
}

bool TensorIterator::is_contiguous() const {
  if (iter_shape_.size() > 1) return false;
  for (const auto& op : operands_) {
    if (!op.byte_strides.empty() && op.byte_strides[0] != op.tensor.itemsize()) return false;
  }
  return true;
}

void TensorIterator::serial_for_each(Loop2d loop, int64_t begin, int64_t end) const {
  if (meta_) return;  // Note [TensorIterator on meta tensors]
  const size_t nt = operands_.size();
  constexpr size_t kMaxOperands = 8;
  KILN_CHECK(nt <= kMaxOperands, "TensorIterator supports at most ", kMaxOperands, " operands");
  char* ptrs[kMaxOperands];
  int64_t strides[2 * kMaxOperands];
  const size_t ndim = iter_shape_.size();
  if (ndim == 0) {  // one element
    for (size_t i = 0; i < nt; ++i) {
      ptrs[i] = operands_[i].data;
      strides[i] = strides[nt + i] = 0;
    }
    if (begin < end) loop(ptrs, strides, 1, 1);
    return;
  }
  const int64_t size0 = iter_shape_[0];
  const int64_t size1 = ndim > 1 ? iter_shape_[1] : 1;
  for (size_t i = 0; i < nt; ++i) {
    strides[i] = operands_[i].byte_strides[0];
    strides[nt + i] = ndim > 1 ? operands_[i].byte_strides[1] : 0;
  }
  if (ndim == 1) {  // one run from `begin`: no multi-index to work out
    for (size_t i = 0; i < nt; ++i) ptrs[i] = operands_[i].data + begin * strides[i];
    if (begin < end) loop(ptrs, strides, end - begin, 1);
    return;
  }
  int64_t linear = begin;
  while (linear < end) {
    // Multi-index of `linear` (innermost first), and the data pointers there.
    int64_t rem = linear;
    for (size_t i = 0; i < nt; ++i) ptrs[i] = operands_[i].data;
    int64_t idx0 = 0, idx1 = 0;
    for (size_t d = 0; d < ndim; ++d) {
      const int64_t idx = rem % iter_shape_[d];
      rem /= iter_shape_[d];
      if (d == 0) idx0 = idx;
      if (d == 1) idx1 = idx;
      for (size_t i = 0; i < nt; ++i) ptrs[i] += idx * operands_[i].byte_strides[d];
    }
    const int64_t left = end - linear;
    if (idx0 != 0 || left < size0) {
      const int64_t n = std::min(size0 - idx0, left);
      loop(ptrs, strides, n, 1);
      linear += n;
      continue;
    }
    const int64_t rows = std::min(left / size0, size1 - idx1);
    loop(ptrs, strides, size0, rows);
    linear += rows * size0;
  }
}

void TensorIterator::for_each(Loop2d loop, int64_t grain_size) {
  if (numel_ == 0 || meta_) return;
  if (numel_ <= grain_size || get_num_threads() == 1) {
    serial_for_each(loop, 0, numel_);
    return;
  }
  parallel_for(0, numel_, grain_size, [&](int64_t b, int64_t e) { serial_for_each(loop, b, e); });
}

void TensorIterator::cast_outputs() {
  if (meta_) return;
  for (auto& op : operands_) {
    if (op.is_output && op.original.defined()) {
      copy_(op.original, op.tensor);
    }
  }
}

Tensor wrapped_scalar_tensor(const Scalar& value, Device device) {
  Tensor t = full({}, value, value.natural_dtype(), device);
  t.impl()->set_wrapped_number(true);
  return t;
}

}  // namespace kiln
