// Kernel IR -> LLVM IR (explicit host-width vectors, masked tails) -> ORC LLJIT,
// through the kernel cache (KernelCache.h).
#include "codegen/llvm/KernelJit.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm/KernelCache.h"
#include "codegen/llvm/VectorMath.h"
#include "eager/core/Error.h"
#include "eager/core/ProfilerEvents.h"

namespace kiln::codegen {

namespace {

std::string kernel_name(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "kernel_%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

bool is_reduced(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
bool is_unsigned(DType t) { return t == DType::UInt8 || t == DType::Bool; }

/// Lowers one Kernel into a function of the module (Note [The kernel calling convention]).
class Lowering {
 public:
  Lowering(llvm::Module& m, const Kernel& k, int lanes, const std::string& cpu, const std::string& features)
      : ctx_(m.getContext()), m_(m), b_(ctx_), k_(k), w_(lanes) {
    auto* i64 = b_.getInt64Ty();
    auto* ptr = b_.getPtrTy();
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr, i64, i64}, false);
    f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, k.name, m);
    f_->addFnAttr(llvm::Attribute::NoUnwind);
    f_->addFnAttr("target-cpu", cpu);
    f_->addFnAttr("target-features", features);
    if (w_ == 16) {
      f_->addFnAttr("min-legal-vector-width", "512");
      f_->addFnAttr("prefer-vector-width", "512");
    }
  }

  void emit() {
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
    if (k_.contiguous) {
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
      emit_range(begin, end, [&](llvm::Value* i, llvm::Value* mask) { step_strided(base, inner, i, i, mask); });
    } else {
      emit_rows(begin, end);
    }
    b_.CreateRetVoid();
  }

