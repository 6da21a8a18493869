// The fused attention loops, compiled per CPU capability: the forward (online
// softmax over key blocks) and the backward (probabilities recomputed from the
// saved logsumexp). Score blocks and products go through the BLAS (gemm_raw)
// on raw pointers with the operands' row strides as leading dims; the
// row-wise work (mask, exp, running max and sum) runs on Vec. Every task
// writes only its own rows, so results do not depend on the thread count. See
// Note [Flash attention on the CPU] (Attention.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/nn/AttentionStubs.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"
#include "eager/kernels/cpu/random/per_capability/PhiloxVec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// Query rows per block: small blocks for short sequences keep every thread
/// busy; longer ones amortise each key block over more rows.
int64_t query_block(int64_t q_len) { return q_len >= 768 ? 128 : q_len >= 192 ? 64 : 32; }
/// Keys per block: the forward's score block (up to 128 x 512 floats) stays in
/// L2; the backward keeps two blocks (P and dP) of half the width.
constexpr int64_t kForwardKeyBlock = 512;
constexpr int64_t kBackwardKeyBlock = 256;

template <typename A>
A* at(const AttentionOperand& o, int64_t b, int64_t h, int64_t row = 0) {
  return static_cast<A*>(o.data) + b * o.sb + h * o.sh + row * o.sr;
}

/// The keys query rows [i0, i0 + m) may see: all of them, or j < i0 + m when causal.
int64_t key_end(const AttentionPlan& p, int64_t i0, int64_t m) {
  return p.causal ? std::min(p.kv_len, i0 + m) : p.kv_len;
}

/// scores [m, n] (row stride n) of query rows i0.. against keys j0..: the
/// mask applied (bool: -inf where false; float: added) and, when causal, -inf
/// above the top-left diagonal.
template <typename A>
void mask_scores(const AttentionPlan& p, int64_t b, int64_t h, int64_t i0, int64_t m, int64_t j0, int64_t n,
                 A* scores) {
  const AttentionMask& mk = p.mask;
  if (mk.data != nullptr) {
    for (int64_t r = 0; r < m; ++r) {
      A* row = scores + r * n;
      const int64_t base = b * mk.sb + h * mk.sh + (i0 + r) * mk.sr + j0 * mk.sc;
      if (mk.is_bool) {
        const bool* keep = static_cast<const bool*>(mk.data) + base;
        for (int64_t c = 0; c < n; ++c) row[c] = keep[c * mk.sc] ? row[c] : kNegInf<A>;
      } else {
        const A* add = static_cast<const A*>(mk.data) + base;
        if (mk.sc == 1) {
          for (int64_t c = 0; c < n; ++c) row[c] += add[c];
        } else {
          for (int64_t c = 0; c < n; ++c) row[c] += add[c * mk.sc];
        }
      }
    }
  }
  if (p.causal && j0 + n - 1 > i0) {
    for (int64_t r = 0; r < m; ++r) {
      // Row i0 + r keeps keys j <= i0 + r, i.e. columns c <= i0 + r - j0.
      const int64_t first_masked = std::max<int64_t>(0, i0 + r - j0 + 1);
      A* row = scores + r * n;
      for (int64_t c = first_masked; c < n; ++c) row[c] = kNegInf<A>;
    }
  }
}

/// x = exp(x - shift) in place; returns the sum of the new values when kSum
/// (the forward's running sum), else 0 (the backward's probabilities).
template <bool kSum, typename A>
A exp_shifted(A* x, int64_t n, A shift) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  const int64_t full = n - n % W;
  const V s = V::splat(shift);
  V vsum = V::splat(0);
  for (int64_t i = 0; i < full; i += W) {
    const V e = vexp(V::loadu(x + i) - s);
    e.storeu(x + i);
    if constexpr (kSum) vsum = vsum + e;
  }
  if (full < n) {
    const V e = vexp(load_padded(x + full, n - full, kNegInf<A>) - s);
    e.storeu(x + full, n - full);
    if constexpr (kSum) vsum = vsum + e;
  }
  return kSum ? hsum(vsum) : A(0);
}

