// Kernel IR -> LLVM IR: types, the expression evaluator, pointwise loops.
#include "codegen/llvm/KernelLowering.h"

#include "codegen/llvm/VectorMath.h"
#include "eager/core/Error.h"

namespace kiln::codegen {

namespace {
bool is_reduced(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
bool is_unsigned(DType t) { return t == DType::UInt8 || t == DType::Bool; }
}  // namespace

Lowering::Lowering(llvm::Module& m, const Kernel& k, int lanes, const std::string& cpu, const std::string& features,
                   const KernelSchedule& schedule)
    : ctx_(m.getContext()), m_(m), b_(ctx_), k_(k), w_(lanes) {
  if (!k.rows) {  // row and column kernels fold at the host width, in eager's order (Note [Kernel schedules])
    KILN_CHECK(schedule.vector_lanes == 0 || (schedule.vector_lanes >= lanes && schedule.vector_lanes % lanes == 0),
               "codegen: a schedule's vector width must be a multiple of the host's ", lanes, ", not ",
               schedule.vector_lanes);
    KILN_CHECK(schedule.unroll >= 1 && schedule.unroll <= 16, "codegen: unroll factor ", schedule.unroll);
    if (schedule.vector_lanes != 0) w_ = schedule.vector_lanes;
    unroll_ = schedule.unroll;
  }
  auto* i64 = b_.getInt64Ty();
  auto* ptr = b_.getPtrTy();
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr, i64, i64}, false);
  f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, k.name, m);
  f_->addFnAttr(llvm::Attribute::NoUnwind);
  f_->addFnAttr("target-cpu", cpu);
  f_->addFnAttr("target-features", features);
  if (lanes == 16) {  // the host has AVX-512
    f_->addFnAttr("min-legal-vector-width", "512");
    f_->addFnAttr("prefer-vector-width", "512");
  }
}

void Lowering::emit() {
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f_);
  b_.SetInsertPoint(entry);
  llvm::Value* data = f_->getArg(0);
  sizes_ = f_->getArg(1);
  strides_ = f_->getArg(2);
  llvm::Value* begin = f_->getArg(3);
  llvm::Value* end = f_->getArg(4);
  const size_t ni = k_.input_dtypes.size();
  for (size_t i = 0; i < ni + k_.output_dtypes.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), data, i);
    llvm::Value* p = b_.CreateLoad(b_.getPtrTy(), slot);
    (i < ni ? in_ptr_ : out_ptr_).push_back(p);
  }
  if (k_.rows && k_.columns) {
    emit_column_kernel(begin, end);
  } else if (k_.rows) {
    emit_row_kernel(begin, end);
  } else if (k_.contiguous) {
    scalar_.resize(ni, nullptr);
    for (size_t i = 0; i < ni; ++i) {
      if (i < k_.input_scalar.size() && k_.input_scalar[i]) {
        const DType d = k_.input_dtypes[i];
        llvm::Value* s = b_.CreateLoad(mem_scalar(d), in_ptr_[i]);
        scalar_[i] = to_register(d, b_.CreateVectorSplat(w_, s));
      }
    }
    emit_range(begin, end, [&](llvm::Value* i, llvm::Value* mask) { step_contiguous(i, mask); });
  } else if (k_.rank == 1) {
    std::vector<llvm::Value*> inner(ni);
    for (size_t k = 0; k < ni; ++k) inner[k] = stride(k, 0);
    const std::vector<llvm::Value*> base(ni, b_.getInt64(0));
    emit_strided_range(base, inner, begin, end, b_.getInt64(0));
  } else {
    emit_rows(begin, end);
  }
  b_.CreateRetVoid();
}

