// The fused attention backward writing its gradients into tensors the caller
// gives (for the compiled runtime: runtime/AttentionGradsIntoCat).
#pragma once

#include <optional>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// Given the arguments of _scaled_dot_product_flash_attention_for_cpu_backward (dropout_p 0) and
///       grad_query, grad_key, grad_value: zero-filled, sized as query, key and value, in query's dtype,
///       unit stride along the last dim (any batch, head and row strides: views of one buffer will do).
/// Do    flash_attention_backward_into(...).
/// Result the gradients accumulated into them, the values the op returns bit for bit (the same loops;
///        Note [Flash attention on the CPU]); false, touching nothing, where the op would compute in another
///        dtype (float16/bfloat16) or the grads' layout or sizes do not fit, or for grouped-query heads.
bool flash_attention_backward_into(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                   const Tensor& value, const Tensor& out, const Tensor& logsumexp, bool is_causal,
                                   const std::optional<Tensor>& attn_mask, std::optional<double> scale,
                                   const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value);

}  // namespace kiln::native
