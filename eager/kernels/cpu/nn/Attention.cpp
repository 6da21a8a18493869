// The fused scaled dot-product attention ops on the CPU (eager/ops/attention.yaml):
// argument checks with PyTorch's words, the compute dtype, the operands'
// layouts and the plan the loops in per_capability/AttentionKernel.cpp run; compiled once.
#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "eager/core/Error.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/indexing/IndexUtils.h"
#include "eager/kernels/cpu/nn/AttentionInto.h"
#include "eager/kernels/cpu/nn/AttentionStubs.h"
#include "eager/kernels/cpu/random/RandomStubs.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(attention_forward_fn, attention_forward_stub);
KILN_DEFINE_DISPATCH(attention_backward_fn, attention_backward_stub);

// Note [Flash attention on the CPU]
// ---------------------------------
// out = softmax(scale * q k^T + mask) v without the [L, S] matrix: each task
// takes one (batch, head, block of query rows) and walks the key blocks. For a
// key block it computes the scores with one GEMM (scale folded into alpha),
// applies the mask and the causal triangle, and updates per row a running max
// m and sum l (online softmax): with m' = max(m, rowmax(block)), the earlier
// accumulator and sum are rescaled by exp(m - m'), the block's scores become
// exp(s - m') in place, l += their sum, and acc += P_block v_block (a second
// GEMM, beta 1). At the end out = acc / l and logsumexp = m + log l, saved for
// the backward. Key blocks wholly above the diagonal are never visited when
// is_causal (top-left aligned, as torch: query i sees keys j <= i, also when
// L != S). A row every key of which is masked gets output 0 and logsumexp 0,
// what PyTorch 2.13's CPU kernels (flash and math alike) give.
//
// The backward (one task per (batch, head), so grad_key and grad_value rows
// have one writer) recomputes each block's probabilities P = exp(s - lse)
// from q, k and the saved logsumexp, and with delta = rowsum(dO * O):
//   dV += P^T dO,  dP = dO v^T,  dS = P (dP - delta),
//   dQ += scale dS k,  dK += scale dS^T q,
// five GEMMs a block. The mask takes no gradient (the Python front end routes
// a mask that requires grad to the composite), and the backward op has no
// formulas: as aten's, it is not twice differentiable.
//
// Grouped-query attention (enable_gqa): key and value may have H / g heads;
// query head h reads key/value head h / g in place (no repeat_interleave
// copies), and the backward runs the g query heads of a group in one task,
// which alone accumulates that group's grad_key and grad_value. aten's op
// requires equal heads; F.scaled_dot_product_attention passes fewer only
// with enable_gqa=True.
//
// Layouts: the loops take every [B, H, rows, dim] operand through its batch,
// head and row strides, so a q/k/v that is a transposed [B, L, H, D]
// projection (or a broadcast, stride 0) is read in place; only a dim stride
// other than 1 (or a row stride the BLAS cannot take as a leading dim) costs a
// copy. The output is [B, H, L, Dv] in [B, L, H, Dv] memory, as aten's, so the
// usual out.transpose(1, 2).reshape(B, L, H * Dv) is a view. float16/bfloat16
// compute in float32 (copies in and one rounding out), float64 in float64.
// dropout_p must be 0 in these two ops (aten's schemas have no place for the
// random state); dropout has ops of its own, Note [Dropout in fused attention].
//
// Backward parallelism: with fewer (batch, key/value head) pairs than
// kBackwardTasks (AttentionKernel.cpp), e.g. [1, 1, 4096, 64], the keys are
// also split into chunks of whole key blocks, one task each; such a task
// writes grad_key and grad_value of its own keys and accumulates grad_query
// into a buffer of its own, and the buffers are summed in chunk order at the
// end. The chunk count depends on the shape alone, so results still do not
// depend on the thread count.