llvm::Type* Lowering::reg_scalar(DType d) {
  switch (d) {
    case DType::Bool: return b_.getInt1Ty();
    case DType::Int8:
    case DType::UInt8: return b_.getInt8Ty();
    case DType::Int16: return b_.getInt16Ty();
    case DType::Int32: return b_.getInt32Ty();
    case DType::Int64: return b_.getInt64Ty();
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return b_.getFloatTy();
    case DType::Float64: return b_.getDoubleTy();
    default: KILN_FAIL(Runtime, "codegen: no kernel type for ", d);
  }
}

llvm::Type* Lowering::mem_scalar(DType d) {
  if (d == DType::Bool) return b_.getInt8Ty();
  if (d == DType::Float16) return b_.getHalfTy();
  if (d == DType::BFloat16) return b_.getInt16Ty();
  return reg_scalar(d);
}

llvm::Value* Lowering::lane_ids() {
  std::vector<llvm::Constant*> ids;
  for (int l = 0; l < w_; ++l) ids.push_back(b_.getInt64(l));
  return llvm::ConstantVector::get(ids);
}

llvm::Value* Lowering::to_register(DType d, llvm::Value* v) {
  switch (d) {
    case DType::Bool: return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    case DType::Float16: return b_.CreateFPExt(v, vec(b_.getFloatTy()));
    case DType::BFloat16: {
      llvm::Value* bits = b_.CreateShl(b_.CreateZExt(v, vec(b_.getInt32Ty())), 16);
      return b_.CreateBitCast(bits, vec(b_.getFloatTy()));
    }
    default: return v;
  }
}

llvm::Value* Lowering::to_memory(DType d, llvm::Value* v) {
  switch (d) {
    case DType::Bool: return b_.CreateZExt(v, vec(b_.getInt8Ty()));
    case DType::Float16: return b_.CreateFPTrunc(v, vec(b_.getHalfTy()));
    case DType::BFloat16: {  // already rounded (Cast): the top half of the float
      llvm::Value* bits = b_.CreateBitCast(v, vec(b_.getInt32Ty()));
      return b_.CreateTrunc(b_.CreateLShr(bits, 16), vec(b_.getInt16Ty()));
    }
    default: return v;
  }
}

/// A float vector rounded to float16/bfloat16 and back (round to nearest even; eager's Half/BFloat16).
llvm::Value* Lowering::round_reduced(DType d, llvm::Value* v) {
  if (d == DType::Float16) return b_.CreateFPExt(b_.CreateFPTrunc(v, vec(b_.getHalfTy())), vec(b_.getFloatTy()));
  auto* i32 = vec(b_.getInt32Ty());
  llvm::Value* x = b_.CreateBitCast(v, i32);
  auto c = [&](uint32_t n) { return llvm::ConstantInt::get(i32, n); };
  llvm::Value* is_nan = b_.CreateICmpUGT(b_.CreateAnd(x, c(0x7fffffffu)), c(0x7f800000u));
  llvm::Value* quiet = b_.CreateAnd(b_.CreateOr(x, c(0x400000u)), c(0xffff0000u));
  llvm::Value* rounding = b_.CreateAdd(c(0x7fffu), b_.CreateAnd(b_.CreateLShr(x, 16), c(1)));
  llvm::Value* rounded = b_.CreateAnd(b_.CreateAdd(x, rounding), c(0xffff0000u));
  return b_.CreateBitCast(b_.CreateSelect(is_nan, quiet, rounded), vec(b_.getFloatTy()));
}

