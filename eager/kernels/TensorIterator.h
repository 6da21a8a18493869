// TensorIterator: the one contract every elementwise kernel meets (and, later,
// reductions). It broadcasts the operands, promotes their dtypes by PyTorch's
// rules, allocates or checks the outputs, orders and coalesces dimensions so
// the innermost loop is as long and as dense as possible, and runs a 2-D loop
// over the result, in parallel above a grain size.
//
// Usage (see eager/kernels/cpu/Loops.h for cpu_kernel):
//   auto iter = TensorIteratorConfig().add_output(out).add_const_input(a).add_const_input(b)
//                   .promote_inputs_to_common_dtype(true).cast_common_dtype_to_outputs(true)
//                   .enforce_safe_casting_to_output(true).build();
//   cpu_kernel(iter, [](float x, float y) { return x + y; });
#pragma once

#include <cstddef>
#include <type_traits>
#include <optional>
#include <vector>

#include "eager/core/Scalar.h"
#include "eager/core/StaticVector.h"
#include "eager/ops/Tensor.h"

namespace kiln {

/// A non-owning reference to a callable (no allocation, one indirect call).
template <typename Sig>
class FunctionRef;
template <typename Ret, typename... Args>
class FunctionRef<Ret(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: binds any callable that outlives the call
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> Ret { return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...); }) {}
  Ret operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  Ret (*call_)(void*, Args...);
};

/// The inner loop: data[i] points at operand i's first element of this block
/// (outputs first); strides[i] is its byte step along the inner dimension and
/// strides[ntensors + i] along the outer one; the block is size0 x size1.
using Loop2d = FunctionRef<void(char** data, const int64_t* strides, int64_t size0, int64_t size1)>;

class TensorIterator;

// Note [TensorIterator on meta tensors]
// -------------------------------------
// When any operand is a meta tensor (Note [Meta tensors have no data],
// eager/core/Storage.h) the iterator runs only its shape, type and layout
// computation: broadcasting, promotion, out= checks and resizing, dimension
// ordering, and the allocation of outputs, which land on the meta device with
// the strides a CPU run would give them. It takes no data pointers, checks no
// memory overlap (there is no memory), and for_each / serial_for_each /
// cast_outputs do nothing. So a pointwise kernel written on TensorIterator is
// its own meta function: ops.yaml registers it at the Meta key too (`meta:
// cpu_kernel`, tools/opgen). Operands must be meta tensors or 0-dim CPU
// tensors (wrapped Python numbers), as in PyTorch.

class TensorIteratorConfig {
 public:
  /// An output; an undefined Tensor asks the iterator to allocate it.
  TensorIteratorConfig& add_output(const Tensor& output);
  TensorIteratorConfig& add_const_input(const Tensor& input);

  /// Inputs of other dtypes are converted to the common dtype (Note [Promotion by category]).
  TensorIteratorConfig& promote_inputs_to_common_dtype(bool value);
  /// Integer and bool inputs promote to the default float dtype (true division, sqrt, exp, ...).
  TensorIteratorConfig& promote_integer_inputs_to_float(bool value);
  /// An output of another dtype receives the result converted (via a temporary).
  TensorIteratorConfig& cast_common_dtype_to_outputs(bool value);
  /// RuntimeError "result type Float can't be cast to the desired output type Long".
  TensorIteratorConfig& enforce_safe_casting_to_output(bool value);
  /// Without promotion: RuntimeError unless every operand has the same dtype (default on).
  TensorIteratorConfig& check_all_same_dtype(bool value);
  /// The outputs' dtype regardless of the inputs' (comparisons give bool).
  TensorIteratorConfig& declare_static_dtype(DType dtype);
  /// The iteration shape, instead of the inputs' broadcast (fills with no inputs).
  TensorIteratorConfig& declare_static_shape(IntArrayRef shape);
  /// Outputs of the wrong shape are resized (out= semantics, with PyTorch's warning when non-empty).
  TensorIteratorConfig& resize_outputs(bool value);
  /// Name used in error messages ("add", "mul", ...).
  TensorIteratorConfig& set_op_name(const char* name);

  [[nodiscard]] TensorIterator build();

 private:
  friend class TensorIterator;
  StaticVector<Tensor, 4> outputs_;
  StaticVector<Tensor, 6> inputs_;
  bool promote_inputs_ = false;
  bool promote_integer_to_float_ = false;
  bool cast_to_outputs_ = false;
  bool enforce_safe_casting_ = false;
  bool check_same_dtype_ = true;
  bool resize_outputs_ = true;
  std::optional<DType> static_dtype_;
  std::optional<DimVector> static_shape_;
  const char* op_name_ = "operation";
};

