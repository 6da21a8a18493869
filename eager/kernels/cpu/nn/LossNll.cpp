// nll_loss_forward / nll_loss_backward on [N, C] (or [C]) log-probabilities,
// and the composites nll_loss (any spatial dims) and cross_entropy_loss.
#include <optional>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/NllLossShape.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/VisitFloating.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [nll_loss reads only valid targets]
// ----------------------------------------
// Every target is checked against [0, C) before the input is read at it
// (ignore_index excepted: it is skipped, never read), so a bad target raises
// IndexError "Target 10 is out of bounds." as PyTorch does and never reads
// past the row. Sums run in double for float64 and in float otherwise
// (float16/bfloat16 widened), in row order, so the result does not depend on
// the thread count; mean divides by the sum of the weights of the counted
// targets (NaN when every target is ignored, as in PyTorch).

namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };


/// The targets as int64 (uint8 widened), contiguous.
std::vector<int64_t> read_targets(const Tensor& target, const NllShape& s, int64_t ignore_index) {
  const Tensor t = contiguous_values(target);
  std::vector<int64_t> out(static_cast<size_t>(s.batch));
  for (int64_t i = 0; i < s.batch; ++i) {
    const int64_t v = t.dtype() == DType::UInt8 ? t.data_ptr<uint8_t>()[i] : t.data_ptr<int64_t>()[i];
    KILN_CHECK_INDEX(v == ignore_index || (v >= 0 && v < s.classes), "Target ", v, " is out of bounds.");
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

}  // namespace

std::tuple<Tensor, Tensor> nll_loss_forward_cpu(const Tensor& self, const Tensor& target,
                                                const std::optional<Tensor>& weight, int64_t reduction,
                                                int64_t ignore_index) {
  const NllShape s = check_nll_arguments(self, target, weight, reduction);
  if (self.impl()->is_meta()) {  // the checks above are the meta function (the targets' bounds need data)
    Tensor output = reduction == kNone && s.batched ? empty({s.batch}, self.dtype(), self.device())
                                                    : empty({}, self.dtype(), self.device());
    return {output, empty({}, self.dtype(), self.device())};
  }
  const std::vector<int64_t> targets = read_targets(target, s, ignore_index);
  const Tensor x = contiguous_values(self);
  const bool has_weight = weight && weight->defined();
  const Tensor w = has_weight ? contiguous_values(*weight) : Tensor();
  Tensor output = reduction == kNone && s.batched ? empty({s.batch}, self.dtype()) : empty({}, self.dtype());
  Tensor total_weight = empty({}, self.dtype(), self.device());
  visit_floating_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* xp = x.data_ptr<T>();
    const T* wp = has_weight ? w.data_ptr<T>() : nullptr;
    T* op = output.data_ptr<T>();
    A loss_sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < s.batch; ++i) {
      const int64_t t = targets[static_cast<size_t>(i)];
      A loss = 0, wt = 0;
      if (t != ignore_index) {
        wt = wp ? static_cast<A>(wp[t]) : A(1);
        loss = -static_cast<A>(xp[i * s.classes + t]) * wt;
      }
      if (reduction == kNone && s.batched) op[i] = static_cast<T>(loss);
      loss_sum += loss;
      weight_sum += wt;
    }
    if (reduction == kNone && !s.batched) op[0] = static_cast<T>(loss_sum);
    if (reduction == kSum) op[0] = static_cast<T>(loss_sum);
    if (reduction == kMean) op[0] = static_cast<T>(loss_sum / weight_sum);
    total_weight.data_ptr<T>()[0] = static_cast<T>(reduction == kNone ? A(0) : weight_sum);
  });
  return {output, total_weight};
}

Tensor nll_loss_backward_cpu(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                             const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const Tensor& total_weight) {
  const NllShape s = check_nll_arguments(self, target, weight, reduction);
  const bool per_element = reduction == kNone && s.batched;
  const auto check_grad_output = [&] {
    KILN_CHECK(per_element ? grad_output.numel() == s.batch : grad_output.numel() == 1,
               "nll_loss_backward: expected grad_output of ", per_element ? s.batch : 1, " elements but got ",
               grad_output.sizes());
  };
  if (self.impl()->is_meta()) {  // the checks are the meta function (the targets' bounds need data)
    check_grad_output();
    return empty(self.sizes(), self.dtype(), self.device());
  }
  const std::vector<int64_t> targets = read_targets(target, s, ignore_index);
  check_grad_output();
  const bool has_weight = weight && weight->defined();
  const Tensor w = has_weight ? contiguous_values(*weight) : Tensor();
  const Tensor g = contiguous_values(grad_output.dtype() == self.dtype() ? grad_output : to_dtype_copy(grad_output, self.dtype()));
  Tensor grad_input = zeros(self.sizes(), self.dtype(), self.device());
  visit_floating_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* wp = has_weight ? w.data_ptr<T>() : nullptr;
    const T* gp = g.data_ptr<T>();
    T* gi = grad_input.data_ptr<T>();
    // A per-element gradient may be empty (a zero batch): gp[0] exists only for the reduced forms.
    A scale = per_element ? A(0) : static_cast<A>(gp[0]);
    if (!per_element && reduction == kMean) scale /= static_cast<A>(contiguous_values(total_weight).data_ptr<T>()[0]);
    for (int64_t i = 0; i < s.batch; ++i) {
      const int64_t t = targets[static_cast<size_t>(i)];
      if (t == ignore_index) continue;
      const A wt = wp ? static_cast<A>(wp[t]) : A(1);
      const A gv = per_element ? static_cast<A>(gp[i]) : scale;
      gi[i * s.classes + t] = static_cast<T>(-wt * gv);
    }
  });
  return grad_input;
}

// --- composites: through the dispatcher, so autograd sees nll_loss_forward ---

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                int64_t ignore_index) {
  if (self.dim() <= 2) return std::get<0>(kiln::nll_loss_forward(self, target, weight, reduction, ignore_index));
  // [N, C, d1, ...] -> [N * d1 * ..., C]; the target [N, d1, ...] must match.
  KILN_CHECK_VALUE(target.dim() == self.dim() - 1, "Expected target size ", self.sizes(), ", got ", target.sizes());
  for (int64_t d = 0; d < target.dim(); ++d) {
    const int64_t expected = self.size(d < 1 ? d : d + 1);
    KILN_CHECK(target.size(d) == expected, "size mismatch (got input: ", self.sizes(), ", target: ",
               target.sizes(), ")");
  }
  const int64_t classes = self.size(1);
  const Tensor rows = kiln::reshape(kiln::movedim(self, 1, -1), std::vector<int64_t>{-1, classes});
  const Tensor flat_target = kiln::reshape(target, std::vector<int64_t>{-1});
  const Tensor loss = std::get<0>(kiln::nll_loss_forward(rows, flat_target, weight, reduction, ignore_index));
  return reduction == kNone ? kiln::reshape(loss, target.sizes()) : loss;
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  KILN_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
             "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  KILN_CHECK_NOT_IMPLEMENTED(!is_floating_point(target.dtype()) && label_smoothing == 0.0,
                             "cross_entropy_loss: probability targets and label_smoothing need sum (not on main yet)");
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  return kiln::nll_loss(kiln::log_softmax(self, class_dim), target, weight, reduction, ignore_index);
}

}  // namespace kiln::native
