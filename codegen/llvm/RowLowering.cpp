// Row kernels -> LLVM IR: per row, one pass over the cols per reduction depth
// with four vector accumulators per reduction, then the stores.
// See Note [Row reduction kernels] (KernelIR.h).
#include <algorithm>
#include <limits>

#include "codegen/RowSchedule.h"
#include "codegen/llvm/KernelLowering.h"
#include "eager/core/Error.h"

namespace kiln::codegen {

namespace {

/// The vector width (elements) of eager's norm kernels a norm row kernel folds in: its reductions' one width.
int64_t norm_row_lanes(const Kernel& k) {
  int64_t lanes = 0;
  for (const Expr& e : k.exprs) {
    if (!is_reduction(e.op)) continue;
    KILN_CHECK(lanes == 0 || e.ivalue == lanes, "codegen: a norm row kernel of two vector widths");
    lanes = e.ivalue;
  }
  KILN_CHECK(lanes > 0, "codegen: a norm row kernel without a fold");
  return lanes;
}

}  // namespace

llvm::Value* Lowering::concat_vectors(std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      const auto n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
      llvm::SmallVector<int, 64> idx;
      for (int l = 0; l < 2 * n; ++l) idx.push_back(l);
      joined.push_back(b_.CreateShuffleVector(parts[i], parts[i + 1], idx));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

llvm::Value* Lowering::load_row_operand(size_t input, llvm::Value* row, llvm::Value* row_start, llvm::Value* j,
                                        llvm::Value* mask) {
  const DType d = k_.input_dtypes[input];
  const RowOperand role = k_.input_roles[input];
  if (role == RowOperand::PerRow || role == RowOperand::Scalar) {
    llvm::Value* p = role == RowOperand::PerRow ? b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[input], row) : in_ptr_[input];
    return to_register(d, b_.CreateVectorSplat(w_, b_.CreateLoad(mem_scalar(d), p)));
  }
  llvm::Value* at = role == RowOperand::Element ? b_.CreateAdd(row_start, j) : j;
  llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[input], at);
  llvm::Type* vt = vec(mem_scalar(d));
  llvm::Value* raw = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vt, p, align(d), mask, llvm::Constant::getNullValue(vt)))
                          : static_cast<llvm::Value*>(b_.CreateAlignedLoad(vt, p, align(d)));
  return to_register(d, raw);
}

// Note [Row reductions in eager's order]
// ---------------------------------------
// A row kernel's sum, mean, amax and amin equal eager's sum.dim_IntList,
// mean.dim, amax and amin bit for bit (the compile fuzzer compares them so;
// a different order of additions differs in the last bits). Eager reduces a
// contiguous row with the loops of eager/kernels/cpu/reduce/per_capability/
// ReduceOpsKernel.cpp, whose order depends on its vector of E elements (the
// Reduce* expr's `lanes`) and W = 4E, and the pass folds the row as they do:
//  - sum_span: the first n - n % W elements in blocks of up to 1024 (whole W
//    steps); in a block four E-lane accumulators from +0 (step i adds
//    x[i + qE .. i + qE + E) into accumulator q), then (a0 + a1) + (a2 + a3),
//    its lanes added in order to +0 in T, that added into a double total; the
//    last n % W elements added into the total one at a time, in order; the
//    total rounded to T. mean: that divided by cols in T (eager's mean is the
//    sum tensor divided by the count).
//  - extreme_span: four E-lane accumulators over every W step (a > x ? a : x,
//    a tie taking the later value), folded as (a0 . a1) . (a2 . a3), its
//    lanes in order (x > m ? x : m, a tie keeping the earlier), then the last
//    n % W elements one at a time: which of +0 and -0 comes out depends on
//    that order. NaN (positive, quiet_NaN()) when any element is NaN.
// A W step here is W / w vectors of the kernel's w lanes (one vector with
// lanes past W masked off where W < w); the last elements are masked
// vectors whose valid lanes are taken one by one. Reductions of one pass
// with different E (float32 and float64) fold in separate loops.

llvm::Value* Lowering::reduction_identity(ExprOp op, DType d) {
  llvm::Type* t = reg_scalar(d);
  double v = 0.0;  // sum and mean start at +0, as the eager accumulators
  if (op == ExprOp::ReduceMax) v = -std::numeric_limits<double>::infinity();
  if (op == ExprOp::ReduceMin) v = std::numeric_limits<double>::infinity();
  return b_.CreateVectorSplat(w_, llvm::ConstantFP::get(t, v));
}

llvm::Value* Lowering::accumulating_loop(llvm::Value* start, llvm::Value* hi, int64_t step,
                                         std::vector<llvm::Value*>& accs,
                                         const std::function<void(llvm::Value*, std::vector<llvm::Value*>&)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "red.header", f_);
  auto* block = llvm::BasicBlock::Create(ctx_, "red.body", f_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "red.exit", f_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2);
  j->addIncoming(start, pre);
  std::vector<llvm::PHINode*> phis;
  for (llvm::Value*& a : accs) {
    llvm::PHINode* p = b_.CreatePHI(a->getType(), 2);
    p->addIncoming(a, pre);
    phis.push_back(p);
    a = p;
  }
  llvm::Value* next = b_.CreateAdd(j, b_.getInt64(step));
  b_.CreateCondBr(b_.CreateICmpSLE(next, hi), block, exit);
  b_.SetInsertPoint(block);
  std::vector<llvm::Value*> updated(phis.begin(), phis.end());
  body(j, updated);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  j->addIncoming(next, latch);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(updated[i], latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  return j;
}