class TensorIterator {
 public:
  [[nodiscard]] int ntensors() const { return static_cast<int>(operands_.size()); }
  [[nodiscard]] int noutputs() const { return noutputs_; }
  [[nodiscard]] int ninputs() const { return ntensors() - noutputs_; }
  /// The dtype the loop computes in (every operand's dtype inside the loop).
  [[nodiscard]] DType common_dtype() const { return common_dtype_; }
  [[nodiscard]] DType dtype(int i) const { return operands_[static_cast<size_t>(i)].tensor.dtype(); }
  /// Output i as the caller sees it (the original out= tensor when a temporary was used).
  [[nodiscard]] const Tensor& output(int i = 0) const;
  [[nodiscard]] const Tensor& input(int i) const { return operands_[static_cast<size_t>(noutputs_ + i)].tensor; }
  /// The broadcast shape of the result (user order).
  [[nodiscard]] IntArrayRef shape() const { return shape_; }
  [[nodiscard]] int64_t numel() const { return numel_; }
  /// The iteration shape after reordering and coalescing (innermost first).
  [[nodiscard]] IntArrayRef iteration_shape() const { return iter_shape_; }
  /// True when one dimension remains and every operand is dense along it.
  [[nodiscard]] bool is_contiguous() const;
  /// Operand i's first element and its byte strides per iteration dimension
  /// (innermost first): what a device launcher (eager/kernels/cuda) hands its kernel.
  [[nodiscard]] void* operand_data(int i) const { return operands_[static_cast<size_t>(i)].data; }
  [[nodiscard]] IntArrayRef operand_byte_strides(int i) const { return operands_[static_cast<size_t>(i)].byte_strides; }
  /// Input i is a CPU scalar: one element with data on the CPU, read at every position of the loop
  /// (a wrapped number, a 0-dim or broadcast 1-element tensor); PyTorch's is_scalar on a CPU loop.
  [[nodiscard]] bool is_cpu_scalar_input(int i) const;
  /// That one element as the caller passed it, before its conversion to the common dtype (float16/
  /// bfloat16 mul and div read it at float precision: Note [CPU scalars at opmath precision]).
  [[nodiscard]] Scalar original_scalar_input(int i) const;
  /// The operands are meta tensors: no loop runs (Note [TensorIterator on meta tensors]).
  [[nodiscard]] bool is_meta() const { return meta_; }

  /// Runs `loop` over every element, splitting the work across threads above `grain_size`.
  void for_each(Loop2d loop, int64_t grain_size);
  /// Runs `loop` over the elements with linear indices [begin, end) on this thread.
  void serial_for_each(Loop2d loop, int64_t begin, int64_t end) const;
  /// Copies temporaries back into out= tensors of another dtype. cpu_kernel calls it.
  void cast_outputs();

 private:
  friend class TensorIteratorConfig;
  struct Operand {
    Tensor tensor;    // what the loop reads or writes (maybe a converted temporary)
    Tensor original;  // the caller's out= tensor when `tensor` is a temporary; an input before its conversion
    bool is_output = false;
    bool allocated = false;  // created by the iterator (no overlap possible)
    DimVector byte_strides;  // per iteration dimension
    char* data = nullptr;
  };
  explicit TensorIterator(TensorIteratorConfig& config);
  void check_meta_devices(const TensorIteratorConfig& config);
  void compute_shape(const TensorIteratorConfig& config);
  void compute_types(const TensorIteratorConfig& config);
  void resize_outputs(const TensorIteratorConfig& config);
  void allocate_outputs();
  void check_memory_overlap(const TensorIteratorConfig& config) const;
  void reorder_and_coalesce();
  /// Every operand dense with the result's shape: one dimension, no sorting.
  [[nodiscard]] bool all_dense_same_shape() const;

  static constexpr size_t kMaxOperands = 8;
  StaticVector<Operand, kMaxOperands> operands_;
  int noutputs_ = 0;
  DType common_dtype_ = DType::Float32;
  DType out_dtype_ = DType::Float32;
  DimVector shape_;
  DimVector user_perm_;   // user dims in iteration order, before coalescing (0 = innermost)
  DimVector perm_;        // coalesced iteration dim i takes its strides from user dim perm_[i]
  DimVector iter_shape_;  // sizes per iteration dim, innermost first
  int64_t numel_ = 0;
  bool dense_ = false;  // the all_dense_same_shape fast path was taken
  bool meta_ = false;   // some operand is a meta tensor: shapes and types only
};

/// A 0-dim tensor holding a Python scalar for an op (marked as a wrapped
/// number, so it promotes by category only; Note [Promotion by category]).
[[nodiscard]] Tensor wrapped_scalar_tensor(const Scalar& value, Device device = Device());

}  // namespace kiln
