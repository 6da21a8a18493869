// The Autograd key's boxed fallback: what happens at the Autograd key for ops
// without derivative formulas. See Note [Ops without formulas].
#include "eager/autograd/AutogradMeta.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/ViewAutograd.h"
#include "eager/core/Error.h"
#include "eager/dispatch/Library.h"

namespace kiln::autograd {

// Note [Ops without formulas]
// ---------------------------
// An op reaching the Autograd key with no generated kernel runs below Autograd
// as usual. If some tensor input requires grad, its floating-point outputs get
// a NotImplemented node wired to those inputs, so the forward works and only a
// backward that actually needs the missing formula fails, naming the op (as
// PyTorch's autograd_not_implemented_fallback does). Integer and bool outputs
// (argmax, comparisons) are not differentiable and get no history. out= forms
// refuse inputs that require grad, with PyTorch's message.

namespace {

void collect_inputs(const IValue& v, std::vector<Tensor>& out) {
  switch (v.tag()) {
    case IValue::Tag::Tensor:
      out.push_back(v.to_tensor());
      break;
    case IValue::Tag::TensorList:
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
      break;
    case IValue::Tag::OptionalTensorList:
      for (const auto& t : v.to_optional_tensor_list()) {
        if (t) out.push_back(*t);
      }
      break;
    default:
      break;
  }
}

void autograd_fallback(void*, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  std::vector<Tensor> inputs;
  for (size_t i = stack->size() - n; i < stack->size(); ++i) collect_inputs((*stack)[i], inputs);
  bool any_requires_grad = false;
  for (const Tensor& t : inputs) any_requires_grad = any_requires_grad || requires_grad(t);
  KILN_CHECK(!(any_requires_grad && schema.is_out()), schema.name().name,
             "(): functions with out=... arguments don't support automatic differentiation, but one of the "
             "arguments requires grad.");
  if (any_requires_grad && schema.is_inplace()) check_inplace((*stack)[stack->size() - n].to_tensor(), true);
  {
    ExcludeDispatchKeyGuard below_autograd(DispatchKey::Autograd);
    op.redispatch_boxed(keys.below(DispatchKey::Autograd), stack);
  }
  const size_t nret = schema.returns().size();
  // A view op without a formula (view.dtype): its views were made below an
  // excluded Autograd key; mark them as made in grad mode (Note [Views know their base]).
  if (!schema.is_inplace() && !inputs.empty()) {
    for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
      const IValue& v = (*stack)[i];
      if (v.is_tensor()) note_view(inputs.front(), v.to_tensor(), false, false);
      if (v.tag() == IValue::Tag::TensorList) {
        for (const Tensor& t : v.to_tensor_list()) note_view(inputs.front(), t, false, true);
      }
    }
  }
  if (!any_requires_grad) return;
  std::shared_ptr<NotImplementedNode> node;
  auto attach = [&](const Tensor& out) {
    if (!out.defined() || !is_differentiable_dtype(out.dtype())) return;
    if (!node) {
      node = std::make_shared<NotImplementedNode>(schema.name().str());
      std::vector<Edge> edges;
      for (const Tensor& t : inputs) edges.push_back(requires_grad(t) ? gradient_edge(t) : Edge{});
      node->set_next_edges(std::move(edges));
      record_forward_trace(*node);
    }
    // An in-place op's self output rebases (Note [In-place through a view: CopySlices]).
    if (schema.is_inplace() && out.is_same(inputs.front())) {
      rebase_history(out, node);
    } else {
      set_history(out, node);
    }
  };
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    const IValue& v = (*stack)[i];
    if (v.is_tensor()) {
      attach(v.to_tensor());
    } else if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) attach(t);
    }
  }
}

}  // namespace

KILN_LIBRARY_IMPL(_, Autograd, m) { m.fallback(KernelFunction::from_boxed(&autograd_fallback)); }

}  // namespace kiln::autograd