std::vector<llvm::Value*> Lowering::emit_reduction_pass(const std::vector<int32_t>& reduces,
                                                        std::vector<llvm::Value*>& known, llvm::Value* row,
                                                        llvm::Value* row_start, llvm::Value* cols) {
  std::vector<llvm::Value*> results(reduces.size(), nullptr);
  std::vector<bool> done(reduces.size(), false);
  for (size_t first = 0; first < reduces.size(); ++first) {
    if (done[first]) continue;
    const int64_t lanes = k_.exprs[static_cast<size_t>(reduces[first])].ivalue;
    std::vector<int32_t> same;
    std::vector<size_t> at;
    for (size_t r = first; r < reduces.size(); ++r) {
      if (done[r] || k_.exprs[static_cast<size_t>(reduces[r])].ivalue != lanes) continue;
      done[r] = true;
      same.push_back(reduces[r]);
      at.push_back(r);
    }
    const std::vector<llvm::Value*> folded = k_.norm_rows ? emit_norm_order_folds(same, lanes, known, row, row_start, cols)
                                                          : emit_eager_order_folds(same, lanes, known, row, row_start, cols);
    for (size_t i = 0; i < at.size(); ++i) results[at[i]] = folded[i];
  }
  return results;
}

std::vector<llvm::Value*> Lowering::emit_eager_order_folds(const std::vector<int32_t>& reduces, int64_t lanes,
                                                           std::vector<llvm::Value*>& known, llvm::Value* row,
                                                           llvm::Value* row_start, llvm::Value* cols) {
  KILN_CHECK(lanes > 0, "codegen: a row reduction without eager's vector width");
  std::vector<int32_t> operands;
  for (int32_t r : reduces) operands.push_back(k_.exprs[static_cast<size_t>(r)].a);
  const int pass = row_->stage[static_cast<size_t>(reduces.at(0))];
  const size_t nr = reduces.size();
  const auto op_of = [&](size_t r) { return k_.exprs[static_cast<size_t>(reduces[r])].op; };
  const auto dtype_of = [&](size_t r) { return k_.exprs[static_cast<size_t>(reduces[r])].dtype; };
  const auto is_sum = [&](size_t r) { return op_of(r) == ExprOp::ReduceSum || op_of(r) == ExprOp::ReduceMean; };
  const auto values = [&](llvm::Value* j, llvm::Value* mask) {
    const std::vector<llvm::Value*> v = evaluate_row_pass(pass, operands, known, row, row_start, cols, j, mask);
    std::vector<llvm::Value*> out;
    for (int32_t o : operands) out.push_back(v[static_cast<size_t>(o)]);
    return out;
  };
  const int64_t E = lanes, W = 4 * E, w = w_;
  const int64_t k = (W + w - 1) / w;  // vectors per W step (a power of two, as W and w)
  KILN_CHECK((k & (k - 1)) == 0, "codegen: ", k, " vectors per row step");
  KILN_CHECK(W < w || W % w == 0, "codegen: eager's row step of ", W, " is not whole vectors of ", w);
  llvm::Value* step_mask = W < w ? b_.CreateICmpSLT(lane_ids(), splat64(b_.getInt64(W))) : nullptr;
  llvm::Type* wide = b_.getDoubleTy();
  // a > x ? a : x (max; min: a < x), one lane or a vector: eager's `maximum(a, x)`.
  const auto pick = [&](ExprOp op, llvm::Value* a, llvm::Value* x) {
    return b_.CreateSelect(op == ExprOp::ReduceMax ? b_.CreateFCmpOGT(a, x) : b_.CreateFCmpOLT(a, x), a, x);
  };
  // x > m ? x : m (max; min: x < m): eager's scalar fold.
  const auto keep = [&](ExprOp op, llvm::Value* m, llvm::Value* x) {
    return b_.CreateSelect(op == ExprOp::ReduceMax ? b_.CreateFCmpOGT(x, m) : b_.CreateFCmpOLT(x, m), x, m);
  };
  // The first W lanes of k accumulators as four E-lane vectors.
  const auto quarters = [&](const std::vector<llvm::Value*>& acc) {
    llvm::Value* all = concat_vectors(acc);  // k is a power of two
    std::vector<llvm::Value*> q;
    for (int64_t i = 0; i < 4; ++i) {
      llvm::SmallVector<int, 16> idx;
      for (int64_t l = 0; l < E; ++l) idx.push_back(static_cast<int>(i * E + l));
      q.push_back(b_.CreateShuffleVector(all, all, idx));
    }
    return q;
  };
  // State carried over the row: per reduction, a sum's double total, or a max's k accumulators and its
  // NaN lanes; laid out flat for the loops.
  std::vector<size_t> base(nr);
  std::vector<llvm::Value*> state;
  for (size_t r = 0; r < nr; ++r) {
    base[r] = state.size();
    if (is_sum(r)) {
      state.push_back(llvm::ConstantFP::get(wide, 0.0));
    } else {
      for (int64_t t = 0; t < k; ++t) state.push_back(reduction_identity(op_of(r), dtype_of(r)));
      state.push_back(llvm::Constant::getNullValue(vec(b_.getInt1Ty())));
    }
  }
  // The W steps: blocks of up to 1024 elements up to full = cols - cols % W.
  llvm::Value* full = b_.CreateSub(cols, b_.CreateSRem(cols, b_.getInt64(W)));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "blocks.header", f_);
  auto* body = llvm::BasicBlock::Create(ctx_, "blocks.body", f_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "blocks.exit", f_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* block_start = b_.CreatePHI(b_.getInt64Ty(), 2);
  block_start->addIncoming(b_.getInt64(0), pre);
  std::vector<llvm::PHINode*> state_phis;
  for (llvm::Value*& v : state) {
    llvm::PHINode* p = b_.CreatePHI(v->getType(), 2);
    p->addIncoming(v, pre);
    state_phis.push_back(p);
    v = p;
  }
  b_.CreateCondBr(b_.CreateICmpSLT(block_start, full), body, exit);
  b_.SetInsertPoint(body);
  constexpr int64_t kBlock = 1024;  // eager's kBlock (a whole number of W steps)
  llvm::Value* block_end = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(block_start, b_.getInt64(kBlock)), full);
  // In the block: each sum's k block accumulators, then each max's state.
  std::vector<llvm::Value*> accs;
  for (size_t r = 0; r < nr; ++r) {
    if (!is_sum(r)) continue;
    for (int64_t t = 0; t < k; ++t) accs.push_back(reduction_identity(op_of(r), dtype_of(r)));
  }
  for (size_t r = 0; r < nr; ++r) {
    if (is_sum(r)) continue;
    for (int64_t t = 0; t <= k; ++t) accs.push_back(state[base[r] + static_cast<size_t>(t)]);
  }
  accumulating_loop(block_start, block_end, W, accs, [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    for (int64_t t = 0; t < k; ++t) {
      const std::vector<llvm::Value*> v = values(b_.CreateAdd(j0, b_.getInt64(t * w)), step_mask);
      size_t at = 0;
      for (size_t r = 0; r < nr; ++r) {
        if (!is_sum(r)) continue;
        llvm::Value*& acc = a[at + static_cast<size_t>(t)];
        acc = b_.CreateFAdd(acc, v[r]);
        at += static_cast<size_t>(k);
      }
      for (size_t r = 0; r < nr; ++r) {
        if (is_sum(r)) continue;
        llvm::Value*& acc = a[at + static_cast<size_t>(t)];
        acc = pick(op_of(r), acc, v[r]);
        llvm::Value*& nan = a[at + static_cast<size_t>(k)];
        llvm::Value* isnan = b_.CreateFCmpUNO(v[r], v[r]);
        nan = b_.CreateOr(nan, step_mask ? b_.CreateAnd(isnan, step_mask) : isnan);
        at += static_cast<size_t>(k) + 1;
      }
    }
  });
  // The block's sums into their totals; the maxes carry on.
  size_t at = 0;
  for (size_t r = 0; r < nr; ++r) {
    if (!is_sum(r)) continue;
    const std::vector<llvm::Value*> q = quarters(std::vector<llvm::Value*>(
        accs.begin() + static_cast<std::ptrdiff_t>(at), accs.begin() + static_cast<std::ptrdiff_t>(at + k)));
    llvm::Value* v = b_.CreateFAdd(b_.CreateFAdd(q[0], q[1]), b_.CreateFAdd(q[2], q[3]));
    llvm::Value* s = llvm::ConstantFP::get(reg_scalar(dtype_of(r)), 0.0);
    for (int64_t l = 0; l < E; ++l) s = b_.CreateFAdd(s, b_.CreateExtractElement(v, static_cast<uint64_t>(l)));
    state[base[r]] = b_.CreateFAdd(state[base[r]], s->getType() == wide ? s : b_.CreateFPExt(s, wide));
    at += static_cast<size_t>(k);
  }
  for (size_t r = 0; r < nr; ++r) {
    if (is_sum(r)) continue;
    for (int64_t t = 0; t <= k; ++t) state[base[r] + static_cast<size_t>(t)] = accs[at + static_cast<size_t>(t)];
    at += static_cast<size_t>(k) + 1;
  }
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  block_start->addIncoming(block_end, latch);
  for (size_t i = 0; i < state_phis.size(); ++i) state_phis[i]->addIncoming(state[i], latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  for (size_t i = 0; i < state_phis.size(); ++i) state[i] = state_phis[i];
  // Each max folded to one value and a NaN flag; then the last elements one at a time.
  std::vector<llvm::Value*> tail_state;  // per reduction: the running value (sum: the double total), its NaN flag
  for (size_t r = 0; r < nr; ++r) {
    if (is_sum(r)) {
      tail_state.push_back(state[base[r]]);
      tail_state.push_back(b_.getFalse());
      continue;
    }
    const std::vector<llvm::Value*> q = quarters(std::vector<llvm::Value*>(
        state.begin() + static_cast<std::ptrdiff_t>(base[r]), state.begin() + static_cast<std::ptrdiff_t>(base[r] + k)));
    const ExprOp op = op_of(r);
    llvm::Value* m = pick(op, pick(op, q[0], q[1]), pick(op, q[2], q[3]));
    llvm::Value* s = b_.CreateExtractElement(reduction_identity(op, dtype_of(r)), static_cast<uint64_t>(0));
    for (int64_t l = 0; l < E; ++l) s = keep(op, s, b_.CreateExtractElement(m, static_cast<uint64_t>(l)));
    tail_state.push_back(s);
    tail_state.push_back(b_.CreateOrReduce(state[base[r] + static_cast<size_t>(k)]));
  }
  accumulating_loop(full, b_.CreateAdd(cols, b_.getInt64(w - 1)), w, tail_state,
                    [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    llvm::Value* mask = b_.CreateICmpSLT(b_.CreateAdd(splat64(j0), lane_ids()), splat64(cols));
    const std::vector<llvm::Value*> v = values(j0, mask);
    for (int64_t l = 0; l < w; ++l) {
      llvm::Value* valid = b_.CreateExtractElement(mask, static_cast<uint64_t>(l));
      for (size_t r = 0; r < nr; ++r) {
        llvm::Value* x = b_.CreateExtractElement(v[r], static_cast<uint64_t>(l));
        llvm::Value*& s = a[2 * r];
        if (is_sum(r)) {
          s = b_.CreateSelect(valid, b_.CreateFAdd(s, x->getType() == wide ? x : b_.CreateFPExt(x, wide)), s);
        } else {
          s = b_.CreateSelect(valid, keep(op_of(r), s, x), s);
          a[2 * r + 1] = b_.CreateOr(a[2 * r + 1], b_.CreateAnd(valid, b_.CreateFCmpUNO(x, x)));
        }
      }
    }
  });
  std::vector<llvm::Value*> results;
  for (size_t r = 0; r < nr; ++r) {
    llvm::Type* t = reg_scalar(dtype_of(r));
    llvm::Value* s = tail_state[2 * r];
    if (is_sum(r)) {
      if (s->getType() != t) s = b_.CreateFPTrunc(s, t);
      if (op_of(r) == ExprOp::ReduceMean) s = b_.CreateFDiv(s, b_.CreateSIToFP(cols, t));
    } else {
      s = b_.CreateSelect(tail_state[2 * r + 1], llvm::ConstantFP::getQNaN(t), s);
    }
    results.push_back(b_.CreateVectorSplat(w_, s));
  }
  return results;
}