template <typename A>
void scale_row(A* x, int64_t n, A factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

// --- dropout ------------------------------------------------------------------------

/// The index of weight (b, h, i, j) in the dropout stream: its row-major place in [B, H, L, S].
int64_t dropout_element(const AttentionPlan& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  return ((b * p.heads + h) * p.q_len + i) * p.kv_len + j;
}

/// keep[c] = 1 when element e0 + c of the dropout stream is kept, c < n: the
/// groups the run touches are generated whole, each word compared once.
void dropout_keep(const AttentionDropout& d, int64_t e0, int64_t n, uint8_t* keep) {
  if (d.keep.always) {
    std::fill(keep, keep + n, uint8_t{1});
    return;
  }
  alignas(64) uint32_t words[random::kGroupWords];
  for (int64_t c = 0; c < n;) {
    const int64_t e = e0 + c, g = e / random::kGroupWords, w0 = e % random::kGroupWords;
    philox_vec::philox_group(d.seed, d.offset + static_cast<uint64_t>(g * random::kGroupBlocks), words);
    const int64_t take = std::min(random::kGroupWords - w0, n - c);
    for (int64_t t = 0; t < take; ++t) keep[c + t] = d.keep.hit(words[w0 + t]) ? 1 : 0;
    c += take;
  }
}

/// dst[c] = keep[c] ? src[c] * scale : 0 (dst may be src).
template <typename A>
void apply_keep(const A* src, A* dst, const uint8_t* keep, int64_t n, A scale) {
  for (int64_t c = 0; c < n; ++c) dst[c] = keep[c] ? src[c] * scale : A(0);
}

/// The per-task scratch of the forward: one score block, the output
/// accumulator and the running max and sum of each row.
template <typename A>
struct ForwardScratch {
  std::vector<A> scores, acc, max, sum;
  std::vector<uint8_t> keep;  // one row's dropout mask
  ForwardScratch(int64_t qb, int64_t dv)
      : scores(static_cast<size_t>(qb * kForwardKeyBlock)), acc(static_cast<size_t>(qb * dv)),
        max(static_cast<size_t>(qb)), sum(static_cast<size_t>(qb)), keep(static_cast<size_t>(kForwardKeyBlock)) {}
};

/// One (batch, head, query block): Note [Flash attention on the CPU].
template <typename A>
void forward_block(const AttentionPlan& p, int64_t b, int64_t h, int64_t i0, int64_t m, ForwardScratch<A>& s) {
  const int64_t D = p.head_dim, Dv = p.value_dim;
  const A* q = at<A>(p.query, b, h, i0);
  const A* k = at<A>(p.key, b, h / p.kv_group);
  const A* v = at<A>(p.value, b, h / p.kv_group);
  std::fill(s.acc.begin(), s.acc.begin() + m * Dv, A(0));
  std::fill(s.max.begin(), s.max.begin() + m, kNegInf<A>);
  std::fill(s.sum.begin(), s.sum.begin() + m, A(0));
  const int64_t end = key_end(p, i0, m);
  for (int64_t j0 = 0; j0 < end; j0 += kForwardKeyBlock) {
    const int64_t n = std::min(kForwardKeyBlock, end - j0);
    A* scores = s.scores.data();
    gemm_raw<A>(false, true, m, n, D, A(p.scale), q, p.query.sr, k + j0 * p.key.sr, p.key.sr, A(0), scores, n);
    mask_scores(p, b, h, i0, m, j0, n, scores);
    for (int64_t r = 0; r < m; ++r) {
      A* row = scores + r * n;
      const A new_max = std::max(s.max[r], row_max(row, n));
      if (new_max == kNegInf<A>) {  // every key so far masked: nothing to add
        std::fill(row, row + n, A(0));
        continue;
      }
      const A correction = std::exp(s.max[r] - new_max);  // 0 while the row had no key yet
      s.sum[r] = s.sum[r] * correction + exp_shifted<true>(row, n, new_max);
      if (correction != A(1)) scale_row(s.acc.data() + r * Dv, Dv, correction);
      s.max[r] = new_max;
      if (p.dropout.enabled) {  // the sum takes every weight; the product with v only the kept ones
        dropout_keep(p.dropout, dropout_element(p, b, h, i0 + r, j0), n, s.keep.data());
        apply_keep(row, row, s.keep.data(), n, A(p.dropout.scale));
      }
    }
    gemm_raw<A>(false, false, m, Dv, n, A(1), scores, n, v + j0 * p.value.sr, p.value.sr, A(1), s.acc.data(), Dv);
  }
  A* lse = at<A>(p.logsumexp, b, h, i0);
  for (int64_t r = 0; r < m; ++r) {
    A* out = at<A>(p.out, b, h, i0 + r);
    const A* acc = s.acc.data() + r * Dv;
    if (s.sum[r] == A(0)) {  // a fully masked row: 0, as PyTorch's CPU kernels give
      std::fill(out, out + Dv, A(0));
      lse[r * p.logsumexp.sr] = A(0);
      continue;
    }
    const A inv = A(1) / s.sum[r];
    for (int64_t c = 0; c < Dv; ++c) out[c] = acc[c] * inv;
    lse[r * p.logsumexp.sr] = s.max[r] + std::log(s.sum[r]);
  }
}

template <typename A>
void forward_typed(const AttentionPlan& p) {
  const int64_t qb = query_block(p.q_len);
  const int64_t blocks = (p.q_len + qb - 1) / qb;
  const int64_t tasks = p.batch * p.heads * blocks;
  parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    ForwardScratch<A> scratch(qb, p.value_dim);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * qb;
      forward_block(p, bh / p.heads, bh % p.heads, i0, std::min(qb, p.q_len - i0), scratch);
    }
  });
}

