// Vector primitives of the unary pointwise loops and activations
// (pointwise/per_capability/UnaryOpsKernel.cpp, ActivationKernel.cpp): the
// SLEEF functions Vec.h does not wrap, lane selects and constants. The loops
// over a Vec function of one argument are ../PointwiseLoops.h's. Only for
// files compiled per CPU capability.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "eager/kernels/cpu/vec/Vec.h"
#include "eager/kernels/cpu/vec/VecBinary.h"
#include "eager/kernels/cpu/vec/VecTanh.h"

namespace kiln::native::KILN_CPU_NS {

// --- vector math beyond Vec.h's ----------------------------------------------------

// libmvec at AVX2, SLEEF elsewhere (Note [Vector math by measurement], Vec.h).
KILN_VEC_UNARY_MATH(vasin, asin, u10)
KILN_VEC_UNARY_MATH(vacos, acos, u10)
KILN_VEC_UNARY_MATH(vatan, atan, u10)
KILN_VEC_UNARY_MATH(vsinh, sinh, u10)
KILN_VEC_UNARY_MATH(vcosh, cosh, u10)
KILN_VEC_UNARY_MATH(vasinh, asinh, u10)
KILN_VEC_UNARY_MATH(vacosh, acosh, u10)
KILN_VEC_UNARY_MATH(vatanh, atanh, u10)
KILN_VEC_UNARY_MATH(verfc, erfc, u15)
KILN_VEC_UNARY_SLEEF(vfabs, fabs, )
KILN_VEC_UNARY_SLEEF(vfloor, floor, )
KILN_VEC_UNARY_SLEEF(vceil, ceil, )
KILN_VEC_UNARY_SLEEF(vtrunc, trunc, )
KILN_VEC_UNARY_SLEEF(vrint, rint, )  // round half to even, as std::nearbyint in the default mode

// --- lane selects ------------------------------------------------------------------------

/// mask ? a : b per lane (mask from a comparison of Vec<T>::v).
template <typename T>
Vec<T> select(vec_mask_t<T> mask, Vec<T> a, Vec<T> b) {
  return {mask ? a.v : b.v};
}

/// A value of type T as a Vec, for the constants of a formula.
template <typename T>
Vec<T> vconst(double x) {
  return Vec<T>::splat(static_cast<T>(x));
}

/// The element type of a Vec (inside generic lambdas over Vec<float> and Vec<double>).
template <typename V>
using lane_t = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<V>().v[0])>>;

}  // namespace kiln::native::KILN_CPU_NS
