// Decomposition of composite ops into the primitives a fuser can fuse
// (pointwise ops and single reductions).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given graph(%x : f32[4, 8]{8, 1}):
///         %y : f32[4, 8]{8, 1} = kiln::softmax.int(%x, dim=-1, dtype=None)
///         return (%y)
/// Do    decompose_composites(g).
/// Result %m = amax(%x, [1], keepdim) ; %e = exp(%x - %m) ;
///        %y = %e * reciprocal(sum(%e, [1], keepdim)) (eager's softmax scales by 1 / sum), and the
///        softmax node is erased.
/// Decomposed (See Note [What decompose_composites rewrites]): gelu (both
/// approximations), silu, softmax.int, _softmax, log_softmax.int,
/// _log_softmax, their backward ops (_softmax_backward_data,
/// _log_softmax_backward_data), native_layer_norm, layer_norm, _fused_rms_norm, rms_norm,
/// the norms' input gradient _norm_backward_input,
/// and dropout / native_dropout in eval mode or with p = 0 (dropout: its
/// input; native_dropout: a clone and an all-true mask). float16 and bfloat16
/// compute in float32 between two casts, as the eager kernels do. Returns the
/// number of nodes decomposed.
size_t decompose_composites(ir::Graph& g);

/// decompose_composites, leaving whole each composite node `keep_whole` accepts (kiln.compile's
/// default backend keeps pointwise composites that have kernel math of their own: silu as
/// x * sigmoid(x) is an ulp off eager's silu, and the whole op fuses anyway).
size_t decompose_composites_except(ir::Graph& g, const std::function<bool(const ir::Node&)>& keep_whole);

/// The operators decompose_composites knows ("kiln::gelu", ...).
[[nodiscard]] std::vector<std::string_view> decomposed_ops();

}  // namespace kiln::passes