llvm::Value* Lowering::cast(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* rt = vec(reg_scalar(to));
  const bool ff = is_floating_point(from), tf = is_floating_point(to);
  if (to == DType::Bool) {
    return ff ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
              : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (!ff && !tf) return b_.CreateIntCast(v, rt, !is_unsigned(from));
  if (!ff && tf) {
    llvm::Value* r = is_unsigned(from) ? b_.CreateUIToFP(v, rt) : b_.CreateSIToFP(v, rt);
    return is_reduced(to) ? round_reduced(to, r) : r;
  }
  if (ff && tf) {
    llvm::Value* r = v;  // float16/bfloat16 are floats in registers
    if (r->getType() != rt) r = from == DType::Float64 ? b_.CreateFPTrunc(r, rt) : b_.CreateFPExt(r, rt);
    return is_reduced(to) ? round_reduced(to, r) : r;
  }
  // floating -> integer, as x86's cvtt (C++'s cast there): out of range or NaN gives the minimum of
  // the 64-bit (int64) or 32-bit (narrower) conversion; narrower types take its low bits.
  const bool wide = to == DType::Int64;
  auto* it = vec(wide ? b_.getInt64Ty() : b_.getInt32Ty());
  const double limit = wide ? 9223372036854775808.0 : 2147483648.0;
  llvm::Value* lo = llvm::ConstantFP::get(v->getType(), -limit);
  llvm::Value* hi = llvm::ConstantFP::get(v->getType(), limit);
  llvm::Value* ok = b_.CreateAnd(b_.CreateFCmpOGE(v, lo), b_.CreateFCmpOLT(v, hi));
  llvm::Value* t = b_.CreateFreeze(b_.CreateFPToSI(v, it));
  llvm::Value* min = llvm::ConstantInt::get(it, wide ? llvm::APInt::getSignedMinValue(64) : llvm::APInt::getSignedMinValue(32));
  llvm::Value* r = b_.CreateSelect(ok, t, min);
  return b_.CreateIntCast(r, rt, true);
}

llvm::Value* Lowering::call_math(ExprOp op, DType d, llvm::Value* a, llvm::Value* b) {
  const VectorMathFunction fn = vector_math_function(op, d);
  auto* et = reg_scalar(d);
  auto* nt = llvm::FixedVectorType::get(et, static_cast<unsigned>(fn.lanes));
  std::vector<llvm::Type*> params(b ? 2 : 1, nt);
  llvm::FunctionCallee callee = m_.getOrInsertFunction(fn.symbol, llvm::FunctionType::get(nt, params, false));
  if (fn.lanes == w_) return b ? b_.CreateCall(callee, {a, b}) : b_.CreateCall(callee, {a});
  llvm::Value* out = llvm::UndefValue::get(vec(et));
  for (int start = 0; start < w_; start += fn.lanes) {
    std::vector<int> part, place(static_cast<size_t>(w_));
    for (int l = 0; l < fn.lanes; ++l) part.push_back(start + l);
    llvm::Value* pa = b_.CreateShuffleVector(a, part);
    llvm::Value* r = b ? b_.CreateCall(callee, {pa, b_.CreateShuffleVector(b, part)}) : b_.CreateCall(callee, {pa});
    // widen r to w lanes, then blend it into `out` at [start, start + lanes)
    std::vector<int> widen;
    for (int l = 0; l < w_; ++l) widen.push_back(l < fn.lanes ? l : fn.lanes);
    llvm::Value* wide = b_.CreateShuffleVector(r, llvm::PoisonValue::get(nt), widen);
    for (int l = 0; l < w_; ++l) place[static_cast<size_t>(l)] = (l >= start && l < start + fn.lanes) ? w_ + (l - start) : l;
    out = b_.CreateShuffleVector(out, wide, place);
  }
  return out;
}

llvm::Value* Lowering::compare(ExprOp op, DType d, llvm::Value* x, llvm::Value* y) {
  if (is_floating_point(d)) {
    switch (op) {
      case ExprOp::Eq: return b_.CreateFCmpOEQ(x, y);
      case ExprOp::Ne: return b_.CreateFCmpUNE(x, y);
      case ExprOp::Lt: return b_.CreateFCmpOLT(x, y);
      case ExprOp::Le: return b_.CreateFCmpOLE(x, y);
      case ExprOp::Gt: return b_.CreateFCmpOGT(x, y);
      default: return b_.CreateFCmpOGE(x, y);
    }
  }
  const bool u = is_unsigned(d);
  switch (op) {
    case ExprOp::Eq: return b_.CreateICmpEQ(x, y);
    case ExprOp::Ne: return b_.CreateICmpNE(x, y);
    case ExprOp::Lt: return u ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y);
    case ExprOp::Le: return u ? b_.CreateICmpULE(x, y) : b_.CreateICmpSLE(x, y);
    case ExprOp::Gt: return u ? b_.CreateICmpUGT(x, y) : b_.CreateICmpSGT(x, y);
    default: return u ? b_.CreateICmpUGE(x, y) : b_.CreateICmpSGE(x, y);
  }
}

