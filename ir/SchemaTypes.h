// The bridge between the dispatcher's schema types and IR types: the type an
// op's return gets, and whether a value or literal fits an argument.
#pragma once

#include "eager/dispatch/FunctionSchema.h"
#include "ir/Attribute.h"
#include "ir/Type.h"

namespace kiln::ir {

/// The IR type of a schema type: Tensor -> Tensor, int/SymInt/Layout/MemoryFormat
/// -> int, Tensor?[] -> Tensor?[], int[]? -> int[]?, ...
[[nodiscard]] Type type_of_schema(const SchemaType& t);
/// Whether a value of type `t` may be passed for (or returned as) `s`:
/// None for optionals, an int for a float, any number for a Scalar.
[[nodiscard]] bool schema_accepts(const SchemaType& s, const Type& t);
/// Whether literal `a` may be passed for `s` (See Note [Empty lists are int lists]).
[[nodiscard]] bool schema_accepts(const SchemaType& s, const Attribute& a);

}  // namespace kiln::ir