 private:
  // --- types ---------------------------------------------------------------------------------
  llvm::Type* reg_scalar(DType d) {
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
  llvm::Type* mem_scalar(DType d) {
    if (d == DType::Bool) return b_.getInt8Ty();
    if (d == DType::Float16) return b_.getHalfTy();
    if (d == DType::BFloat16) return b_.getInt16Ty();
    return reg_scalar(d);
  }
  llvm::Type* vec(llvm::Type* t) { return llvm::FixedVectorType::get(t, static_cast<unsigned>(w_)); }
  llvm::Align align(DType d) { return llvm::Align(static_cast<uint64_t>(itemsize(d))); }
  llvm::Value* splat64(llvm::Value* x) { return b_.CreateVectorSplat(w_, x); }
  llvm::Value* lane_ids() {
    std::vector<llvm::Constant*> ids;
    for (int l = 0; l < w_; ++l) ids.push_back(b_.getInt64(l));
    return llvm::ConstantVector::get(ids);
  }

  // --- memory <-> registers ---------------------------------------------------------------------
  llvm::Value* to_register(DType d, llvm::Value* v) {
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
  llvm::Value* to_memory(DType d, llvm::Value* v) {
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
  llvm::Value* round_reduced(DType d, llvm::Value* v) {
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

  // --- expressions --------------------------------------------------------------------------------
  llvm::Value* cast(llvm::Value* v, DType from, DType to) {
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

  llvm::Value* call_math(ExprOp op, DType d, llvm::Value* a, llvm::Value* b = nullptr) {
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

  llvm::Value* compare(ExprOp op, DType d, llvm::Value* x, llvm::Value* y) {
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

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
    return b_.CreateUnaryIntrinsic(id, x);
  }

  std::vector<llvm::Value*> evaluate(const std::function<llvm::Value*(int32_t)>& load) {
    std::vector<llvm::Value*> v(k_.exprs.size(), nullptr);
    for (size_t i = 0; i < k_.exprs.size(); ++i) {
      const Expr& e = k_.exprs[i];
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
        case ExprOp::Exp:
        case ExprOp::Expm1:
        case ExprOp::Log:
        case ExprOp::Log2:
        case ExprOp::Log10:
        case ExprOp::Log1p:
        case ExprOp::Sin:
        case ExprOp::Cos:
        case ExprOp::Tan:
        case ExprOp::Tanh:
        case ExprOp::Erf:
        case ExprOp::Erfc:
        case ExprOp::Exp2:
        case ExprOp::Asin:
        case ExprOp::Acos:
        case ExprOp::Atan:
        case ExprOp::Sinh:
        case ExprOp::Cosh:
        case ExprOp::Asinh:
        case ExprOp::Acosh:
        case ExprOp::Atanh: v[i] = call_math(e.op, e.dtype, a); break;
        case ExprOp::Floor: v[i] = intrinsic(llvm::Intrinsic::floor, a); break;
        case ExprOp::Ceil: v[i] = intrinsic(llvm::Intrinsic::ceil, a); break;
        case ExprOp::Trunc: v[i] = intrinsic(llvm::Intrinsic::trunc, a); break;
        case ExprOp::Round: v[i] = intrinsic(llvm::Intrinsic::roundeven, a); break;
        case ExprOp::Pow:
        case ExprOp::Atan2:
        case ExprOp::Hypot: v[i] = call_math(e.op, e.dtype, a, bb); break;
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
          v[i] = w_ >= 8 ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, bb, c})
                         : b_.CreateFAdd(b_.CreateFMul(a, bb), c);
          break;
      }
    }
    return v;
  }

  // --- loops -----------------------------------------------------------------------------------------
  llvm::Value* stride(size_t input, int dim) {
    llvm::Value* p = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), strides_, input * static_cast<size_t>(k_.rank) + static_cast<size_t>(dim));
    return b_.CreateLoad(b_.getInt64Ty(), p);
  }
  llvm::Value* size(int dim) {
    return b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), sizes_, static_cast<size_t>(dim)));
  }

  /// for (i = lo; i + w <= hi; i += w) step(i, null); if (i < hi) step(i, lanes < hi - i).
  void emit_range(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value*, llvm::Value*)>& step) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "vec.header", f_);
    auto* body = llvm::BasicBlock::Create(ctx_, "vec.body", f_);
    auto* tail_check = llvm::BasicBlock::Create(ctx_, "tail.check", f_);
    auto* tail = llvm::BasicBlock::Create(ctx_, "tail", f_);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(lo, pre);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(w_));
    b_.CreateCondBr(b_.CreateICmpSLE(next, hi), body, tail_check);
    b_.SetInsertPoint(body);
    step(i, nullptr);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(tail_check);
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), tail, done);
    b_.SetInsertPoint(tail);
    llvm::Value* mask = b_.CreateICmpSLT(b_.CreateAdd(splat64(i), lane_ids()), splat64(hi));
    step(i, mask);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  void store_outputs(const std::vector<llvm::Value*>& v, llvm::Value* offset, llvm::Value* mask) {
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      const DType d = k_.output_dtypes[o];
      const Expr& e = k_.exprs[static_cast<size_t>(k_.outputs[o])];
      llvm::Value* r = to_memory(d, cast(v[static_cast<size_t>(k_.outputs[o])], e.dtype, d));
      llvm::Value* p = b_.CreateInBoundsGEP(mem_scalar(d), out_ptr_[o], offset);
      if (mask) b_.CreateMaskedStore(r, p, align(d), mask);
      else b_.CreateAlignedStore(r, p, align(d));
    }
  }

  void step_contiguous(llvm::Value* i, llvm::Value* mask) {
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
  void step_strided(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& inner, llvm::Value* j,
                    llvm::Value* out, llvm::Value* mask) {
    llvm::Value* full = llvm::ConstantInt::getTrue(vec(b_.getInt1Ty()));
    const auto v = evaluate([&](int32_t in) -> llvm::Value* {
      const size_t k = static_cast<size_t>(in);
      const DType d = k_.input_dtypes[k];
      llvm::Value* idx = b_.CreateAdd(splat64(base[k]), b_.CreateMul(b_.CreateAdd(splat64(j), lane_ids()), splat64(inner[k])));
      llvm::Value* ptrs = b_.CreateInBoundsGEP(mem_scalar(d), in_ptr_[k], idx);
      llvm::Type* vt = vec(mem_scalar(d));
      return to_register(d, b_.CreateMaskedGather(vt, ptrs, align(d), mask ? mask : full, llvm::Constant::getNullValue(vt)));
    });
    store_outputs(v, out, mask);
  }

  /// Rows [begin, end): row r's index over dims 0..rank-2 gives each input's base offset.
  void emit_rows(llvm::Value* begin, llvm::Value* end) {
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
    emit_range(b_.getInt64(0), inner_size, [&](llvm::Value* j, llvm::Value* mask) {
      step_strided(base, inner, j, b_.CreateAdd(row_start, j), mask);
    });
    row->addIncoming(b_.CreateAdd(row, b_.getInt64(1)), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  const Kernel& k_;
  int w_;
  llvm::Function* f_ = nullptr;
  llvm::Value* sizes_ = nullptr;
  llvm::Value* strides_ = nullptr;
  std::vector<llvm::Value*> in_ptr_, out_ptr_, scalar_;
};

/// The process's JIT: one LLJIT for the host, the math symbols defined, and the
/// kernel cache (Note [The kernel cache]): `cache` in memory, `disk` on disk.
struct Jit {
  std::mutex mu;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string cpu, features;
  std::unordered_map<uint64_t, KernelFn> cache;
  std::unique_ptr<KernelDiskCache> disk;
  llvm::orc::JITDylib* dylib = nullptr;  // where kernels are added (a fresh one after forget_compiled_kernels)
  int generation = 0;

  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    KILN_CHECK(static_cast<bool>(jtmb), "codegen: cannot target the host: ", llvm::toString(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    cpu = jtmb->getCPU();
    features = jtmb->getFeatures().getString();
    auto made_tm = jtmb->createTargetMachine();
    KILN_CHECK(static_cast<bool>(made_tm), "codegen: ", llvm::toString(made_tm.takeError()));
    tm = std::move(*made_tm);
    auto made = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    KILN_CHECK(static_cast<bool>(made), "codegen: cannot start the JIT: ", llvm::toString(made.takeError()));
    jit = std::move(*made);
    llvm::orc::SymbolMap symbols;
    for (const auto& [name, address] : vector_math_symbols()) {
      symbols[jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
          llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    }
    llvm::cantFail(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))));
    dylib = &jit->getMainJITDylib();
    disk = std::make_unique<KernelDiskCache>(kernel_cache_environment(cpu, features, host_vector_lanes()));
  }

  /// One kernel lowered on its own module, optimised and compiled: its object file.
  std::string compile_to_object(const Kernel& k, std::string* llvm_ir) {
    llvm::LLVMContext ctx;
    llvm::Module module("kiln_" + k.name, ctx);
    module.setDataLayout(tm->createDataLayout());
    module.setTargetTriple(tm->getTargetTriple().str());
    Lowering(module, k, host_vector_lanes(), cpu, features).emit();
    std::string err;
    llvm::raw_string_ostream es(err);
    KILN_CHECK(!llvm::verifyModule(module, &es), "codegen: invalid LLVM IR: ", es.str());
    optimize(module);
    if (llvm_ir != nullptr) {
      llvm::raw_string_ostream os(*llvm_ir);
      module.print(os, nullptr);
    }
    auto object = llvm::orc::SimpleCompiler(*tm)(module);
    KILN_CHECK(static_cast<bool>(object), "codegen: ", llvm::toString(object.takeError()));
    return (*object)->getBuffer().str();
  }

  /// The kernel's entry point: its object file from the disk cache, or compiled (and
  /// written there), added to the JIT. Not in `cache` yet.
  KernelFn load_or_compile(const Kernel& k, std::string* llvm_ir) {
    const uint64_t h = k.hash();
    std::optional<std::string> object = disk->load(h);
    if (object) {
      if (llvm_ir != nullptr) *llvm_ir += "; " + k.name + ": loaded from the disk cache\n";
      if (profiler::is_active()) [[unlikely]] profiler::record_instant("kiln::kernel_disk_cache_hit", "jit");
    } else {
      count_miss();
      profiler::RecordScope compiling("kiln::llvm_compile", "jit");  // Note [What the profiler records]
      if (compiling.recording()) [[unlikely]] compiling.add_arg("kernel", k.name);
      object = compile_to_object(k, llvm_ir);
      disk->store(h, *object);
    }
    llvm::cantFail(jit->addObjectFile(*dylib, llvm::MemoryBuffer::getMemBufferCopy(*object, k.name)));
    auto sym = jit->lookup(*dylib, k.name);
    KILN_CHECK(static_cast<bool>(sym), "codegen: ", llvm::toString(sym.takeError()));
    return sym->toPtr<KernelFn>();
  }

  void optimize(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
  }
};

Jit& the_jit() {
  static Jit* jit = new Jit();  // never destroyed: kernels may run during interpreter teardown
  return *jit;
}

}  // namespace

