// Row kernels -> LLVM IR: per row, one pass over the cols per reduction depth
// with four vector accumulators per reduction, then the stores.
// See Note [Row reduction kernels] (KernelIR.h).
#include <algorithm>
#include <limits>

#include "codegen/RowSchedule.h"
#include "codegen/llvm/KernelLowering.h"
#include "eager/core/Error.h"

namespace kiln::codegen {

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

llvm::Value* Lowering::reduction_identity(ExprOp op, DType d) {
  llvm::Type* t = reg_scalar(d);
  double v = 0.0;  // sum and mean start at +0, as the eager accumulators
  if (op == ExprOp::ReduceMax) v = -std::numeric_limits<double>::infinity();
  if (op == ExprOp::ReduceMin) v = std::numeric_limits<double>::infinity();
  return b_.CreateVectorSplat(w_, llvm::ConstantFP::get(t, v));
}

llvm::Value* Lowering::combine(ExprOp op, llvm::Value* acc, llvm::Value* x) {
  if (op == ExprOp::ReduceSum || op == ExprOp::ReduceMean) return b_.CreateFAdd(acc, x);
  // NaN-propagating, as amax/amin: x wins when it is NaN or beyond acc (a NaN acc stays).
  llvm::Value* beyond = op == ExprOp::ReduceMax ? b_.CreateFCmpOGT(x, acc) : b_.CreateFCmpOLT(x, acc);
  return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpUNO(x, x), beyond), x, acc);
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
  std::vector<int32_t> operands;
  for (int32_t r : reduces) operands.push_back(k_.exprs[static_cast<size_t>(r)].a);
  const int pass = row_->stage[static_cast<size_t>(reduces.at(0))];
  const size_t nr = reduces.size();
  const auto op_of = [&](size_t r) { return k_.exprs[static_cast<size_t>(reduces[r])].op; };
  const auto dtype_of = [&](size_t r) { return k_.exprs[static_cast<size_t>(reduces[r])].dtype; };
  // The operands' values at columns j..j+w (mask: the row's tail).
  const auto values = [&](llvm::Value* j, llvm::Value* mask) {
    const std::vector<llvm::Value*> v = evaluate_row_pass(pass, operands, known, row, row_start, cols, j, mask);
    std::vector<llvm::Value*> out;
    for (int32_t o : operands) out.push_back(v[static_cast<size_t>(o)]);
    return out;
  };
  // As eager's sum_chunks and row_max: four accumulators over 4w-column steps, then w-column steps
  // into the first, the masked tail into the second; (a0 . a1) . (a2 . a3); then the lanes in order.
  const int64_t w = w_;
  std::vector<llvm::Value*> accs;  // accumulator q of reduction r at [q * nr + r]
  for (int q = 0; q < 4; ++q) {
    for (size_t r = 0; r < nr; ++r) accs.push_back(reduction_identity(op_of(r), dtype_of(r)));
  }
  llvm::Value* j = accumulating_loop(b_.getInt64(0), cols, 4 * w, accs, [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    for (int q = 0; q < 4; ++q) {
      const std::vector<llvm::Value*> v = values(b_.CreateAdd(j0, b_.getInt64(q * w)), nullptr);
      for (size_t r = 0; r < nr; ++r) a[q * nr + r] = combine(op_of(r), a[q * nr + r], v[r]);
    }
  });
  std::vector<llvm::Value*> first(accs.begin(), accs.begin() + static_cast<std::ptrdiff_t>(nr));
  j = accumulating_loop(j, cols, w, first, [&](llvm::Value* j0, std::vector<llvm::Value*>& a) {
    const std::vector<llvm::Value*> v = values(j0, nullptr);
    for (size_t r = 0; r < nr; ++r) a[r] = combine(op_of(r), a[r], v[r]);
  });
  for (size_t r = 0; r < nr; ++r) accs[r] = first[r];
  // The tail: one masked vector, its missing lanes the identity.
  llvm::BasicBlock* before_tail = b_.GetInsertBlock();
  auto* tail = llvm::BasicBlock::Create(ctx_, "red.tail", f_);
  auto* done = llvm::BasicBlock::Create(ctx_, "red.done", f_);
  b_.CreateCondBr(b_.CreateICmpSLT(j, cols), tail, done);
  b_.SetInsertPoint(tail);
  llvm::Value* mask = b_.CreateICmpSLT(b_.CreateAdd(splat64(j), lane_ids()), splat64(cols));
  const std::vector<llvm::Value*> v = values(j, mask);
  std::vector<llvm::Value*> tail_second(nr);
  for (size_t r = 0; r < nr; ++r) {
    llvm::Value* x = b_.CreateSelect(mask, v[r], reduction_identity(op_of(r), dtype_of(r)));
    tail_second[r] = combine(op_of(r), accs[nr + r], x);
  }
  llvm::BasicBlock* tail_end = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  std::vector<llvm::PHINode*> seconds;  // every phi first: they lead the block
  for (size_t r = 0; r < nr; ++r) {
    llvm::PHINode* second = b_.CreatePHI(accs[nr + r]->getType(), 2);
    second->addIncoming(accs[nr + r], before_tail);
    second->addIncoming(tail_second[r], tail_end);
    seconds.push_back(second);
  }
  std::vector<llvm::Value*> results;
  for (size_t r = 0; r < nr; ++r) {
    llvm::Value* second = seconds[r];
    const ExprOp op = op_of(r);
    llvm::Value* all = combine(op, combine(op, accs[r], second), combine(op, accs[2 * nr + r], accs[3 * nr + r]));
    llvm::Value* s = b_.CreateExtractElement(reduction_identity(op, dtype_of(r)), static_cast<uint64_t>(0));
    for (int l = 0; l < w_; ++l) {
      llvm::Value* lane = b_.CreateExtractElement(all, static_cast<uint64_t>(l));
      if (op == ExprOp::ReduceSum || op == ExprOp::ReduceMean) {
        s = b_.CreateFAdd(s, lane);
      } else {
        llvm::Value* beyond = op == ExprOp::ReduceMax ? b_.CreateFCmpOGT(lane, s) : b_.CreateFCmpOLT(lane, s);
        s = b_.CreateSelect(b_.CreateOr(b_.CreateFCmpUNO(lane, lane), beyond), lane, s);
      }
    }
    if (op == ExprOp::ReduceMean) s = b_.CreateFDiv(s, b_.CreateSIToFP(cols, s->getType()));
    results.push_back(b_.CreateVectorSplat(w_, s));
  }
  return results;
}

