// The LSTM cell's pointwise loops on raw row-major buffers, shared by the
// fused cell ops (RnnCellKernel.cpp) and the whole-sequence LSTM
// (RnnSequenceKernel.cpp). The formulas are written out in
// Note [Fused recurrent cells] (eager/kernels/cpu/nn/RnnCells.cpp). Only for
// files compiled per CPU capability.
#pragma once

#include <algorithm>
#include <cstdint>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"
#include "eager/kernels/cpu/vec/VecTanh.h"

namespace kiln::native::KILN_CPU_NS {

/// fn(float{}) or fn(double{}) by dtype (the ops have checked it is one of the two).
template <typename Fn>
void visit_float_or_double(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

template <typename A>
Vec<A> vsigm(Vec<A> x) {
  return Vec<A>::splat(1) / (Vec<A>::splat(1) + vexp(-x));
}

/// fn(row, column, width) over `rows` rows of `hidden` columns, rows split across threads.
template <typename A, typename Fn>
void for_rows(int64_t rows, int64_t hidden, const Fn& fn) {
  constexpr int64_t W = Vec<A>::size;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      for (int64_t j = 0; j < hidden; j += W) fn(b, j, std::min(W, hidden - j));
    }
  });
}

/// gates [B, 4H] pre-activations (input, forget, cell, output), cx [B, H] -> hy, cy [B, H].
template <typename A>
void lstm_forward_rows(const A* gates, const A* cx, A* hy, A* cy, int64_t B, int64_t H) {
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* row = gates + b * 4 * H + j;
    const Vec<A> i = vsigm(load(row, w)), f = vsigm(load(row + H, w));
    const Vec<A> cell = vtanh(load(row + 2 * H, w)), o = vsigm(load(row + 3 * H, w));
    const Vec<A> c_new = f * load(cx + b * H + j, w) + i * cell;
    store(c_new, cy + b * H + j, w);
    store(o * vtanh(c_new), hy + b * H + j, w);
  });
}

/// The backward of lstm_forward_rows from grad_hy (+ grad_hy_more when not null) and grad_cy:
/// grad_gates [B, 4H] (pre-activations) and grad_cx [B, H], each when not null. grad_cx may
/// be grad_cy itself (each element is read before it is written).
template <typename A>
void lstm_backward_rows(const A* grad_hy, const A* grad_hy_more, const A* grad_cy, const A* gates, const A* cx,
                        const A* cy, A* grad_gates, A* grad_cx, int64_t B, int64_t H) {
  const Vec<A> one = Vec<A>::splat(1);
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* row = gates + b * 4 * H + j;
    const int64_t at = b * H + j;
    const Vec<A> i = vsigm(load(row, w)), f = vsigm(load(row + H, w));
    const Vec<A> cell = vtanh(load(row + 2 * H, w)), o = vsigm(load(row + 3 * H, w));
    const Vec<A> tc = vtanh(load(cy + at, w));
    const Vec<A> dh = grad_hy_more == nullptr ? load(grad_hy + at, w) : load(grad_hy + at, w) + load(grad_hy_more + at, w);
    const Vec<A> dcy = load(grad_cy + at, w) + dh * o * (one - tc * tc);  // through hy = o tanh(cy) and cy itself
    if (grad_cx != nullptr) store(dcy * f, grad_cx + at, w);
    if (grad_gates == nullptr) return;
    A* out = grad_gates + b * 4 * H + j;
    store(dcy * cell * i * (one - i), out, w);
    store(dcy * load(cx + at, w) * f * (one - f), out + H, w);
    store(dcy * i * (one - cell * cell), out + 2 * H, w);
    store(dh * tc * o * (one - o), out + 3 * H, w);
  });
}

}  // namespace kiln::native::KILN_CPU_NS