llvm::Value* Lowering::intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
  return b_.CreateUnaryIntrinsic(id, x);
}

std::vector<llvm::Value*> Lowering::evaluate(const std::function<llvm::Value*(int32_t)>& load,
                                             const std::vector<llvm::Value*>* known,
                                             const std::vector<bool>* needed) {
  std::vector<llvm::Value*> v(k_.exprs.size(), nullptr);
  for (size_t i = 0; i < k_.exprs.size(); ++i) {
    const Expr& e = k_.exprs[i];
    if (known != nullptr && (*known)[i] != nullptr) {
      v[i] = (*known)[i];
      continue;
    }
    if (needed != nullptr && !(*needed)[i]) continue;
    llvm::Value* a = e.a >= 0 ? v[static_cast<size_t>(e.a)] : nullptr;
    llvm::Value* bb = e.b >= 0 ? v[static_cast<size_t>(e.b)] : nullptr;
    llvm::Value* c = e.c >= 0 ? v[static_cast<size_t>(e.c)] : nullptr;
    const DType ad = e.a >= 0 ? k_.exprs[static_cast<size_t>(e.a)].dtype : e.dtype;
    const bool fp = is_floating_point(ad);
    llvm::Type* rt = reg_scalar(e.dtype);
    switch (e.op) {
      case ExprOp::Load: v[i] = load(e.input); break;
      case ExprOp::Constant:
        v[i] = b_.CreateVectorSplat(w_, fp ? static_cast<llvm::Value*>(llvm::ConstantFP::get(rt, e.fvalue))
                                           : llvm::ConstantInt::get(rt, static_cast<uint64_t>(e.ivalue), true));
        break;
      case ExprOp::Cast: v[i] = cast(a, ad, e.dtype); break;
      case ExprOp::Neg: v[i] = fp ? b_.CreateFNeg(a) : b_.CreateNeg(a); break;
      case ExprOp::Abs:
        v[i] = fp ? intrinsic(llvm::Intrinsic::fabs, a)
                  : b_.CreateSelect(b_.CreateICmpSLT(a, llvm::Constant::getNullValue(a->getType())), b_.CreateNeg(a), a);
        break;
      case ExprOp::Not: v[i] = b_.CreateNot(a); break;
      case ExprOp::Sqrt: v[i] = intrinsic(llvm::Intrinsic::sqrt, a); break;
      case ExprOp::Floor: v[i] = intrinsic(llvm::Intrinsic::floor, a); break;
      case ExprOp::Ceil: v[i] = intrinsic(llvm::Intrinsic::ceil, a); break;
      case ExprOp::Trunc: v[i] = intrinsic(llvm::Intrinsic::trunc, a); break;
      case ExprOp::Round: v[i] = intrinsic(llvm::Intrinsic::roundeven, a); break;
      case ExprOp::Fmod: v[i] = b_.CreateFRem(a, bb); break;
      case ExprOp::Copysign: v[i] = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a, bb); break;
      case ExprOp::Shl:
      case ExprOp::Shr: {
        const unsigned width = a->getType()->getScalarSizeInBits();
        llvm::Value* amount = b_.CreateAnd(bb, llvm::ConstantInt::get(bb->getType(), width - 1));
        v[i] = e.op == ExprOp::Shl ? b_.CreateShl(a, amount)
               : is_unsigned(ad)   ? b_.CreateLShr(a, amount)
                                   : b_.CreateAShr(a, amount);
        break;
      }
      case ExprOp::Add: v[i] = fp ? b_.CreateFAdd(a, bb) : b_.CreateAdd(a, bb); break;
      case ExprOp::Sub: v[i] = fp ? b_.CreateFSub(a, bb) : b_.CreateSub(a, bb); break;
      case ExprOp::Mul: v[i] = fp ? b_.CreateFMul(a, bb) : b_.CreateMul(a, bb); break;
      case ExprOp::Div: v[i] = b_.CreateFDiv(a, bb); break;
      case ExprOp::Maximum:
      case ExprOp::Minimum: {
        llvm::Value* pick = b_.CreateSelect(compare(e.op == ExprOp::Maximum ? ExprOp::Gt : ExprOp::Lt, ad, a, bb), a, bb);
        v[i] = fp ? b_.CreateSelect(b_.CreateFCmpUNE(a, a), a, pick) : pick;
        break;
      }
      case ExprOp::And: v[i] = b_.CreateAnd(a, bb); break;
      case ExprOp::Or: v[i] = b_.CreateOr(a, bb); break;
      case ExprOp::Xor: v[i] = b_.CreateXor(a, bb); break;
      case ExprOp::Eq:
      case ExprOp::Ne:
      case ExprOp::Lt:
      case ExprOp::Le:
      case ExprOp::Gt:
      case ExprOp::Ge: v[i] = compare(e.op, ad, a, bb); break;
      case ExprOp::Select: v[i] = b_.CreateSelect(a, bb, c); break;
      case ExprOp::Fma:
        v[i] = w_ >= 8 && !(split_whole_vector_fmas_ && e.ivalue != 0) ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, bb, c})
                       : b_.CreateFAdd(b_.CreateFMul(a, bb), c);
        break;
      case ExprOp::ReduceSum:
      case ExprOp::ReduceMean:
      case ExprOp::ReduceMax:
      case ExprOp::ReduceMin: KILN_FAIL(Runtime, "codegen: ", expr_op_name(e.op), " e", i, " evaluated before its pass");
      default:  // the vector-math calls: is_vector_math (KernelIR.h) is their one list
        KILN_CHECK(is_vector_math(e.op), "codegen: no LLVM lowering of ", expr_op_name(e.op));
        v[i] = bb != nullptr ? call_math(e.op, e.dtype, a, bb) : call_math(e.op, e.dtype, a);
        break;
    }
  }
  return v;
}

