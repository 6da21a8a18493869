// The attention backward of a compiled graph writing the q, k and v gradients
// straight into the cat that stacks them (Note [Attention gradients into their cat]).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <vector>

#include "eager/dispatch/IValue.h"
#include "ir/Graph.h"

namespace kiln::runtime {

// Note [Attention gradients into their cat]
// -----------------------------------------
// A training step through a fused qkv projection (one linear to 3C, split
// into q, k, v, each viewed [B, T, H, D] and transposed to [B, H, T, D])
// gets, in its backward, the three gradients of
// _scaled_dot_product_flash_attention_for_cpu_backward ([B, H, T, D],
// zero-filled then accumulated by the loops) stacked by one cat, which
// passes/cat_strided_pieces leaves as
//     %t_i = transpose.int(%g_i, 1, 2); %u_i = unsqueeze(%t_i, 2)
//     %c = cat([%u_a, %u_b, %u_c], dim=2)        # [B, T, 3, H, D], contiguous
// The backward's loops take each gradient through its batch, head and row
// strides, so the step zero-fills %c once and hands the loops its three
// slices, transposed back to [B, H, T, D] (native::flash_attention_backward_into):
// the cat's copy (and the three separate zero-fills) are gone, the loops and
// their sums are the op's, so the values are eager's bit for bit. The
// transposes, unsqueezes, list and cat are not run; the step runs where the
// backward node stands and writes the cat's value. Where the run-time inputs
// do not fit (float16/bfloat16, which compute in float32 and round), the
// nodes run eagerly as captured.

/// One attention backward whose gradients only feed one stacking cat (Note above).
struct AttentionGradsIntoCat {
  const ir::Node* backward = nullptr;
  const ir::Node* cat = nullptr;
  std::array<int64_t, 3> piece_of_grad{};  // the cat position of grad_query, grad_key, grad_value
  bool is_causal = false;
  std::optional<double> scale;
  const ir::Value* attn_mask = nullptr;  // nullptr: no mask
  std::vector<const ir::Node*> nodes;    // the backward, transposes, unsqueezes, list and cat, in graph order
};

/// Given a node n of graph g.
/// Do    match_attention_grads_into_cat(g, n).
/// Result the pattern of Note [Attention gradients into their cat] when n is the backward node starting
///        it (float32/float64 recorded types, no dropout, none of the intermediate values read elsewhere or
///        returned), else nullopt.
[[nodiscard]] std::optional<AttentionGradsIntoCat> match_attention_grads_into_cat(const ir::Graph& g,
                                                                                  const ir::Node& n);

/// Given a match and `get` reading the graph's values at the backward's step.
/// Do    run_attention_grads_into_cat(m, get).
/// Result the cat's value: the gradients computed into one zero-filled [B, T, 3, H, D] tensor; or
///        nullopt when the inputs do not fit (the caller runs m.nodes eagerly).
[[nodiscard]] std::optional<Tensor> run_attention_grads_into_cat(
    const AttentionGradsIntoCat& m, const std::function<const IValue&(const ir::Value*)>& get);

}  // namespace kiln::runtime