void attention_forward_kernel(const AttentionPlan& plan) {
  if (plan.dtype == DType::Float64) {
    forward_typed<double>(plan);
  } else {
    forward_typed<float>(plan);
  }
}

// --- backward -----------------------------------------------------------------------

template <typename A>
A dot(const A* a, const A* b, int64_t n) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  const int64_t full = n - n % W;
  V acc = V::splat(0);
  for (int64_t i = 0; i < full; i += W) acc = fmadd(V::loadu(a + i), V::loadu(b + i), acc);
  A s = hsum(acc);
  for (int64_t i = full; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// ds = p * (dp - delta) in place of dp, for one row.
template <typename A>
void softmax_grad_row(const A* prob, A* dp, int64_t n, A delta) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  const int64_t full = n - n % W;
  const V d = V::splat(delta);
  for (int64_t i = 0; i < full; i += W) (V::loadu(prob + i) * (V::loadu(dp + i) - d)).storeu(dp + i);
  for (int64_t i = full; i < n; ++i) dp[i] = prob[i] * (dp[i] - delta);
}

/// The per-task scratch of the backward: P and dP blocks, a block's dropout
/// mask, the rows' delta, and (when the keys are split) the task's own grad_query.
template <typename A>
struct BackwardScratch {
  std::vector<A> prob, dprob, delta;
  std::vector<uint8_t> keep;
  BackwardScratch(int64_t qb, bool dropout)
      : prob(static_cast<size_t>(qb * kBackwardKeyBlock)), dprob(prob.size()), delta(static_cast<size_t>(qb)),
        keep(dropout ? prob.size() : 0) {}
};