// Note [Row folds in eager's norm order]
// --------------------------------------
// A norm row kernel (Kernel::norm_rows: layer_norm, rms_norm and their input
// gradient as row groups, Note [Norms as row groups] in passes/fuse_reductions.h)
// folds a row as eager's norm_forward_typed / norm_backward_input_typed
// (eager/kernels/cpu/nn/per_capability/NormKernel.cpp) do with NnVec's
// sum_chunks: four E-lane accumulators from +0 over every 4E step (step i
// adds x[i + qE .. i + qE + E) into accumulator q), then the E steps left
// into accumulator 0, then the last partial vector (cols % E elements, its
// other lanes adding +0: eager pads with zeros, or with the mean where it
// subtracts the mean) into accumulator 1, then (a0 + a1) + (a2 + a3) and its
// lanes added in order to +0, all in T; a mean divides that by cols in T. A
// ReduceSum with `b` set (a sum of a * b) adds each vector by one fma, as the
// FMA-contracted eager loops (`a0 + d * d`, `acc + gw * xhat`) do, the partial
// vector's too. Eager's store loop handles its partial vector apart, through
// memcpy'd loads, and there rounds the products it adds the bias and -a to
// (`v * w + b`, `g * w - a`) before adding: the kernel stores the columns up to
// cols - cols % E with the exprs as they are, then the rest with each
// fma_in_whole_vectors expr as a product and a sum (Lowering::split_whole_vector_fmas_).
// An accumulator from +0 is never -0, so a padding lane's +0 changes nothing.
std::vector<llvm::Value*> Lowering::emit_norm_order_folds(const std::vector<int32_t>& reduces, int64_t lanes,
                                                          std::vector<llvm::Value*>& known, llvm::Value* row,
                                                          llvm::Value* row_start, llvm::Value* cols) {
  const int pass = row_->stage[static_cast<size_t>(reduces.at(0))];
  const size_t nr = reduces.size();
  std::vector<int32_t> targets;
  for (int32_t r : reduces) {
    const Expr& e = k_.exprs[static_cast<size_t>(r)];
    KILN_CHECK(e.op == ExprOp::ReduceSum || e.op == ExprOp::ReduceMean, "codegen: a norm row fold that is not a sum");
    targets.push_back(e.a);
    if (e.b >= 0) targets.push_back(e.b);
  }
  const int64_t E = lanes, w = w_;
  KILN_CHECK(E % w == 0 || w % E == 0, "codegen: eager's norm vector of ", E, " lanes against ", w);
  // Concatenates vectors of equal width (a power-of-two count) and keeps the first E lanes.
  const auto first_lanes = [&](std::vector<llvm::Value*> parts) {
    llvm::Value* all = concat_vectors(std::move(parts));
    const auto n = static_cast<int64_t>(llvm::cast<llvm::FixedVectorType>(all->getType())->getNumElements());
    if (n == E) return all;
    llvm::SmallVector<int, 64> idx;
    for (int64_t l = 0; l < E; ++l) idx.push_back(static_cast<int>(l));
    return b_.CreateShuffleVector(all, all, idx);
  };
  // Per reduction, its operand (and `b`) at columns j..j+E as E-lane vectors; with `end`, the lanes
  // at columns from `end` on are +0 (the partial last vector).
  const auto chunk = [&](llvm::Value* j, llvm::Value* end = nullptr) {
    std::vector<std::vector<llvm::Value*>> a(nr), bv(nr);
    const int64_t m = E >= w ? E / w : 1;
    for (int64_t t = 0; t < m; ++t) {
      llvm::Value* at = b_.CreateAdd(j, b_.getInt64(t * w));
      llvm::Value* mask = E < w ? b_.CreateICmpSLT(lane_ids(), splat64(b_.getInt64(E))) : nullptr;
      if (end != nullptr) {
        llvm::Value* inside = b_.CreateICmpSLT(b_.CreateAdd(splat64(at), lane_ids()), splat64(end));
        mask = mask ? b_.CreateAnd(mask, inside) : inside;
      }
      const std::vector<llvm::Value*> v = evaluate_row_pass(pass, targets, known, row, row_start, cols, at, mask);
      const auto padded = [&](int32_t e) {
        llvm::Value* x = v[static_cast<size_t>(e)];
        return end ? b_.CreateSelect(mask, x, llvm::Constant::getNullValue(x->getType())) : x;
      };
      for (size_t r = 0; r < nr; ++r) {
        const Expr& e = k_.exprs[static_cast<size_t>(reduces[r])];
        a[r].push_back(padded(e.a));
        if (e.b >= 0) bv[r].push_back(padded(e.b));
      }
    }
    std::vector<std::pair<llvm::Value*, llvm::Value*>> out;
    for (size_t r = 0; r < nr; ++r) out.emplace_back(first_lanes(a[r]), bv[r].empty() ? nullptr : first_lanes(bv[r]));
    return out;
  };
  const auto add_chunk = [&](llvm::Value* acc, const std::pair<llvm::Value*, llvm::Value*>& x) {
    return x.second ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {acc->getType()}, {x.first, x.second, acc})
                    : b_.CreateFAdd(acc, x.first);
  };
  std::vector<llvm::Value*> accs;  // reduction r's accumulator q at 4 r + q
  for (size_t r = 0; r < nr; ++r) {
    llvm::Type* t = llvm::FixedVectorType::get(reg_scalar(k_.exprs[static_cast<size_t>(reduces[r])].dtype),
                                               static_cast<unsigned>(E));
    for (int q = 0; q < 4; ++q) accs.push_back(llvm::Constant::getNullValue(t));
  }
  llvm::Value* j = accumulating_loop(b_.getInt64(0), cols, 4 * E, accs, [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    for (int64_t q = 0; q < 4; ++q) {
      const auto x = chunk(b_.CreateAdd(j0, b_.getInt64(q * E)));
      for (size_t r = 0; r < nr; ++r) a[4 * r + static_cast<size_t>(q)] = add_chunk(a[4 * r + static_cast<size_t>(q)], x[r]);
    }
  });
  std::vector<llvm::Value*> first;
  for (size_t r = 0; r < nr; ++r) first.push_back(accs[4 * r]);
  llvm::Value* partial_start = accumulating_loop(j, cols, E, first, [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    const auto x = chunk(j0);
    for (size_t r = 0; r < nr; ++r) a[r] = add_chunk(a[r], x[r]);
  });
  // The partial last vector, if any, into accumulator 1; its lanes past cols add +0.
  llvm::BasicBlock* before_partial = b_.GetInsertBlock();
  auto* partial = llvm::BasicBlock::Create(ctx_, "red.partial", f_);
  auto* after_partial = llvm::BasicBlock::Create(ctx_, "red.partial.exit", f_);
  b_.CreateCondBr(b_.CreateICmpSLT(partial_start, cols), partial, after_partial);
  b_.SetInsertPoint(partial);
  const auto x = chunk(partial_start, cols);
  std::vector<llvm::Value*> with_partial;
  for (size_t r = 0; r < nr; ++r) with_partial.push_back(add_chunk(accs[4 * r + 1], x[r]));
  llvm::BasicBlock* partial_end = b_.GetInsertBlock();
  b_.CreateBr(after_partial);
  b_.SetInsertPoint(after_partial);
  for (size_t r = 0; r < nr; ++r) {
    llvm::PHINode* p = b_.CreatePHI(accs[4 * r + 1]->getType(), 2);
    p->addIncoming(accs[4 * r + 1], before_partial);
    p->addIncoming(with_partial[r], partial_end);
    accs[4 * r + 1] = p;
  }
  std::vector<llvm::Value*> results;
  for (size_t r = 0; r < nr; ++r) {
    const Expr& e = k_.exprs[static_cast<size_t>(reduces[r])];
    llvm::Type* t = reg_scalar(e.dtype);
    llvm::Value* v = b_.CreateFAdd(b_.CreateFAdd(first[r], accs[4 * r + 1]), b_.CreateFAdd(accs[4 * r + 2], accs[4 * r + 3]));
    llvm::Value* s = llvm::ConstantFP::get(t, 0.0);
    for (int64_t l = 0; l < E; ++l) s = b_.CreateFAdd(s, b_.CreateExtractElement(v, static_cast<uint64_t>(l)));
    if (e.op == ExprOp::ReduceMean) s = b_.CreateFDiv(s, b_.CreateSIToFP(cols, t));
    results.push_back(b_.CreateVectorSplat(w_, s));
  }
  return results;
}