// Note [Dropout in fused attention]
// ---------------------------------
// _scaled_dot_product_flash_attention_dropout_for_cpu computes
// out = (softmax(scale q k^T + mask) * keep / (1 - p)) v in the same blocked
// loop. keep for weight (b, h, i, j) is what bernoulli_(1 - p) gives element
// e = ((b H + h) L + i) S + j of a contiguous bool [B, H, L, S] tensor drawn
// from the default generator (Note [Random groups], the same threshold test),
// so the fused op keeps exactly the weights kiln's composite (matmul, softmax,
// dropout) keeps after the same kiln.manual_seed, and advances the generator
// by as many blocks. The forward reserves those blocks and returns where they
// start, (philox_seed, philox_offset), as int64 scalars; the backward
// regenerates each block's mask from them (Philox is counter-based: any
// element's word is computed alone, on any thread) rather than storing [B, H,
// L, S] bytes, as torch's CUDA flash kernels do. The forward applies keep after
// the running sum (the logsumexp is that of the undropped scores); the backward
// recomputes P, uses Pd = P keep / (1 - p) for grad_value, multiplies dP by
// keep / (1 - p), and keeps delta = rowsum(dO O), which equals
// rowsum(P dP) with the dropped weights too. p == 1 keeps nothing (output 0)
// and draws nothing, as dropout(p=1) does.

namespace {

constexpr const char* kForward = "_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "_scaled_dot_product_flash_attention_for_cpu_backward";
constexpr const char* kDropoutForward = "_scaled_dot_product_flash_attention_dropout_for_cpu";
constexpr const char* kDropoutBackward = "_scaled_dot_product_flash_attention_dropout_for_cpu_backward";

DType compute_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

/// t as an operand in `dtype` whose last dim has unit stride and whose rows
/// the BLAS can step through (row stride >= cols); t itself when it is one.
Tensor operand_values(const Tensor& t, DType dtype) {
  if (t.dtype() != dtype) return to_dtype_copy(t, dtype);
  const int64_t rows = t.size(2), cols = t.size(3);
  const bool unit = cols <= 1 || t.stride(3) == 1;
  const bool rows_ok = rows <= 1 || t.stride(2) >= std::max<int64_t>(cols, 1);
  return unit && rows_ok ? t : contiguous_values(t);
}

AttentionOperand operand(const Tensor& t) {
  AttentionOperand o{t.data_ptr(), t.stride(0), t.stride(1), t.stride(2)};
  if (t.size(2) <= 1) o.sr = std::max<int64_t>(t.size(3), 1);  // one row: any leading dim >= cols will do
  if (t.size(0) <= 1) o.sb = 0;
  if (t.size(1) <= 1) o.sh = 0;
  return o;
}

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  KILN_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, ": expected query, key and value of 4 dims "
             "[batch, heads, length, head_dim], got query ", q.sizes(), ", key ", k.sizes(), " and value ", v.sizes());
  KILN_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "Expected query, key, and value to have the same "
             "dtype, but got query.dtype: ", typemeta_name(q.dtype()), " key.dtype: ", typemeta_name(k.dtype()),
             " and value.dtype: ", typemeta_name(v.dtype()), " instead.");
  KILN_CHECK(is_floating_point(q.dtype()), op, ": expected floating-point query, key and value, but got ",
             scalar_type_name(q.dtype()));
  KILN_CHECK(q.size(0) == k.size(0) && q.size(0) == v.size(0) && k.size(1) == v.size(1) &&
                 (q.size(1) == k.size(1) || (k.size(1) > 0 && q.size(1) % k.size(1) == 0)),
             op, ": expected query, key and value to have the same batch size, and key and value the same number "
             "of heads, dividing the query's (enable_gqa), got query ", q.sizes(), ", key ", k.sizes(), " and value ",
             v.sizes());
  KILN_CHECK(q.size(3) == k.size(3), op, ": expected query and key to have the same last dimension (head_dim), "
             "got query ", q.sizes(), " and key ", k.sizes());
  KILN_CHECK(k.size(2) == v.size(2), op, ": expected key and value to have the same sequence length, got key ",
             k.sizes(), " and value ", v.sizes());
}