llvm::Value* Lowering::stride(size_t input, int dim) {
  llvm::Value* p = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), strides_, input * static_cast<size_t>(k_.rank) + static_cast<size_t>(dim));
  return b_.CreateLoad(b_.getInt64Ty(), p);
}

llvm::Value* Lowering::size(int dim) {
  return b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), sizes_, static_cast<size_t>(dim)));
}

/// for (i = lo; i + w <= hi; i += w) step(i, null); if (i < hi) step(i, lanes < hi - i); with an unroll
/// factor u > 1, first for (; i + u*w <= hi; i += u*w) step(i + t*w, null) for t < u.
void Lowering::emit_range(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value*, llvm::Value*)>& step) {
  // One loop of `per` vectors an iteration from `from`; returns i's exit value.
  const auto loop = [&](llvm::Value* from, int per, const char* name) -> llvm::Value* {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, std::string(name) + ".header", f_);
    auto* body = llvm::BasicBlock::Create(ctx_, std::string(name) + ".body", f_);
    auto* exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".exit", f_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(from, pre);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(static_cast<int64_t>(w_) * per));
    b_.CreateCondBr(b_.CreateICmpSLE(next, hi), body, exit);
    b_.SetInsertPoint(body);
    for (int t = 0; t < per; ++t) {
      step(t == 0 ? static_cast<llvm::Value*>(i) : b_.CreateAdd(i, b_.getInt64(static_cast<int64_t>(w_) * t)), nullptr);
    }
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    return i;
  };
  llvm::Value* i = lo;
  if (unroll_ > 1) i = loop(i, unroll_, "unrolled");
  i = loop(i, 1, "vec");
  auto* tail = llvm::BasicBlock::Create(ctx_, "tail", f_);
  auto* done = llvm::BasicBlock::Create(ctx_, "done", f_);
  b_.CreateCondBr(b_.CreateICmpSLT(i, hi), tail, done);
  b_.SetInsertPoint(tail);
  llvm::Value* mask = b_.CreateICmpSLT(b_.CreateAdd(splat64(i), lane_ids()), splat64(hi));
  step(i, mask);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void Lowering::store_outputs(const std::vector<llvm::Value*>& v, llvm::Value* offset, llvm::Value* mask) {
  for (size_t o = 0; o < k_.outputs.size(); ++o) {
    const DType d = k_.output_dtypes[o];
    const Expr& e = k_.exprs[static_cast<size_t>(k_.outputs[o])];
    llvm::Value* r = to_memory(d, cast(v[static_cast<size_t>(k_.outputs[o])], e.dtype, d));
    llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], offset);
    if (mask) b_.CreateMaskedStore(r, p, align(d), mask);
    else b_.CreateAlignedStore(r, p, align(d));
  }
}

