// Kernel IR -> LLVM IR for one kernel: explicit host-width vectors, masked
// tails (Note [The kernel calling convention], KernelJit.h). Pointwise loops
// here; row kernels' passes in RowLowering.cpp (Note [Row reduction kernels]).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "codegen/KernelIR.h"
#include "codegen/KernelSchedule.h"

namespace kiln::codegen {

struct RowSchedule;

/// Lowers one Kernel into a function `k.name` of the module, `lanes` the host's vector width; `schedule`'s
/// vector width and unroll factor apply to pointwise kernels (Note [Kernel schedules], KernelSchedule.h).
class Lowering {
 public:
  Lowering(llvm::Module& m, const Kernel& k, int lanes, const std::string& cpu, const std::string& features,
           const KernelSchedule& schedule = {});
  void emit();

 private:
  // --- types ---------------------------------------------------------------------------------
  llvm::Type* reg_scalar(DType d);
  llvm::Type* mem_scalar(DType d);
  llvm::Type* vec(llvm::Type* t) { return llvm::FixedVectorType::get(t, static_cast<unsigned>(w_)); }
  llvm::Align align(DType d) { return llvm::Align(static_cast<uint64_t>(itemsize(d))); }
  llvm::Value* splat64(llvm::Value* x) { return b_.CreateVectorSplat(w_, x); }
  llvm::Value* lane_ids();
  // --- memory <-> registers ---------------------------------------------------------------------
  llvm::Value* to_register(DType d, llvm::Value* v);
  llvm::Value* to_memory(DType d, llvm::Value* v);
  /// A float vector rounded to float16/bfloat16 and back (round to nearest even; eager's Half/BFloat16).
  llvm::Value* round_reduced(DType d, llvm::Value* v);
  // --- expressions --------------------------------------------------------------------------------
  llvm::Value* cast(llvm::Value* v, DType from, DType to);
  llvm::Value* call_math(ExprOp op, DType d, llvm::Value* a, llvm::Value* b = nullptr);
  llvm::Value* compare(ExprOp op, DType d, llvm::Value* x, llvm::Value* y);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x);
  /// Every expr's vector value, in order; `load(input)` gives a Load's. Row kernels pass `known`
  /// (values already computed: uniform ones, reductions' results; nullptr elsewhere) and `needed`
  /// (which exprs to compute this pass); a Reduce* expr must be known.
  std::vector<llvm::Value*> evaluate(const std::function<llvm::Value*(int32_t)>& load,
                                     const std::vector<llvm::Value*>* known = nullptr,
                                     const std::vector<bool>* needed = nullptr);
  // --- loops -----------------------------------------------------------------------------------------
  llvm::Value* stride(size_t input, int dim);
  llvm::Value* size(int dim);
  /// for (i = lo; i + w <= hi; i += w) step(i, null); if (i < hi) step(i, lanes < hi - i); with an
  /// unroll factor u > 1, first for (; i + u*w <= hi; i += u*w) step(i + t*w, null) for t < u.
  void emit_range(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value*, llvm::Value*)>& step);
  void store_outputs(const std::vector<llvm::Value*>& v, llvm::Value* offset, llvm::Value* mask);
  void step_contiguous(llvm::Value* i, llvm::Value* mask);
  /// Elements j..j+w of a row: input k at base[k] + (j + lane) * inner[k]; outputs at out + lane. With
  /// `splats` (the fast loop of Note [Strided kernels' inner loops]): an input hinted 1 is a vector load
  /// at base[k] + j, one hinted 0 is splats[k]; the rest are gathers.
  void step_strided(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& inner, llvm::Value* j,
                    llvm::Value* out, llvm::Value* mask, const std::vector<llvm::Value*>* splats = nullptr);
  /// Elements [lo, hi) of a row (outputs at out_start + j): a fast loop when every hinted input's inner
  /// stride is its hint, else the gathers (Note [Strided kernels' inner loops]).
  void emit_strided_range(const std::vector<llvm::Value*>& base, const std::vector<llvm::Value*>& inner,
                          llvm::Value* lo, llvm::Value* hi, llvm::Value* out_start);
  /// Rows [begin, end): row r's index over dims 0..rank-2 gives each input's base offset.
  void emit_rows(llvm::Value* begin, llvm::Value* end);
  // --- row kernels (RowLowering.cpp, Note [Row reduction kernels]) -----------------------------------
  void emit_row_kernel(llvm::Value* begin, llvm::Value* end);
  /// A column kernel (Kernel::columns) over the columns [begin, end) (Note [Column reduction kernels]).
  void emit_column_kernel(llvm::Value* begin, llvm::Value* end);
  /// A row's operands of each reduction (its `a`), then each's second factor (`b`, or nullptr).
  using RowOperands = std::function<std::vector<llvm::Value*>(llvm::Value*, llvm::Value*, llvm::Value*)>;
  /// A column kernel's folds in eager's norm_backward_params order (Kernel::norm_chunk_rows).
  void emit_norm_column_folds(llvm::Value* begin, llvm::Value* end, const std::vector<int32_t>& reduces,
                              const RowOperands& operands_at);
  /// Input `input` at row `row` (which starts at element `row_start`), columns j..j+w.
  llvm::Value* load_row_operand(size_t input, llvm::Value* row, llvm::Value* row_start, llvm::Value* j,
                                llvm::Value* mask);
  /// One reduction pass over the row: the values of `reduces` (each's operand folded over the cols).
  std::vector<llvm::Value*> emit_reduction_pass(const std::vector<int32_t>& reduces, std::vector<llvm::Value*>& known,
                                                llvm::Value* row, llvm::Value* row_start, llvm::Value* cols);
  /// The folds of `reduces` (all of eager vector width `lanes`) in eager's order (Note [Row reductions in
  /// eager's order], RowLowering.cpp).
  std::vector<llvm::Value*> emit_eager_order_folds(const std::vector<int32_t>& reduces, int64_t lanes,
                                                   std::vector<llvm::Value*>& known, llvm::Value* row,
                                                   llvm::Value* row_start, llvm::Value* cols);
  /// The folds of `reduces` in the order of eager's norm kernels (Kernel::norm_rows; Note [Row folds in
  /// eager's norm order], RowLowering.cpp).
  std::vector<llvm::Value*> emit_norm_order_folds(const std::vector<int32_t>& reduces, int64_t lanes,
                                                  std::vector<llvm::Value*>& known, llvm::Value* row,
                                                  llvm::Value* row_start, llvm::Value* cols);
  /// Loops j over [start, hi) in steps of `step` elements carrying `accs`; returns j's exit value.
  llvm::Value* accumulating_loop(llvm::Value* start, llvm::Value* hi, int64_t step, std::vector<llvm::Value*>& accs,
                                 const std::function<void(llvm::Value*, std::vector<llvm::Value*>&)>& body);
  /// The values of the exprs `targets` needs in pass `pass` (1.., passes + 1 the stores) at columns
  /// j..j+w: scratch rows of earlier passes read, this pass's spilled values written (RowSchedule.h).
  std::vector<llvm::Value*> evaluate_row_pass(int pass, const std::vector<int32_t>& targets,
                                              const std::vector<llvm::Value*>& known, llvm::Value* row,
                                              llvm::Value* row_start, llvm::Value* cols, llvm::Value* j,
                                              llvm::Value* mask);
  /// Scratch row `slot` at column j (a row kernel's `strides` argument is its thread's scratch).
  llvm::Value* scratch_at(size_t slot, llvm::Value* cols, llvm::Value* j);
  /// Scratch row `slot` of `row_length` 8-byte cells, as elements of `t`, at column j (column kernels'
  /// accumulator and total rows).
  llvm::Value* scratch_row_at(size_t slot, llvm::Type* t, llvm::Value* row_length, llvm::Value* j);
  /// A vector of `t` loaded from p (unaligned beyond t's own alignment; masked lanes read as zero).
  llvm::Value* load_lanes(llvm::Type* t, llvm::Value* p, llvm::Value* mask);
  /// x stored at p (masked lanes untouched).
  void store_lanes(llvm::Value* x, llvm::Value* p, llvm::Value* mask);
  /// Vectors of one width (a power-of-two count of them) joined, in order, into one vector.
  llvm::Value* concat_vectors(std::vector<llvm::Value*> parts);
  /// for (start = 0; start < rows; start = end) { end = min(start + block_rows, rows); body(start, end); }
  /// (blocks named `name`.header/.body/.exit in the IR).
  void emit_row_blocks(llvm::Value* rows, int64_t block_rows, const std::string& name,
                       const std::function<void(llvm::Value*, llvm::Value*)>& body);
  llvm::Value* reduction_identity(ExprOp op, DType d);

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  const Kernel& k_;
  int w_;
  int unroll_ = 1;  // vectors per iteration of emit_range's main loop
  llvm::Function* f_ = nullptr;
  llvm::Value* sizes_ = nullptr;
  llvm::Value* strides_ = nullptr;
  std::vector<llvm::Value*> in_ptr_, out_ptr_, scalar_;
  const struct RowSchedule* row_ = nullptr;  // while a row kernel is emitted
  // While a norm row kernel's partial last vector is stored: fma_in_whole_vectors exprs round the
  // product, then add (Note [Row folds in eager's norm order], RowLowering.cpp).
  bool split_whole_vector_fmas_ = false;
};

}  // namespace kiln::codegen