llvm::Value* Lowering::scratch_at(size_t slot, llvm::Value* cols, llvm::Value* j) {
  const DType d = k_.exprs[static_cast<size_t>(row_->spilled[slot])].dtype;
  return scratch_row_at(slot, reg_scalar(d), cols, j);
}

llvm::Value* Lowering::scratch_row_at(size_t slot, llvm::Type* t, llvm::Value* row_length, llvm::Value* j) {
  llvm::Value* base = b_.CreateInBoundsGEP(b_.getInt8Ty(), strides_,
                                           b_.CreateMul(row_length, b_.getInt64(static_cast<int64_t>(slot) * 8)));
  return b_.CreateInBoundsGEP(t, base, j);
}

llvm::Value* Lowering::load_lanes(llvm::Type* t, llvm::Value* p, llvm::Value* mask) {
  llvm::Type* vt = vec(t);
  const llvm::Align a(t->getScalarSizeInBits() / 8);
  if (mask) return b_.CreateMaskedLoad(vt, p, a, mask, llvm::Constant::getNullValue(vt));
  return b_.CreateAlignedLoad(vt, p, a);
}

void Lowering::store_lanes(llvm::Value* x, llvm::Value* p, llvm::Value* mask) {
  const llvm::Align a(x->getType()->getScalarSizeInBits() / 8);
  if (mask) b_.CreateMaskedStore(x, p, a, mask);
  else b_.CreateAlignedStore(x, p, a);
}