void Lowering::step_contiguous(llvm::Value* i, llvm::Value* mask) {
  const auto v = evaluate([&](int32_t in) -> llvm::Value* {
    const size_t k = static_cast<size_t>(in);
    if (scalar_[k]) return scalar_[k];
    const DType d = k_.input_dtypes[k];
    llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[k], i);
    llvm::Type* vt = vec(mem_scalar(d));
    llvm::Value* raw = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vt, p, align(d), mask, llvm::Constant::getNullValue(vt)))
                            : static_cast<llvm::Value*>(b_.CreateAlignedLoad(vt, p, align(d)));
    return to_register(d, raw);
  });
  store_outputs(v, i, mask);
}

/// Elements j..j+w of a row: input k at base[k] + (j + lane) * inner[k]; outputs at out + lane.
void Lowering::step_strided(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& inner, llvm::Value* j,
                  llvm::Value* out, llvm::Value* mask, const std::vector<llvm::Value*>* splats) {
  llvm::Value* full = llvm::ConstantInt::getTrue(vec(b_.getInt1Ty()));
  const auto v = evaluate([&](int32_t in) -> llvm::Value* {
    const size_t k = static_cast<size_t>(in);
    const DType d = k_.input_dtypes[k];
    const int hint = splats != nullptr && k < k_.inner_stride_hint.size() ? k_.inner_stride_hint[k] : -1;
    if (hint == 0) return (*splats)[k];
    if (hint == 1) {
      llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[k], b_.CreateAdd(base[k], j));
      llvm::Type* vt = vec(mem_scalar(d));
      return to_register(d, mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vt, p, align(d), mask,
                                                                                 llvm::Constant::getNullValue(vt)))
                                 : static_cast<llvm::Value*>(b_.CreateAlignedLoad(vt, p, align(d))));
    }
    llvm::Value* idx = b_.CreateAdd(splat64(base[k]), b_.CreateMul(b_.CreateAdd(splat64(j), lane_ids()), splat64(inner[k])));
    llvm::Value* ptrs = b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[k], idx);
    llvm::Type* vt = vec(mem_scalar(d));
    return to_register(d, b_.CreateMaskedGather(vt, ptrs, align(d), mask ? mask : full, llvm::Constant::getNullValue(vt)));
  });
  store_outputs(v, out, mask);
}