/// The mask as the loops read it, broadcast to [B, H, L, S] (right-aligned, as
/// torch broadcasts it against the scores). `keep` holds the values the plan
/// points at (a float mask converted to the compute dtype).
AttentionMask plan_mask(const char* op, const std::optional<Tensor>& attn_mask, const Tensor& q, int64_t kv_len,
                        DType dtype, Tensor& keep) {
  AttentionMask m;
  if (!attn_mask || !attn_mask->defined()) return m;
  const Tensor& mask = *attn_mask;
  KILN_CHECK(mask.dtype() == DType::Bool || mask.dtype() == DType::Float32 || mask.dtype() == q.dtype(),
             "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
             typemeta_name(mask.dtype()), " and  query.dtype: ", typemeta_name(q.dtype()), " instead.");
  const int64_t target[4] = {q.size(0), q.size(1), q.size(2), kv_len};
  KILN_CHECK(mask.dim() <= 4, op, ": expected attn_mask of at most 4 dims, broadcastable to [", target[0], ", ",
             target[1], ", ", target[2], ", ", target[3], "], got ", mask.sizes());
  keep = mask.dtype() == DType::Bool || mask.dtype() == dtype ? mask : to_dtype_copy(mask, dtype);
  int64_t strides[4] = {0, 0, 0, 0};
  const int64_t offset = 4 - mask.dim();
  for (int64_t d = 0; d < mask.dim(); ++d) {
    const int64_t size = mask.size(d), want = target[offset + d];
    KILN_CHECK(size == want || size == 1, "The size of tensor a (", want, ") must match the size of tensor b (", size,
               ") at non-singleton dimension ", offset + d);
    strides[offset + d] = size == 1 ? 0 : keep.stride(d);
  }
  m.data = keep.data_ptr();
  m.is_bool = mask.dtype() == DType::Bool;
  m.sb = strides[0], m.sh = strides[1], m.sr = strides[2], m.sc = strides[3];
  return m;
}

/// The plan's shared part: dtype, sizes, scale, causal, q/k/v and the mask.
struct Prepared {
  AttentionPlan plan;
  Tensor q, k, v, mask;  // the values the plan points at
};

/// The dropout probability the op takes: any in [0, 1] for the dropout ops, else 0.
void check_dropout_p(const char* op, double dropout_p, bool with_dropout) {
  if (with_dropout) {
    KILN_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ",
               dropout_p);
  } else {
    KILN_CHECK(dropout_p == 0.0, op, ": dropout_p must be 0 (got ", dropout_p, "); "
               "use _scaled_dot_product_flash_attention_dropout_for_cpu for dropout");
  }
}

Prepared prepare(const char* op, const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p,
                 bool is_causal, const std::optional<Tensor>& attn_mask, std::optional<double> scale,
                 bool with_dropout = false) {
  check_qkv(op, query, key, value);
  check_dropout_p(op, dropout_p, with_dropout);
  Prepared p;
  const DType dtype = compute_dtype(query.dtype());
  p.q = operand_values(query, dtype);
  p.k = operand_values(key, dtype);
  p.v = operand_values(value, dtype);
  AttentionPlan& plan = p.plan;
  plan.dtype = dtype;
  plan.batch = query.size(0), plan.heads = query.size(1), plan.q_len = query.size(2), plan.kv_len = key.size(2);
  plan.head_dim = query.size(3), plan.value_dim = value.size(3);
  plan.kv_group = key.size(1) == 0 ? 1 : query.size(1) / key.size(1);
  plan.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  plan.causal = is_causal;
  plan.query = operand(p.q), plan.key = operand(p.k), plan.value = operand(p.v);
  plan.mask = plan_mask(op, attn_mask, query, key.size(2), dtype, p.mask);
  return p;
}

/// [B, H, L, Dv] in [B, L, H, Dv] memory (aten's layout for the flash output).
Tensor empty_heads_inner(int64_t B, int64_t H, int64_t L, int64_t Dv, DType dtype) {
  return empty_strided({B, H, L, Dv}, {L * H * Dv, Dv, H * Dv, 1}, dtype);
}

/// `t` (computed in float32) rounded to `dtype` in the same layout; t itself when it has that dtype.
Tensor round_to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor r = empty_strided(t.sizes(), t.strides(), dtype);
  copy_(r, t);
  return r;
}