/// One (batch, query head) against keys [kv_begin, kv_end): every query block
/// against every key block of the range it sees. grad_key and grad_value rows
/// of the range are written by this task alone (it runs every query head of
/// the key/value group); grad_query rows go to gq (row stride gq_sr), which is
/// the task's own when the keys are split (Note [Flash attention on the CPU]).
template <typename A>
void backward_head(const AttentionPlan& p, const AttentionOperand& dout, A* gq_head, int64_t gq_sr,
                   const AttentionOperand& gk_op, const AttentionOperand& gv_op, int64_t b, int64_t h, int64_t qb,
                   int64_t kv_begin, int64_t kv_end, BackwardScratch<A>& s) {
  const int64_t D = p.head_dim, Dv = p.value_dim;
  const int64_t hk = h / p.kv_group;
  const A* k = at<A>(p.key, b, hk);
  const A* v = at<A>(p.value, b, hk);
  A* gk = at<A>(gk_op, b, hk);
  A* gv = at<A>(gv_op, b, hk);
  const A scale = A(p.scale);
  const bool dropout = p.dropout.enabled;
  const A keep_scale = A(p.dropout.scale);
  for (int64_t i0 = 0; i0 < p.q_len; i0 += qb) {
    const int64_t m = std::min(qb, p.q_len - i0);
    const int64_t end = std::min(kv_end, key_end(p, i0, m));
    if (end <= kv_begin) continue;
    const A* q = at<A>(p.query, b, h, i0);
    const A* go = at<A>(dout, b, h, i0);
    A* gq = gq_head + i0 * gq_sr;
    const A* lse = at<A>(p.logsumexp, b, h, i0);
    // delta = rowsum(dO * O), also with dropout: O = (P * keep * scale) v.
    for (int64_t r = 0; r < m; ++r) s.delta[r] = dot(go + r * dout.sr, at<A>(p.out, b, h, i0 + r), Dv);
    for (int64_t j0 = kv_begin; j0 < end; j0 += kBackwardKeyBlock) {
      const int64_t n = std::min(kBackwardKeyBlock, end - j0);
      A* P = s.prob.data();
      A* dP = s.dprob.data();
      gemm_raw<A>(false, true, m, n, D, scale, q, p.query.sr, k + j0 * p.key.sr, p.key.sr, A(0), P, n);
      mask_scores(p, b, h, i0, m, j0, n, P);
      for (int64_t r = 0; r < m; ++r) exp_shifted<false>(P + r * n, n, lse[r * p.logsumexp.sr]);
      // grad_value[j] += Pd^T grad_out, Pd = P (or, with dropout, P * keep * scale, made in dP's buffer).
      const A* Pd = P;
      if (dropout) {
        for (int64_t r = 0; r < m; ++r) {
          uint8_t* keep = s.keep.data() + r * n;
          dropout_keep(p.dropout, dropout_element(p, b, h, i0 + r, j0), n, keep);
          apply_keep(P + r * n, dP + r * n, keep, n, keep_scale);
        }
        Pd = dP;
      }
      gemm_raw<A>(true, false, n, Dv, m, A(1), Pd, n, go, dout.sr, A(1), gv + j0 * gv_op.sr, gv_op.sr);
      // dP = grad_out v^T (times keep * scale with dropout); dS = P (dP - delta).
      gemm_raw<A>(false, true, m, n, Dv, A(1), go, dout.sr, v + j0 * p.value.sr, p.value.sr, A(0), dP, n);
      for (int64_t r = 0; r < m; ++r) {
        if (dropout) apply_keep(dP + r * n, dP + r * n, s.keep.data() + r * n, n, keep_scale);
        softmax_grad_row(P + r * n, dP + r * n, n, s.delta[r]);
      }
      // grad_query += scale dS k; grad_key[j] += scale dS^T q.
      gemm_raw<A>(false, false, m, D, n, scale, dP, n, k + j0 * p.key.sr, p.key.sr, A(1), gq, gq_sr);
      gemm_raw<A>(true, false, n, D, m, scale, dP, n, q, p.query.sr, A(1), gk + j0 * gk_op.sr, gk_op.sr);
    }
  }
}

