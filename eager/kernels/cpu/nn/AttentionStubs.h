// Dispatch stubs of the fused attention loops (per_capability/AttentionKernel.cpp).
// Attention.cpp checks the arguments, widens float16/bfloat16 to float32 and
// fills an AttentionPlan; the loops read every [B, H, seq, dim] operand
// through its batch, head and row strides (unit stride along dim). See Note
// [Flash attention on the CPU] (Attention.cpp).
#pragma once

#include <cstdint>

#include "eager/core/DType.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/random/Philox.h"

namespace kiln::native {

/// One [B, H, rows, cols] operand: element (b, h, i, c) is at
/// data + b * sb + h * sh + i * sr + c (strides in elements).
struct AttentionOperand {
  void* data = nullptr;
  int64_t sb = 0, sh = 0, sr = 0;
};

/// The mask broadcast to [B, H, L, S]: element (b, h, i, j) at
/// data + b * sb + h * sh + i * sr + j * sc; bool (keep where true) or additive
/// in the compute dtype. data is nullptr without a mask.
struct AttentionMask {
  const void* data = nullptr;
  bool is_bool = false;
  int64_t sb = 0, sh = 0, sr = 0, sc = 0;
};

/// Dropout on the attention weights (Note [Dropout in fused attention],
/// Attention.cpp): weight (b, h, i, j) is kept when word e = ((b H + h) L + i) S + j
/// of the Philox stream at (seed, offset), in Note [Random groups] order, passes
/// bernoulli(1 - p)'s test `keep`, and is then multiplied by `scale`.
struct AttentionDropout {
  bool enabled = false;
  uint64_t seed = 0, offset = 0;
  random::BernoulliThreshold keep;
  double scale = 1.0;  // 1 / (1 - dropout_p)
};

struct AttentionPlan {
  DType dtype = DType::Float32;  // the compute dtype of every operand: float32 or float64
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  int64_t kv_group = 1;  // query heads per key/value head (enable_gqa): head h reads key/value head h / kv_group
  double scale = 1.0;
  bool causal = false;  // top-left aligned: query i sees keys j <= i
  AttentionOperand query, key, value, out;
  AttentionOperand logsumexp;  // [B, H, L, 1]: sr is the stride between rows
  AttentionMask mask;
  AttentionDropout dropout;
};

/// out = softmax(scale * q k^T + mask) v and logsumexp per row, block by block.
/// A row that no key may attend gets 0 for its output and its logsumexp.
using attention_forward_fn = void (*)(const AttentionPlan& plan);
/// grad_query, grad_key, grad_value (dense [B, H or H / kv_group, rows, dim],
/// zero-filled by the caller, accumulated into) from grad_out, out and the
/// saved logsumexp.
using attention_backward_fn = void (*)(const AttentionPlan& plan, const AttentionOperand& grad_out,
                                       const AttentionOperand& grad_query, const AttentionOperand& grad_key,
                                       const AttentionOperand& grad_value);

KILN_DECLARE_DISPATCH(attention_forward_fn, attention_forward_stub);
KILN_DECLARE_DISPATCH(attention_backward_fn, attention_backward_stub);

}  // namespace kiln::native