bool same_sizes(IntArrayRef a, IntArrayRef b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

bool any_empty(const AttentionPlan& p) {
  return p.batch == 0 || p.heads == 0 || p.q_len == 0;
}

/// The dropout plan for probability p drawn at (seed, offset): Note [Dropout in fused attention].
AttentionDropout dropout_plan(double p, uint64_t seed, uint64_t offset) {
  AttentionDropout d;
  d.enabled = p > 0.0;
  if (!d.enabled) return d;
  d.keep = random::bernoulli_threshold(1.0 - p);  // as bernoulli_(1 - p) keeps
  d.seed = seed, d.offset = offset;
  d.scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
  return d;
}

std::tuple<Tensor, Tensor> flash_forward(Prepared& p, const Tensor& query) {
  AttentionPlan& plan = p.plan;
  const int64_t B = plan.batch, H = plan.heads, L = plan.q_len;
  Tensor out = empty_heads_inner(B, H, L, plan.value_dim, plan.dtype);
  Tensor lse = empty({B, H, L}, plan.dtype);
  plan.out = operand(out);
  plan.logsumexp = AttentionOperand{lse.data_ptr(), H * L, L, 1};
  if (!any_empty(plan)) attention_forward_stub(plan);
  return {round_to(out, query.dtype()), lse};
}

/// A backward's forward results, checked against the plan (sizes, logsumexp's dtype) and bound into it (out,
/// logsumexp) in the plan's dtype; the upstream gradient returned likewise. The values live as long as the result.
struct BackwardOperands {
  Tensor grad_out, out, logsumexp;
};

BackwardOperands bind_backward_operands(const char* op, AttentionPlan& plan, const Tensor& grad_out, const Tensor& out,
                                        const Tensor& logsumexp) {
  const int64_t B = plan.batch, H = plan.heads, L = plan.q_len, Dv = plan.value_dim;
  KILN_CHECK(same_sizes(grad_out.sizes(), {B, H, L, Dv}) && same_sizes(out.sizes(), {B, H, L, Dv}),
             op, ": expected grad_out and out of size [", B, ", ", H, ", ", L, ", ", Dv, "], got grad_out ",
             grad_out.sizes(), " and out ", out.sizes());
  KILN_CHECK(same_sizes(logsumexp.sizes(), {B, H, L}) && logsumexp.dtype() == plan.dtype, op,
             ": expected logsumexp of size [", B, ", ", H, ", ", L, "] and dtype ", scalar_type_name(plan.dtype),
             ", got ", logsumexp.sizes(), " and ", scalar_type_name(logsumexp.dtype()));
  BackwardOperands bound{operand_values(grad_out, plan.dtype), operand_values(out, plan.dtype),
                         contiguous_values(logsumexp)};
  plan.out = operand(bound.out);
  plan.logsumexp = AttentionOperand{bound.logsumexp.data_ptr(), H * L, L, 1};
  return bound;
}

std::tuple<Tensor, Tensor, Tensor> flash_backward(const char* op, Prepared& p, const Tensor& grad_out,
                                                  const Tensor& query, const Tensor& key, const Tensor& out,
                                                  const Tensor& logsumexp) {
  AttentionPlan& plan = p.plan;
  const int64_t B = plan.batch, H = plan.heads, L = plan.q_len, S = plan.kv_len;
  const int64_t D = plan.head_dim, Dv = plan.value_dim;
  const BackwardOperands bound = bind_backward_operands(op, plan, grad_out, out, logsumexp);
  Tensor gq = zeros({B, H, L, D}, plan.dtype);
  const int64_t Hkv = key.size(1);
  Tensor gk = zeros({B, Hkv, S, D}, plan.dtype);
  Tensor gv = zeros({B, Hkv, S, Dv}, plan.dtype);
  if (!any_empty(plan) && S > 0) {
    attention_backward_stub(plan, operand(bound.grad_out), operand(gq), operand(gk), operand(gv));
  }
  const DType dtype = query.dtype();
  return {round_to(gq, dtype), round_to(gk, dtype), round_to(gv, dtype)};
}

/// The uint64 a philox_seed / philox_offset tensor of the forward holds.
void check_philox_tensor(const Tensor& t, const char* what) {
  KILN_CHECK(t.numel() == 1 && t.dtype() == DType::Int64, kDropoutBackward, ": expected ", what,
             " to be a one-element int64 tensor (the forward's), got shape ", t.sizes(), " and dtype ",
             scalar_type_name(t.dtype()));
}

uint64_t philox_scalar(const Tensor& t, const char* what) {
  check_philox_tensor(t, what);
  return static_cast<uint64_t>(contiguous_values(t).data_ptr<int64_t>()[0]);
}

/// A philox_seed / philox_offset output: the uint64 as a 0-dim int64 tensor.
Tensor int64_scalar(uint64_t v) { return indexing::scalar_tensor(Scalar(static_cast<int64_t>(v)), DType::Int64); }

/// The meta function of the fused forward (Note [Meta kernels], tools/opgen): prepare()'s checks that need
/// only metadata, and the outputs flash_forward makes (the output in [B, L, H, Dv] memory, logsumexp in the
/// compute dtype).
std::tuple<Tensor, Tensor> flash_forward_meta(const char* op, const Tensor& query, const Tensor& key,
                                              const Tensor& value, double dropout_p, bool with_dropout) {
  check_qkv(op, query, key, value);
  check_dropout_p(op, dropout_p, with_dropout);
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), Dv = value.size(3);
  const Device meta(DeviceType::Meta);
  return {empty_strided({B, H, L, Dv}, {L * H * Dv, Dv, H * Dv, 1}, query.dtype(), meta),
          empty({B, H, L}, compute_dtype(query.dtype()), meta)};
}