// Note [Strided kernels' inner loops]
// -----------------------------------
// A strided pointwise kernel gets each input's strides at run time, so its
// general inner loop gathers every input lane by lane. Most strided kernels
// are bias adds and broadcasts (a Linear's bias over [rows, features], a
// per-row value over its row), where each input's innermost stride is 1 or 0:
// lower_fusion_group records that stride from the input's recorded layout
// (Kernel::inner_stride_hint) and the loop over a row is emitted twice: when
// every hinted input's inner stride is its hint (checked once per row), a
// loop with plain vector loads for stride 1 and a splat, loaded once per row,
// for stride 0; otherwise the gathers. Both compute the same values; only
// the loads differ.
void Lowering::emit_strided_range(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& inner,
                                  llvm::Value* lo, llvm::Value* hi, llvm::Value* out_start) {
  const size_t ni = base.size();
  const auto gathers = [&](const std::vector<llvm::Value*>* splats) {
    emit_range(lo, hi, [&](llvm::Value* j, llvm::Value* mask) {
      step_strided(base, inner, j, b_.CreateAdd(out_start, j), mask, splats);
    });
  };
  llvm::Value* hinted = nullptr;
  for (size_t k = 0; k < ni && k < k_.inner_stride_hint.size(); ++k) {
    if (k_.inner_stride_hint[k] < 0) continue;
    llvm::Value* c = b_.CreateICmpEQ(inner[k], b_.getInt64(k_.inner_stride_hint[k]));
    hinted = hinted ? b_.CreateAnd(hinted, c) : c;
  }
  // Gathers are not unrolled: a schedule's unroll factor serves the vector loads (Note [Kernel schedules]).
  const int unroll = unroll_;
  if (hinted == nullptr) {
    unroll_ = 1;
    gathers(nullptr);
    unroll_ = unroll;
    return;
  }
  auto* fast = llvm::BasicBlock::Create(ctx_, "hinted", f_);
  auto* slow = llvm::BasicBlock::Create(ctx_, "gathered", f_);
  auto* join = llvm::BasicBlock::Create(ctx_, "strided.join", f_);
  b_.CreateCondBr(hinted, fast, slow);
  b_.SetInsertPoint(fast);
  std::vector<llvm::Value*> splats(ni, nullptr);
  for (size_t k = 0; k < ni && k < k_.inner_stride_hint.size(); ++k) {
    if (k_.inner_stride_hint[k] != 0) continue;
    const DType d = k_.input_dtypes[k];
    llvm::Value* s = b_.CreateLoad(mem_scalar(d), b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[k], base[k]));
    splats[k] = to_register(d, b_.CreateVectorSplat(w_, s));
  }
  gathers(&splats);
  b_.CreateBr(join);
  b_.SetInsertPoint(slow);
  unroll_ = 1;
  gathers(nullptr);
  unroll_ = unroll;
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

void Lowering::emit_rows(llvm::Value* begin, llvm::Value* end) {
  const size_t ni = k_.input_dtypes.size();
  const int r = k_.rank;
  llvm::Value* inner_size = size(r - 1);
  std::vector<llvm::Value*> inner(ni);
  for (size_t k = 0; k < ni; ++k) inner[k] = stride(k, r - 1);
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
  std::vector<llvm::Value*> base(ni, b_.getInt64(0));
  llvm::Value* rest = row;
  for (int d = r - 2; d >= 0; --d) {
    llvm::Value* sz = size(d);
    llvm::Value* idx = d == 0 ? rest : b_.CreateSRem(rest, sz);
    if (d != 0) rest = b_.CreateSDiv(rest, sz);
    for (size_t k = 0; k < ni; ++k) base[k] = b_.CreateAdd(base[k], b_.CreateMul(idx, stride(k, d)));
  }
  llvm::Value* row_start = b_.CreateMul(row, inner_size);
  emit_strided_range(base, inner, b_.getInt64(0), inner_size, row_start);
  row->addIncoming(b_.CreateAdd(row, b_.getInt64(1)), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

}  // namespace kiln::codegen