llvm::Value* Lowering::scratch_at(size_t slot, llvm::Value* cols, llvm::Value* j) {
  const DType d = k_.exprs[static_cast<size_t>(row_->spilled[slot])].dtype;
  llvm::Value* base = b_.CreateInBoundsGEP(b_.getInt8Ty(), strides_,
                                           b_.CreateMul(cols, b_.getInt64(static_cast<int64_t>(slot) * 8)));
  return b_.CreateInBoundsGEP(reg_scalar(d), base, j);
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
  recip_.assign(n, nullptr);
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
    // A division of row values by a row-uniform value multiplies by its reciprocal, computed once per row
    // (as eager's softmax scales by 1 / sum).
    for (size_t i = 0; i < n; ++i) {
      const Expr& e = k_.exprs[i];
      if (e.op != ExprOp::Div || !facts.live[i] || facts.uniform[i]) continue;
      const size_t d = static_cast<size_t>(e.b);
      if (known[d] != nullptr && recip_[d] == nullptr) {
        recip_[d] = b_.CreateFDiv(llvm::ConstantFP::get(known[d]->getType(), 1.0), known[d]);
      }
    }
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
  // The last pass: element outputs.
  if (!element_outputs.empty()) {
    emit_range(b_.getInt64(0), cols, [&](llvm::Value* j, llvm::Value* mask) {
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
  }
  row->addIncoming(b_.CreateAdd(row, b_.getInt64(1)), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  row_ = nullptr;
  recip_.clear();
}

}  // namespace kiln::codegen