/// The meta function of the fused backward: the gradients flash_backward makes, after its size checks.
/// The dropout form (`philox_seed` given) also checks the forward's seed and offset tensors, as its CPU kernel does
/// before reading them.
std::tuple<Tensor, Tensor, Tensor> flash_backward_meta(const char* op, const Tensor& grad_out, const Tensor& query,
                                                       const Tensor& key, const Tensor& value, const Tensor& out,
                                                       const Tensor& logsumexp, double dropout_p,
                                                       const Tensor* philox_seed, const Tensor* philox_offset) {
  check_qkv(op, query, key, value);
  check_dropout_p(op, dropout_p, philox_seed != nullptr);
  if (philox_seed != nullptr) {
    check_philox_tensor(*philox_seed, "philox_seed");
    check_philox_tensor(*philox_offset, "philox_offset");
  }
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  const int64_t D = query.size(3), Dv = value.size(3), Hkv = key.size(1);
  KILN_CHECK(same_sizes(grad_out.sizes(), {B, H, L, Dv}) && same_sizes(out.sizes(), {B, H, L, Dv}),
             op, ": expected grad_out and out of size [", B, ", ", H, ", ", L, ", ", Dv, "], got grad_out ",
             grad_out.sizes(), " and out ", out.sizes());
  KILN_CHECK(same_sizes(logsumexp.sizes(), {B, H, L}), op, ": expected logsumexp of size [", B, ", ", H,
             ", ", L, "], got ", logsumexp.sizes());
  const Device meta(DeviceType::Meta);
  const DType dtype = query.dtype();
  return {empty({B, H, L, D}, dtype, meta), empty({B, Hkv, S, D}, dtype, meta), empty({B, Hkv, S, Dv}, dtype, meta)};
}

}  // namespace

std::tuple<Tensor, Tensor> scaled_dot_product_flash_attention_cpu(const Tensor& query, const Tensor& key,
                                                                  const Tensor& value, double dropout_p,
                                                                  bool is_causal,
                                                                  const std::optional<Tensor>& attn_mask,
                                                                  std::optional<double> scale) {
  if (query.impl()->is_meta()) return flash_forward_meta(kForward, query, key, value, dropout_p, false);
  Prepared p = prepare(kForward, query, key, value, dropout_p, is_causal, attn_mask, scale);
  return flash_forward(p, query);
}

