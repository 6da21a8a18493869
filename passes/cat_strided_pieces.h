// A cat of contiguous copies reads the pieces themselves: the copies that only
// reshape a strided tensor for the cat (the q/k/v gradients of attention) go.
#pragma once

#include <cstddef>

#include "ir/Graph.h"

namespace kiln::passes {

// Note [A cat of reshaped copies]
// -------------------------------
// Attention's backward returns the q, k and v gradients as [B, H, T, D]; the
// forward's split(C, dim=2) + view + transpose(1, 2) turn, in the backward,
// into transpose(1, 2) + clone(contiguous) + view([B, T, C]) per piece and a
// cat along dim 2. Each clone copies a piece once, the cat copies it again.
// cat_strided_pieces stacks the strided pieces instead: with each piece
// x_i : [P..., Q...] (one shape for all), c_i = clone(x_i, contiguous) or
// contiguous(x_i), v_i = view(c_i, [P..., prod(Q)]) and the cat along
// len(P), the last dim, the result is view(cat([unsqueeze(x_i, len(P))],
// dim=len(P)), [P..., k prod(Q)]): the same elements in the same places (the
// cat's result is contiguous, so the view is one), copied once, by the cat,
// which reads strided pieces. Nothing is computed, so the values are eager's
// bit for bit. The copies left unread go with eliminate_dead_code; a copy
// read elsewhere stays. Graphs that write in place are left as they are.

/// Given graph(%g0 : f32[8, 4, 64, 32], %g1, %g2):
///         %t_i = kiln::transpose.int(%g_i, dim0=1, dim1=2)          # [8, 64, 4, 32], strided
///         %c_i = kiln::clone(%t_i, memory_format=0)
///         %v_i = kiln::view(%c_i, size=[8, 64, 128])
///         %r = kiln::cat(prim::ListConstruct(%v0, %v1, %v2), dim=2)  # [8, 64, 384]
/// Do    cat_strided_pieces(g).
/// Result %r's readers read view(cat([unsqueeze(%t_i, 2)], dim=2), [8, 64, 384]) (Note above);
///        returns the number of cats rewritten.
size_t cat_strided_pieces(ir::Graph& g);

}  // namespace kiln::passes