void Lowering::emit_row_blocks(llvm::Value* rows, int64_t block_rows, const std::string& name,
                               const std::function<void(llvm::Value*, llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name + ".header", f_);
  auto* block = llvm::BasicBlock::Create(ctx_, name + ".body", f_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", f_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* start = b_.CreatePHI(b_.getInt64Ty(), 2);
  start->addIncoming(b_.getInt64(0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(start, rows), block, exit);
  b_.SetInsertPoint(block);
  llvm::Value* end =
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(start, b_.getInt64(block_rows)), rows);
  body(start, end);
  start->addIncoming(end, b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

std::vector<llvm::Value*> Lowering::evaluate_row_pass(int pass, const std::vector<int32_t>& targets,
                                                      const std::vector<llvm::Value*>& known, llvm::Value* row,
                                                      llvm::Value* row_start, llvm::Value* cols, llvm::Value* j,
                                                      llvm::Value* mask) {
  std::vector<llvm::Value*> local = known;
  std::vector<bool> available(known.size());
  for (size_t i = 0; i < known.size(); ++i) available[i] = known[i] != nullptr;
  for (size_t s = 0; s < row_->spilled.size(); ++s) {
    if (row_->spill_pass[s] >= pass) continue;
    const size_t e = static_cast<size_t>(row_->spilled[s]);
    llvm::Type* vt = vec(reg_scalar(k_.exprs[e].dtype));
    llvm::Value* p = scratch_at(s, cols, j);
    const llvm::Align a = llvm::Align(vt->getScalarSizeInBits() / 8);
    local[e] = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vt, p, a, mask, llvm::Constant::getNullValue(vt)))
                    : static_cast<llvm::Value*>(b_.CreateAlignedLoad(vt, p, a));
    available[e] = true;
  }
  const std::vector<bool> need = needed_for(k_, targets, available);
  std::vector<llvm::Value*> v = evaluate(
      [&](int32_t in) { return load_row_operand(static_cast<size_t>(in), row, row_start, j, mask); }, &local, &need);
  for (size_t s = 0; s < row_->spilled.size(); ++s) {
    if (row_->spill_pass[s] != pass) continue;
    llvm::Value* x = v[static_cast<size_t>(row_->spilled[s])];
    if (x == nullptr) continue;  // computed by this pass's folds of another vector width
    llvm::Value* p = scratch_at(s, cols, j);
    const llvm::Align a = llvm::Align(x->getType()->getScalarSizeInBits() / 8);
    if (mask) b_.CreateMaskedStore(x, p, a, mask);
    else b_.CreateAlignedStore(x, p, a);
  }
  return v;
}

void Lowering::emit_row_kernel(llvm::Value* begin, llvm::Value* end) {
  const RowSchedule schedule = schedule_rows(k_);
  row_ = &schedule;
  const RowSchedule& facts = schedule;
  const size_t n = k_.exprs.size();
  const int passes = schedule.passes();
  llvm::Value* cols = size(1);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "row.header", f_);
  auto* body = llvm::BasicBlock::Create(ctx_, "row.body", f_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "row.exit", f_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* row = b_.CreatePHI(b_.getInt64Ty(), 2);
  row->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(row, end), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* row_start = b_.CreateMul(row, cols);
  std::vector<llvm::Value*> known(n, nullptr);
  // The uniform values computable after `stage` passes, once per row.
  const auto compute_uniform = [&](int stage) {
    std::vector<int32_t> ready;
    for (size_t i = 0; i < n; ++i) {
      if (facts.live[i] && facts.uniform[i] && facts.stage[i] <= stage && !known[i] && !is_reduction(k_.exprs[i].op)) {
        ready.push_back(static_cast<int32_t>(i));
      }
    }
    if (ready.empty()) return;
    std::vector<bool> available(n);
    for (size_t i = 0; i < n; ++i) available[i] = known[i] != nullptr;
    const std::vector<bool> need = needed_for(k_, ready, available);
    const std::vector<llvm::Value*> v = evaluate(
        [&](int32_t in) { return load_row_operand(static_cast<size_t>(in), row, row_start, nullptr, nullptr); }, &known,
        &need);
    for (int32_t i : ready) known[static_cast<size_t>(i)] = v[static_cast<size_t>(i)];
  };
  compute_uniform(0);
  for (int stage = 1; stage <= passes; ++stage) {
    const std::vector<int32_t>& reduces = schedule.reduces[static_cast<size_t>(stage - 1)];
    const std::vector<llvm::Value*> r = emit_reduction_pass(reduces, known, row, row_start, cols);
    for (size_t i = 0; i < reduces.size(); ++i) known[static_cast<size_t>(reduces[i])] = r[i];
    compute_uniform(stage);
  }
  // Per-row outputs: one element at out[row].
  std::vector<int32_t> element_outputs;
  for (size_t o = 0; o < k_.outputs.size(); ++o) {
    const DType d = k_.output_dtypes[o];
    const size_t e = static_cast<size_t>(k_.outputs[o]);
    if (k_.output_roles[o] == RowOperand::Element) {
      element_outputs.push_back(k_.outputs[o]);
      continue;
    }
    KILN_CHECK(known[e] != nullptr, "codegen: row kernel output ", o, " is not uniform along the row");
    llvm::Value* r = to_memory(d, cast(known[e], k_.exprs[e].dtype, d));
    b_.CreateAlignedStore(b_.CreateExtractElement(r, static_cast<uint64_t>(0)),
                          b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], row), align(d));
  }
  // The last pass: element outputs (a norm row kernel's partial last vector apart: Note [Row folds in
  // eager's norm order]).
  const auto store_range = [&](llvm::Value* lo, llvm::Value* hi) {
    emit_range(lo, hi, [&](llvm::Value* j, llvm::Value* mask) {
      const std::vector<llvm::Value*> v =
          evaluate_row_pass(passes + 1, element_outputs, known, row, row_start, cols, j, mask);
      llvm::Value* at = b_.CreateAdd(row_start, j);
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        if (k_.output_roles[o] != RowOperand::Element) continue;
        const DType d = k_.output_dtypes[o];
        const size_t e = static_cast<size_t>(k_.outputs[o]);
        llvm::Value* r = to_memory(d, cast(v[e], k_.exprs[e].dtype, d));
        llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], at);
        if (mask) b_.CreateMaskedStore(r, p, align(d), mask);
        else b_.CreateAlignedStore(r, p, align(d));
      }
    });
  };
  if (!element_outputs.empty() && !k_.norm_rows) store_range(b_.getInt64(0), cols);
  if (!element_outputs.empty() && k_.norm_rows) {
    llvm::Value* whole = b_.CreateSub(cols, b_.CreateSRem(cols, b_.getInt64(norm_row_lanes(k_))));
    store_range(b_.getInt64(0), whole);
    split_whole_vector_fmas_ = true;
    store_range(whole, cols);
    split_whole_vector_fmas_ = false;
  }
  row->addIncoming(b_.CreateAdd(row, b_.getInt64(1)), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  row_ = nullptr;
}