std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_flash_attention_backward_cpu(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const std::optional<Tensor>& attn_mask,
    std::optional<double> scale) {
  if (query.impl()->is_meta()) {
    return flash_backward_meta(kBackward, grad_out, query, key, value, out, logsumexp, dropout_p, nullptr, nullptr);
  }
  Prepared p = prepare(kBackward, query, key, value, dropout_p, is_causal, attn_mask, scale);
  return flash_backward(kBackward, p, grad_out, query, key, out, logsumexp);
}

bool flash_attention_backward_into(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                   const Tensor& value, const Tensor& out, const Tensor& logsumexp, bool is_causal,
                                   const std::optional<Tensor>& attn_mask, std::optional<double> scale,
                                   const Tensor& grad_query, const Tensor& grad_key, const Tensor& grad_value) {
  const DType dtype = query.dtype();
  if (query.impl()->is_meta() || compute_dtype(dtype) != dtype || query.dim() != 4 || key.dim() != 4 ||
      value.dim() != 4 || key.size(1) != query.size(1))
    return false;
  const Tensor* grads[3] = {&grad_query, &grad_key, &grad_value};
  const Tensor* like[3] = {&query, &key, &value};
  for (int i = 0; i < 3; ++i) {
    const Tensor& g = *grads[i];
    if (g.dtype() != dtype || !same_sizes(g.sizes(), like[i]->sizes()) || g.size(3) < 1 || g.stride(3) != 1 ||
        (g.size(2) > 1 && g.stride(2) < g.size(3)))
      return false;
  }
  Prepared p = prepare(kBackward, query, key, value, 0.0, is_causal, attn_mask, scale);
  AttentionPlan& plan = p.plan;
  const BackwardOperands bound = bind_backward_operands(kBackward, plan, grad_out, out, logsumexp);
  if (!any_empty(plan) && plan.kv_len > 0) {
    attention_backward_stub(plan, operand(bound.grad_out), operand(grad_query), operand(grad_key), operand(grad_value));
  }
  return true;
}

std::tuple<Tensor, Tensor, Tensor, Tensor> scaled_dot_product_flash_attention_dropout_cpu(
    const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p, bool is_causal,
    const std::optional<Tensor>& attn_mask, std::optional<double> scale) {
  if (query.impl()->is_meta()) {  // no draw: the generator's offset moves only where numbers are drawn
    auto [out, lse] = flash_forward_meta(kDropoutForward, query, key, value, dropout_p, true);
    const Device meta(DeviceType::Meta);
    return {out, lse, empty({}, DType::Int64, meta), empty({}, DType::Int64, meta)};
  }
  Prepared p = prepare(kDropoutForward, query, key, value, dropout_p, is_causal, attn_mask, scale, true);
  const AttentionPlan& plan = p.plan;
  PhiloxInputs philox{0, 0};
  const int64_t weights = plan.batch * plan.heads * plan.q_len * plan.kv_len;
  if (dropout_p > 0.0 && dropout_p < 1.0 && weights > 0) {
    philox = cpu_generator_or_default(std::nullopt).reserve(blocks_for(weights, 1));
  }
  p.plan.dropout = dropout_plan(dropout_p, philox.seed, philox.offset);
  auto [out, lse] = flash_forward(p, query);
  return {out, lse, int64_scalar(philox.seed), int64_scalar(philox.offset)};
}

std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_flash_attention_dropout_backward_cpu(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const Tensor& philox_seed,
    const Tensor& philox_offset, const std::optional<Tensor>& attn_mask, std::optional<double> scale) {
  if (query.impl()->is_meta()) {
    return flash_backward_meta(kDropoutBackward, grad_out, query, key, value, out, logsumexp, dropout_p, &philox_seed,
                               &philox_offset);
  }
  Prepared p = prepare(kDropoutBackward, query, key, value, dropout_p, is_causal, attn_mask, scale, true);
  p.plan.dropout = dropout_plan(dropout_p, philox_scalar(philox_seed, "philox_seed"),
                                philox_scalar(philox_offset, "philox_offset"));
  return flash_backward(kDropoutBackward, p, grad_out, query, key, out, logsumexp);
}

}  // namespace kiln::native
