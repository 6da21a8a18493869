// The kernel IR: one fused pointwise kernel as a scalar expression DAG over
// its inputs, evaluated at every point of an iteration space. codegen/llvm
// (and later codegen/cuda) lower it; PointwiseMath.h builds it from graph ops.
// See Note [The pointwise kernel IR].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eager/core/DType.h"

namespace kiln::codegen {

// Note [The pointwise kernel IR]
// ------------------------------
// A Kernel reads `inputs` (each a pointer and one stride per dimension, in
// elements; a broadcast dimension has stride 0) and writes `outputs`
// (contiguous, of the iteration shape). The iteration space has `rank`
// dimensions whose sizes are kernel arguments, so one compiled kernel serves
// every shape of that rank. rank 1 with `contiguous` set is the flat fast
// path: every input is either dense (stride 1) or a single broadcast element
// (stride 0), known when the kernel is built.
//
// `exprs` is a DAG in topological order (an operand's index is below its
// user's); each Expr has one dtype, the dtype it computes in. Loads read an
// input's element in the input's dtype; Cast converts (float -> int truncates
// toward zero, as C++; float16/bfloat16 round to nearest even); arithmetic
// wraps on integers; Div is floating division only; Maximum/Minimum propagate
// NaN; comparisons produce Bool; Select(c, a, b) is c ? a : b. The unary math
// functions (Exp, Log, Sin, ...) and Atan2/Hypot are floating only: codegen
// lowers them to the vector math the eager kernels use
// (codegen/llvm/VectorMath.h); Floor/Ceil/Trunc/Round, Fmod and Copysign are
// exact. And/Or/Xor are logical on Bool and bitwise on integers; Shl/Shr are
// integer shifts.
// KernelBuilder hash-conses, so equal subexpressions are one Expr.

enum class ExprOp : uint8_t {
  Load,      // input `input`
  Constant,  // `fvalue` (floating) or `ivalue` (integral, bool)
  Cast,      // a -> dtype
  // unary
  Neg,
  Abs,
  Not,  // bool
  Sqrt,
  Exp,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sin,
  Cos,
  Tan,
  Tanh,
  Erf,
  Erfc,
  Exp2,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Floor,
  Ceil,
  Trunc,
  Round,  // to nearest, ties to even (rint)
  // binary
  Add,
  Sub,
  Mul,
  Div,
  Maximum,
  Minimum,
  Pow,
  Atan2,
  Hypot,
  Fmod,      // C's fmod (exact)
  Copysign,
  Shl,       // integer; the amount is taken modulo the width (PointwiseMath handles larger ones)
  Shr,       // integer, arithmetic for signed dtypes; the amount modulo the width
  And,  // bool and integers (bitwise)
  Or,   // bool and integers (bitwise)
  Xor,  // bool and integers (bitwise)
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // ternary
  Select,
  Fma,  // a * b + c, rounded once where the host has FMA (as eager's contracted `x + alpha * y`), else twice
  // row reductions (row kernels only: Note [Row reduction kernels]); unary, floating
  ReduceSum,
  ReduceMean,
  ReduceMax,  // NaN-propagating, as amax
  ReduceMin,
};

/// True for the Reduce* ops.
[[nodiscard]] bool is_reduction(ExprOp op);

/// True for the ops codegen lowers to a call into the vector math library the eager kernels use
/// (codegen/llvm/VectorMath.h): the transcendental functions, Pow, Atan2 and Hypot.
[[nodiscard]] bool is_vector_math(ExprOp op);

// Note [Row reduction kernels]
// ----------------------------
// A row kernel (`rows` set) iterates a [rows, cols] space: `cols` is the
// product of the reduced (trailing, contiguous) dims, `rows` the product of
// the others; both are kernel arguments (sizes[0], sizes[1]). Each input and
// output has a RowOperand role: Element (one value per point, row-major
// contiguous), PerRow (one value per row: a keepdim reduction's result),
// PerColumn (one value per column, broadcast over rows: a norm's weight),
// Scalar (one element). A Reduce* expr folds its operand over the row's cols
// and is then uniform along the row; an expr is uniform when every operand is
// (loads of PerRow and Scalar inputs are). Codegen makes one pass over the row
// per reduction depth (softmax: amax, then sum of exp(x - max), then the
// stores), with vector accumulators; uniform values are computed once per row
// between passes. A costly per-element value a pass
// computes and a later pass needs again (softmax's exp) is kept in a scratch
// row (codegen/RowSchedule.h; the `strides` argument points at the calling
// thread's scratch). PerRow outputs store one uniform value per row; Element
// outputs are stored in the last pass. A row never depends on how [0, rows)
// was split between threads. A Reduce* expr's `ivalue` is the element count
// of the eager reduction kernel's vector (Vec<T>::size of the CPU capability
// eager dispatches to): each reduction folds the row in exactly the order of
// eager's sum_span / extreme_span (eager/kernels/cpu/reduce), so its result
// equals sum.dim_IntList's, mean.dim's, amax's and amin's bit for bit
// (Note [Row reductions in eager's order], codegen/llvm/RowLowering.cpp).
enum class RowOperand : uint8_t { Element, PerRow, PerColumn, Scalar };

[[nodiscard]] const char* row_operand_name(RowOperand r);

[[nodiscard]] const char* expr_op_name(ExprOp op);
[[nodiscard]] int expr_op_arity(ExprOp op);

struct Expr {
  ExprOp op = ExprOp::Constant;
  DType dtype = DType::Float32;
  int32_t a = -1, b = -1, c = -1;  // operand expr indices
  int32_t input = -1;              // Load
  double fvalue = 0;               // Constant, floating dtype
  int64_t ivalue = 0;              // Constant, integral/bool dtype; Reduce*: eager's vector width (elements);
                                   // Fma: 1 when rounded twice in a norm row's last partial vector (fma_in_whole_vectors)