/// Key/value chunks per (batch, key/value head) in the backward: 1 while there
/// are enough (batch, head) tasks, else enough chunks for about kBackwardTasks
/// tasks (of whole key blocks). It depends on the shape alone, never on the
/// thread count, so the results do not either.
constexpr int64_t kBackwardTasks = 8;
int64_t backward_kv_chunks(const AttentionPlan& p, int64_t kv_heads) {
  const int64_t bh = p.batch * kv_heads;
  if (bh >= kBackwardTasks) return 1;
  const int64_t kv_blocks = (p.kv_len + kBackwardKeyBlock - 1) / kBackwardKeyBlock;
  return std::max<int64_t>(1, std::min(kv_blocks, (kBackwardTasks + bh - 1) / bh));
}

template <typename A>
void backward_typed(const AttentionPlan& p, const AttentionOperand& dout, const AttentionOperand& gq,
                    const AttentionOperand& gk, const AttentionOperand& gv) {
  const int64_t qb = query_block(p.q_len);
  const int64_t g = p.kv_group, kv_heads = p.heads / g;
  const int64_t chunks = backward_kv_chunks(p, kv_heads);
  const int64_t kv_blocks = (p.kv_len + kBackwardKeyBlock - 1) / kBackwardKeyBlock;
  const int64_t chunk_keys = (kv_blocks + chunks - 1) / chunks * kBackwardKeyBlock;
  const int64_t D = p.head_dim, L = p.q_len;
  // Split keys: task (b, hk, c) accumulates its grad_query for its g heads in
  // partial[t], summed in chunk order below (the same sum for any thread count).
  std::vector<A> partial(chunks > 1 ? static_cast<size_t>(p.batch * kv_heads * chunks * g * L * D) : 0);
  parallel_for(0, p.batch * kv_heads * chunks, 1, [&](int64_t begin, int64_t end) {
    BackwardScratch<A> scratch(qb, p.dropout.enabled);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bh = t / chunks, c = t % chunks;
      const int64_t b = bh / kv_heads, hk = bh % kv_heads;
      const int64_t kv_begin = c * chunk_keys, kv_end = std::min(p.kv_len, kv_begin + chunk_keys);
      if (kv_begin >= kv_end) continue;
      for (int64_t h = hk * g; h < (hk + 1) * g; ++h) {
        A* gq_head = chunks > 1 ? partial.data() + (t * g + (h - hk * g)) * L * D : at<A>(gq, b, h);
        const int64_t gq_sr = chunks > 1 ? D : gq.sr;
        backward_head(p, dout, gq_head, gq_sr, gk, gv, b, h, qb, kv_begin, kv_end, scratch);
      }
    }
  });
  if (chunks == 1) return;
  // grad_query = the chunks' partial sums, added in chunk order, rows split across threads.
  const int64_t rows = p.batch * p.heads * L;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(D * chunks, 1)),
               [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / (p.heads * L), h = row / L % p.heads, i = row % L;
      const int64_t hk = h / g;
      A* dst = at<A>(gq, b, h, i);
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t t = (b * kv_heads + hk) * chunks + c;
        const A* src = partial.data() + ((t * g + (h - hk * g)) * L + i) * D;
        for (int64_t d = 0; d < D; ++d) dst[d] += src[d];
      }
    }
  });
}

void attention_backward_kernel(const AttentionPlan& plan, const AttentionOperand& grad_out,
                               const AttentionOperand& grad_query, const AttentionOperand& grad_key,
                               const AttentionOperand& grad_value) {
  if (plan.dtype == DType::Float64) {
    backward_typed<double>(plan, grad_out, grad_query, grad_key, grad_value);
  } else {
    backward_typed<float>(plan, grad_out, grad_query, grad_key, grad_value);
  }
}

}  // namespace

KILN_REGISTER_DISPATCH(attention_forward_stub, &attention_forward_kernel);
KILN_REGISTER_DISPATCH(attention_backward_stub, &attention_backward_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