// Note [Column reduction kernels]
// -------------------------------
// A column kernel (Kernel::columns; passes/fuse_column_reductions.h) folds
// each column of its [rows, cols] space, and equals eager's sum.dim and
// mean.dim over leading dims bit for bit by adding in the order of eager's
// across-rows loop (sum_columns in eager/kernels/cpu/reduce/per_capability/
// ReduceOpsKernel.cpp): per column, blocks of up to 1024 rows; in a block an
// accumulator in T from +0 adds the rows four at a time as
// (r0 + r1) + (r2 + r3), then the block's last rows one at a time; each
// block's accumulator is added into a double total, which is rounded to T at
// the end (mean: then divided by rows in T). Columns are independent, so the
// kernel's [begin, end) is a piece of the columns (at most kColumnPiece,
// split across threads as eager splits them; the split changes nothing),
// and it walks the piece as eager does, row by row along memory: the
// accumulators and totals are rows of the calling thread's scratch (the
// `strides` argument: per reduction an accumulator row, then a total row,
// 8 bytes a column). Element outputs (prologue values read outside the
// group) are stored where they are computed; there is no epilogue.
void Lowering::emit_column_kernel(llvm::Value* begin, llvm::Value* end) {
  const size_t n = k_.exprs.size();
  llvm::Value* rows = size(0);
  llvm::Value* cols = size(1);
  llvm::Value* width = b_.CreateSub(end, begin);
  std::vector<int32_t> reduces, targets;
  for (size_t i = 0; i < n; ++i) {
    if (is_reduction(k_.exprs[i].op)) reduces.push_back(static_cast<int32_t>(i));
  }
  for (size_t o = 0; o < k_.outputs.size(); ++o) {
    if (k_.output_roles[o] == RowOperand::Element) targets.push_back(k_.outputs[o]);
  }
  for (int32_t r : reduces) {
    targets.push_back(k_.exprs[static_cast<size_t>(r)].a);
    if (k_.exprs[static_cast<size_t>(r)].b >= 0) targets.push_back(k_.exprs[static_cast<size_t>(r)].b);
  }
  const std::vector<bool> need = needed_for(k_, targets, std::vector<bool>(n, false));
  for (int32_t r : reduces) {
    KILN_CHECK(!need[static_cast<size_t>(r)], "codegen: a column kernel's value depends on a column's sum");
  }
  const auto dtype_of = [&](size_t i) { return k_.exprs[static_cast<size_t>(reduces[i])].dtype; };
  llvm::Type* wide = b_.getDoubleTy();
  // Scratch row `slot` (2i: reduction i's accumulators in T, 2i + 1: its double totals) at column jj of the piece.
  const auto scratch = [&](size_t slot, llvm::Type* t, llvm::Value* jj) { return scratch_row_at(slot, t, width, jj); };
  // The reductions' operands at row r, columns begin + jj .. (storing the Element outputs there).
  const auto at_row = [&](llvm::Value* r, llvm::Value* jj, llvm::Value* mask) {
    llvm::Value* j = b_.CreateAdd(begin, jj);
    llvm::Value* row_start = b_.CreateMul(r, cols);
    const std::vector<llvm::Value*> v = evaluate(
        [&](int32_t in) { return load_row_operand(static_cast<size_t>(in), r, row_start, j, mask); }, nullptr, &need);
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      if (k_.output_roles[o] != RowOperand::Element) continue;
      const DType d = k_.output_dtypes[o];
      const size_t e = static_cast<size_t>(k_.outputs[o]);
      llvm::Value* x = to_memory(d, cast(v[e], k_.exprs[e].dtype, d));
      llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], b_.CreateAdd(row_start, j));
      if (mask) b_.CreateMaskedStore(x, p, align(d), mask);
      else b_.CreateAlignedStore(x, p, align(d));
    }
    // Each reduction's operand, then each's second factor (a product fold's `b`) or nullptr.
    std::vector<llvm::Value*> out;
    for (int32_t red : reduces) out.push_back(v[static_cast<size_t>(k_.exprs[static_cast<size_t>(red)].a)]);
    for (int32_t red : reduces) {
      const int32_t f = k_.exprs[static_cast<size_t>(red)].b;
      out.push_back(f >= 0 ? v[static_cast<size_t>(f)] : nullptr);
    }
    return out;
  };
  if (k_.norm_chunk_rows > 0) {
    emit_norm_column_folds(begin, end, reduces, at_row);
    return;
  }
  const auto zero_rows = [&](bool totals) {
    emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
      for (size_t i = 0; i < reduces.size(); ++i) {
        llvm::Type* t = totals ? wide : reg_scalar(dtype_of(i));
        store_lanes(llvm::Constant::getNullValue(vec(t)), scratch(2 * i + (totals ? 1 : 0), t, jj), mask);
      }
    });
  };
  zero_rows(true);
  // Blocks of up to 1024 rows (eager's kBlock).
  emit_row_blocks(rows, 1024, "colblocks", [&](llvm::Value* block_start, llvm::Value* block_end) {
    zero_rows(false);
    std::vector<llvm::Value*> no_state;
    llvm::Value* r4 = accumulating_loop(block_start, block_end, 4, no_state, [&](llvm::Value* r0, std::vector<llvm::Value*>&) {
      emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
        const std::vector<llvm::Value*> v0 = at_row(r0, jj, mask);
        const std::vector<llvm::Value*> v1 = at_row(b_.CreateAdd(r0, b_.getInt64(1)), jj, mask);
        const std::vector<llvm::Value*> v2 = at_row(b_.CreateAdd(r0, b_.getInt64(2)), jj, mask);
        const std::vector<llvm::Value*> v3 = at_row(b_.CreateAdd(r0, b_.getInt64(3)), jj, mask);
        for (size_t i = 0; i < reduces.size(); ++i) {
          llvm::Type* t = reg_scalar(dtype_of(i));
          llvm::Value* p = scratch(2 * i, t, jj);
          llvm::Value* four = b_.CreateFAdd(b_.CreateFAdd(v0[i], v1[i]), b_.CreateFAdd(v2[i], v3[i]));
          store_lanes(b_.CreateFAdd(load_lanes(t, p, mask), four), p, mask);
        }
      });
    });
    accumulating_loop(r4, block_end, 1, no_state, [&](llvm::Value* r, std::vector<llvm::Value*>&) {
      emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
        const std::vector<llvm::Value*> v = at_row(r, jj, mask);
        for (size_t i = 0; i < reduces.size(); ++i) {
          llvm::Type* t = reg_scalar(dtype_of(i));
          llvm::Value* p = scratch(2 * i, t, jj);
          store_lanes(b_.CreateFAdd(load_lanes(t, p, mask), v[i]), p, mask);
        }
      });
    });
    emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
      for (size_t i = 0; i < reduces.size(); ++i) {
        llvm::Type* t = reg_scalar(dtype_of(i));
        llvm::Value* acc = load_lanes(t, scratch(2 * i, t, jj), mask);
        llvm::Value* p = scratch(2 * i + 1, wide, jj);
        store_lanes(b_.CreateFAdd(load_lanes(wide, p, mask), t == wide ? acc : b_.CreateFPExt(acc, vec(wide))), p, mask);
      }
    });
  });
  // The totals rounded to T into the per-column outputs.
  emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      if (k_.output_roles[o] != RowOperand::PerColumn) continue;
      const auto it = std::find(reduces.begin(), reduces.end(), k_.outputs[o]);
      KILN_CHECK(it != reduces.end(), "codegen: a column kernel's per-column output is not a column's sum");
      const size_t i = static_cast<size_t>(it - reduces.begin());
      const Expr& e = k_.exprs[static_cast<size_t>(*it)];
      llvm::Type* t = reg_scalar(e.dtype);
      llvm::Value* s = load_lanes(wide, scratch(2 * i + 1, wide, jj), mask);
      if (t != wide) s = b_.CreateFPTrunc(s, vec(t));
      if (e.op == ExprOp::ReduceMean) s = b_.CreateFDiv(s, b_.CreateVectorSplat(w_, b_.CreateSIToFP(rows, t)));
      const DType d = k_.output_dtypes[o];
      llvm::Value* x = to_memory(d, cast(s, e.dtype, d));
      store_lanes(x, b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], b_.CreateAdd(begin, jj)), mask);
    }
  });
}