  bool operator==(const Expr& o) const;
};

struct Kernel {
  std::string name;                 // "kernel_<hash>" once finished
  int rank = 1;                     // iteration dimensions
  bool contiguous = false;          // rank 1, every input dense or a single element (Note above)
  std::vector<DType> input_dtypes;  // element type of each input
  std::vector<bool> input_scalar;   // contiguous path: input i is one element (stride 0)
  // Strided path: input i's expected stride along the innermost iteration dim, 1 or 0 (a bias broadcast
  // along rows: a value per row), -1 unknown; Note [Strided kernels' inner loops] (codegen/llvm/KernelLowering.cpp).
  std::vector<int8_t> inner_stride_hint;
  std::vector<DType> output_dtypes;
  std::vector<Expr> exprs;
  std::vector<int32_t> outputs;     // expr stored to each output (cast to its dtype first)
  // Row kernels (Note [Row reduction kernels]); pointwise kernels leave these empty.
  bool rows = false;
  std::vector<RowOperand> input_roles, output_roles;
  // With `rows`: the Reduce* exprs fold over the rows instead, one result per column (PerColumn), and
  // every input and output is Element, PerColumn or Scalar (Note [Column reduction kernels], RowLowering.cpp).
  bool columns = false;
  // With `columns`: 0, the folds add in eager sum's order; else in eager norm_backward_params' order with
  // chunks of this many rows (Note [Norm parameter gradients as column groups], passes/fuse_column_reductions.h).
  int64_t norm_chunk_rows = 0;
  // A row kernel whose folds add in eager's norm kernels' order (NnVec's sum_chunks: four vector accumulators,
  // then one, lanes added in order; a ReduceSum with `b` adds by one fma per vector) instead of eager sum's:
  // layer_norm and its input gradient as row groups (Note [Norms as row groups], passes/fuse_reductions.h).
  bool norm_rows = false;

  /// A structural hash: equal kernels (up to `name`) hash equal.
  [[nodiscard]] uint64_t hash() const;
  /// The text form: one line per expr, for logs and tests.
  [[nodiscard]] std::string str() const;
};

/// Builds a Kernel's expression DAG, reusing equal expressions.
class KernelBuilder {
 public:
  explicit KernelBuilder(Kernel& k) : k_(k) {}

  int32_t load(int32_t input);
  int32_t constant(DType dtype, double value);  // integral dtypes take the value truncated
  int32_t constant_int(DType dtype, int64_t value);
  /// `e` converted to `dtype` (itself when it already has that dtype).
  int32_t cast(int32_t e, DType dtype);
  int32_t unary(ExprOp op, int32_t a);
  /// Both operands must have one dtype; comparisons give Bool.
  int32_t binary(ExprOp op, int32_t a, int32_t b);
  int32_t select(int32_t cond, int32_t a, int32_t b);
  /// a * b + c (floating; one dtype).
  int32_t fma(int32_t a, int32_t b, int32_t c);
  /// a * b + c rounded once in a norm row kernel's whole vectors of eager's width and twice (a * b, then
  /// + c) in the row's last partial vector, as eager's norm loops contract it (Note [Row folds in eager's
  /// norm order], codegen/llvm/RowLowering.cpp); elsewhere as fma.
  int32_t fma_in_whole_vectors(int32_t a, int32_t b, int32_t c);
  /// `op` (ReduceSum, ...) of `a` over the row (floating; row kernels only), in the order of eager's
  /// reduction kernel with vectors of `lanes` elements (Note [Row reduction kernels]).
  int32_t reduce(ExprOp op, int32_t a, int64_t lanes);
  /// ReduceSum of a * b, each term added to the accumulator by one fma (a norm kernel's column fold:
  /// eager's norm_backward_params; the expr's `b` is set).
  int32_t reduce_product(int32_t a, int32_t b, int64_t lanes);

  [[nodiscard]] DType dtype(int32_t e) const { return k_.exprs[static_cast<size_t>(e)].dtype; }

 private:
  int32_t add(const Expr& e);
  Kernel& k_;
};

}  // namespace kiln::codegen