CompiledKernels compile_kernels(std::vector<Kernel>& kernels, bool keep_llvm_ir) {
  profiler::RecordScope range("kiln::jit_compile", "jit");  // Note [What the profiler records]
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  CompiledKernels result;
  int64_t memory_hits = 0;
  for (Kernel& k : kernels) {
    const uint64_t h = k.hash();
    k.name = kernel_name(h);
    auto it = j.cache.find(h);
    if (it != j.cache.end()) {
      count_memory_hit();
      ++memory_hits;
      if (range.recording()) [[unlikely]] profiler::record_instant("kiln::kernel_cache_hit", "jit");
    } else {
      it = j.cache.emplace(h, j.load_or_compile(k, keep_llvm_ir ? &result.llvm_ir : nullptr)).first;
    }
    result.functions.push_back(it->second);
  }
  if (range.recording()) [[unlikely]] {
    range.add_arg("kernels", static_cast<int64_t>(kernels.size()));
    range.add_arg("cache hits", memory_hits);
  }
  return result;
}

void forget_compiled_kernels() {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  j.cache.clear();
  auto made = j.jit->createJITDylib("kiln_kernels_" + std::to_string(++j.generation));
  KILN_CHECK(static_cast<bool>(made), "codegen: ", llvm::toString(made.takeError()));
  made->addToLinkOrder(j.jit->getMainJITDylib());
  j.dylib = &*made;
}

int64_t compiled_kernel_count() {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  return static_cast<int64_t>(j.cache.size());
}

}  // namespace kiln::codegen