// A norm column kernel (Kernel::norm_chunk_rows; Note [Norm parameter gradients as column groups],
// passes/fuse_column_reductions.h) folds each column in the order of eager's norm_backward_params:
// the rows in chunks of norm_chunk_rows; in a chunk an accumulator in T from +0 takes the rows one at
// a time (acc + a, or fma(a, b, acc) for a product fold, as eager's FMA-contracted acc + g * xhat);
// the chunks' accumulators added in chunk order into a total in T (eager starts from the first
// chunk's sum; +0 plus it is the same, an accumulator from +0 never being -0), stored as is.
// Scratch as the sum order's: per reduction an accumulator row, then a total row.
void Lowering::emit_norm_column_folds(llvm::Value* begin, llvm::Value* end, const std::vector<int32_t>& reduces,
                                      const RowOperands& operands_at) {
  llvm::Value* rows = size(0);
  llvm::Value* width = b_.CreateSub(end, begin);
  const size_t nr = reduces.size();
  const auto type_of = [&](size_t i) { return reg_scalar(k_.exprs[static_cast<size_t>(reduces[i])].dtype); };
  const auto scratch = [&](size_t slot, llvm::Type* t, llvm::Value* jj) { return scratch_row_at(slot, t, width, jj); };
  const auto zero_rows = [&](size_t which) {  // 0: the accumulators, 1: the totals
    emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
      for (size_t i = 0; i < nr; ++i) store_lanes(llvm::Constant::getNullValue(vec(type_of(i))), scratch(2 * i + which, type_of(i), jj), mask);
    });
  };
  zero_rows(1);
  emit_row_blocks(rows, k_.norm_chunk_rows, "normchunks", [&](llvm::Value* chunk_start, llvm::Value* chunk_end) {
    zero_rows(0);
    std::vector<llvm::Value*> no_state;
    accumulating_loop(chunk_start, chunk_end, 1, no_state, [&](llvm::Value* r, std::vector<llvm::Value*>&) {
      emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
        const std::vector<llvm::Value*> v = operands_at(r, jj, mask);
        for (size_t i = 0; i < nr; ++i) {
          llvm::Type* t = type_of(i);
          llvm::Value* p = scratch(2 * i, t, jj);
          llvm::Value* acc = load_lanes(t, p, mask);
          llvm::Value* f = v[nr + i];
          store_lanes(f ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {acc->getType()}, {v[i], f, acc}) : b_.CreateFAdd(acc, v[i]),
                p, mask);
        }
      });
    });
    emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
      for (size_t i = 0; i < nr; ++i) {
        llvm::Type* t = type_of(i);
        llvm::Value* p = scratch(2 * i + 1, t, jj);
        store_lanes(b_.CreateFAdd(load_lanes(t, p, mask), load_lanes(t, scratch(2 * i, t, jj), mask)), p, mask);
      }
    });
  });
  emit_range(b_.getInt64(0), width, [&](llvm::Value* jj, llvm::Value* mask) {
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      if (k_.output_roles[o] != RowOperand::PerColumn) continue;
      const auto it = std::find(reduces.begin(), reduces.end(), k_.outputs[o]);
      KILN_CHECK(it != reduces.end(), "codegen: a column kernel's per-column output is not a column's sum");
      const size_t i = static_cast<size_t>(it - reduces.begin());
      const Expr& e = k_.exprs[static_cast<size_t>(*it)];
      KILN_CHECK(e.op == ExprOp::ReduceSum, "codegen: a norm column kernel folds sums only");
      llvm::Value* s = load_lanes(type_of(i), scratch(2 * i + 1, type_of(i), jj), mask);
      const DType d = k_.output_dtypes[o];
      store_lanes(to_memory(d, cast(s, e.dtype, d)), b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], b_.CreateAdd(begin, jj)), mask);
    }
  });
}

}  // namespace kiln::codegen
