// Constant folding over the IR's literals: constants become the literal
// arguments of the ops that read them, and lists of constants become constants.
#pragma once

#include <cstddef>

#include "ir/Graph.h"

namespace kiln::passes {

/// Given graph(%x : f32[2, 3]):
///         %two : int = prim::Constant(value=2)
///         %three : int = prim::Constant(value=3)
///         %shape : int[] = prim::ListConstruct(%two, %three)
///         %a, %b : int = prim::ListUnpack(%shape)
///         %y = kiln::view(%x, %shape)
///         %z = kiln::add.Scalar(%y, %a, alpha=1)
///         return (%z)
/// Do    fold_constants(g).
/// Result %shape is prim::Constant(value=[2, 3]); %a, %b are constants 2 and 3;
///        view reads size=[2, 3] and add reads other=2 as literals, so the
///        rewrite rules (simplify_algebra) see them. The constants left unread
///        are for eliminate_dead_code. Returns the number of folds.
/// Tensor constant folding is not done: the IR has no tensor literal (an
/// Attribute holds numbers, strings, lists, dtypes and devices only), and no op
/// of ops.yaml maps literal arguments to a non-tensor result.
size_t fold_constants(ir::Graph& g);

}  // namespace kiln::passes
