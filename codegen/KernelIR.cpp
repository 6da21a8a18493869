// The kernel IR's names, hash, printer and builder.
#include "codegen/KernelIR.h"

#include <cstring>
#include <sstream>

#include "eager/core/Error.h"

namespace kiln::codegen {

const char* expr_op_name(ExprOp op) {
  switch (op) {
    case ExprOp::Load: return "load";
    case ExprOp::Constant: return "const";
    case ExprOp::Cast: return "cast";
    case ExprOp::Neg: return "neg";
    case ExprOp::Abs: return "abs";
    case ExprOp::Not: return "not";
    case ExprOp::Sqrt: return "sqrt";
    case ExprOp::Exp: return "exp";
    case ExprOp::Expm1: return "expm1";
    case ExprOp::Log: return "log";
    case ExprOp::Log2: return "log2";
    case ExprOp::Log10: return "log10";
    case ExprOp::Log1p: return "log1p";
    case ExprOp::Sin: return "sin";
    case ExprOp::Cos: return "cos";
    case ExprOp::Tan: return "tan";
    case ExprOp::Tanh: return "tanh";
    case ExprOp::Erf: return "erf";
    case ExprOp::Erfc: return "erfc";
    case ExprOp::Exp2: return "exp2";
    case ExprOp::Asin: return "asin";
    case ExprOp::Acos: return "acos";
    case ExprOp::Atan: return "atan";
    case ExprOp::Sinh: return "sinh";
    case ExprOp::Cosh: return "cosh";
    case ExprOp::Asinh: return "asinh";
    case ExprOp::Acosh: return "acosh";
    case ExprOp::Atanh: return "atanh";
    case ExprOp::Floor: return "floor";
    case ExprOp::Ceil: return "ceil";
    case ExprOp::Trunc: return "trunc";
    case ExprOp::Round: return "round";
    case ExprOp::Add: return "add";
    case ExprOp::Sub: return "sub";
    case ExprOp::Mul: return "mul";
    case ExprOp::Div: return "div";
    case ExprOp::Maximum: return "maximum";
    case ExprOp::Minimum: return "minimum";
    case ExprOp::Pow: return "pow";
    case ExprOp::Atan2: return "atan2";
    case ExprOp::Hypot: return "hypot";
    case ExprOp::Fmod: return "fmod";
    case ExprOp::Copysign: return "copysign";
    case ExprOp::Shl: return "shl";
    case ExprOp::Shr: return "shr";
    case ExprOp::And: return "and";
    case ExprOp::Or: return "or";
    case ExprOp::Xor: return "xor";
    case ExprOp::Eq: return "eq";
    case ExprOp::Ne: return "ne";
    case ExprOp::Lt: return "lt";
    case ExprOp::Le: return "le";
    case ExprOp::Gt: return "gt";
    case ExprOp::Ge: return "ge";
    case ExprOp::Select: return "select";
    case ExprOp::Fma: return "fma";
    case ExprOp::ReduceSum: return "reduce_sum";
    case ExprOp::ReduceMean: return "reduce_mean";
    case ExprOp::ReduceMax: return "reduce_max";
    case ExprOp::ReduceMin: return "reduce_min";
  }
  return "?";
}

bool is_reduction(ExprOp op) {
  return op == ExprOp::ReduceSum || op == ExprOp::ReduceMean || op == ExprOp::ReduceMax || op == ExprOp::ReduceMin;
}

bool is_vector_math(ExprOp op) {
  switch (op) {
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
    case ExprOp::Atanh:
    case ExprOp::Pow:
    case ExprOp::Atan2:
    case ExprOp::Hypot: return true;
    default: return false;
  }
}

const char* row_operand_name(RowOperand r) {
  switch (r) {
    case RowOperand::Element: return "element";
    case RowOperand::PerRow: return "per_row";
    case RowOperand::PerColumn: return "per_column";
    case RowOperand::Scalar: return "scalar";
  }
  return "?";
}

int expr_op_arity(ExprOp op) {
  if (op == ExprOp::Load || op == ExprOp::Constant) return 0;
  if (is_reduction(op)) return 1;
  if (op == ExprOp::Select || op == ExprOp::Fma) return 3;
  if (op >= ExprOp::Add) return 2;
  return 1;
}

bool Expr::operator==(const Expr& o) const {
  return op == o.op && dtype == o.dtype && a == o.a && b == o.b && c == o.c && input == o.input &&
         std::memcmp(&fvalue, &o.fvalue, sizeof(double)) == 0 && ivalue == o.ivalue;
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {  // FNV-1a over the 8 bytes of v
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= 1099511628211ull;
  }
  return h;
}
}  // namespace

uint64_t Kernel::hash() const {
  uint64_t h = 1469598103934665603ull;
  h = mix(h, static_cast<uint64_t>(rank));
  h = mix(h, contiguous ? 1 : 0);
  h = mix(h, input_dtypes.size());
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    h = mix(h, static_cast<uint64_t>(input_dtypes[i]));
    h = mix(h, i < input_scalar.size() && input_scalar[i] ? 1 : 0);
    if (i < inner_stride_hint.size()) h = mix(h, static_cast<uint64_t>(inner_stride_hint[i] + 0x10));
  }
  h = mix(h, output_dtypes.size());
  for (DType d : output_dtypes) h = mix(h, static_cast<uint64_t>(d));
  for (const Expr& e : exprs) {
    uint64_t bits = 0;
    std::memcpy(&bits, &e.fvalue, sizeof(double));
    h = mix(h, static_cast<uint64_t>(e.op) | (static_cast<uint64_t>(e.dtype) << 8));
    h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(e.a)) | (static_cast<uint64_t>(static_cast<uint32_t>(e.b)) << 32));
    h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(e.c)) | (static_cast<uint64_t>(static_cast<uint32_t>(e.input)) << 32));
    h = mix(h, bits);
    h = mix(h, static_cast<uint64_t>(e.ivalue));
  }
  for (int32_t o : outputs) h = mix(h, static_cast<uint64_t>(o));
  if (rows) {
    h = mix(h, 0x726f7773u);  // "rows"
    for (RowOperand r : input_roles) h = mix(h, static_cast<uint64_t>(r));
    for (RowOperand r : output_roles) h = mix(h, static_cast<uint64_t>(r) + 16);
    if (columns) h = mix(h, 0x636f6c73u);  // "cols"
    if (norm_chunk_rows > 0) h = mix(h, 0x6e6f726du ^ static_cast<uint64_t>(norm_chunk_rows));  // "norm"
    if (norm_rows) h = mix(h, 0x6e726f77u);  // "nrow"
  }
  return h;
}

std::string Kernel::str() const {
  std::ostringstream os;
  os << "kernel " << name << "(" << (rows ? (columns ? "columns" : "rows") : "rank=" + std::to_string(rank)) << (contiguous ? ", contiguous" : "");
  if (norm_chunk_rows > 0) os << ", norm order, chunks of " << norm_chunk_rows << " rows";
  if (norm_rows) os << ", norm order";
  os << ")\n";
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    os << "  in" << i << " : " << input_dtypes[i]
       << (i < input_scalar.size() && input_scalar[i] ? " (scalar)" : "");
    if (i < inner_stride_hint.size() && inner_stride_hint[i] >= 0) {
      os << " (inner stride " << static_cast<int>(inner_stride_hint[i]) << ")";
    }
    if (i < input_roles.size()) os << " (" << row_operand_name(input_roles[i]) << ")";
    os << "\n";
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    os << "  e" << i << " : " << e.dtype << " = " << expr_op_name(e.op);
    if (e.op == ExprOp::Load) {
      os << " in" << e.input;
    } else if (e.op == ExprOp::Constant) {
      if (is_floating_point(e.dtype)) os << " " << e.fvalue;
      else os << " " << e.ivalue;
    } else {
      for (int32_t x : {e.a, e.b, e.c}) {
        if (x >= 0) os << " e" << x;
      }
      if (is_reduction(e.op)) os << " lanes=" << e.ivalue;
      if (e.op == ExprOp::Fma && e.ivalue != 0) os << " (whole vectors)";
    }
    os << "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << "  out" << i << " : " << output_dtypes[i];
    if (i < output_roles.size()) os << " (" << row_operand_name(output_roles[i]) << ")";
    os << " = e" << outputs[i] << "\n";
  }
  return os.str();
}

int32_t KernelBuilder::add(const Expr& e) {
  for (size_t i = 0; i < k_.exprs.size(); ++i) {
    if (k_.exprs[i] == e) return static_cast<int32_t>(i);
  }
  k_.exprs.push_back(e);
  return static_cast<int32_t>(k_.exprs.size() - 1);
}

int32_t KernelBuilder::load(int32_t input) {
  KILN_CHECK(input >= 0 && static_cast<size_t>(input) < k_.input_dtypes.size(), "kernel IR: no input ", input);
  Expr e;
  e.op = ExprOp::Load;
  e.dtype = k_.input_dtypes[static_cast<size_t>(input)];
  e.input = input;
  return add(e);
}

int32_t KernelBuilder::constant(DType dtype, double value) {
  if (!is_floating_point(dtype)) {
    return constant_int(dtype, dtype == DType::Bool ? (value != 0 ? 1 : 0) : static_cast<int64_t>(value));
  }
  Expr e;
  e.op = ExprOp::Constant;
  e.dtype = dtype;
  e.fvalue = value;
  return add(e);
}

int32_t KernelBuilder::constant_int(DType dtype, int64_t value) {
  if (is_floating_point(dtype)) return constant(dtype, static_cast<double>(value));
  Expr e;
  e.op = ExprOp::Constant;
  e.dtype = dtype;
  e.ivalue = dtype == DType::Bool ? (value != 0 ? 1 : 0) : value;
  return add(e);
}

int32_t KernelBuilder::cast(int32_t a, DType dtype) {
  if (this->dtype(a) == dtype) return a;
  Expr e;
  e.op = ExprOp::Cast;
  e.dtype = dtype;
  e.a = a;
  return add(e);
}

int32_t KernelBuilder::unary(ExprOp op, int32_t a) {
  KILN_CHECK(expr_op_arity(op) == 1 && op != ExprOp::Cast, "kernel IR: ", expr_op_name(op), " is not unary");
  Expr e;
  e.op = op;
  e.dtype = dtype(a);
  e.a = a;
  if (op != ExprOp::Neg && op != ExprOp::Abs && op != ExprOp::Not) {
    KILN_CHECK(is_floating_point(e.dtype), "kernel IR: ", expr_op_name(op), " of ", e.dtype);
  }
  return add(e);
}

int32_t KernelBuilder::binary(ExprOp op, int32_t a, int32_t b) {
  KILN_CHECK(expr_op_arity(op) == 2, "kernel IR: ", expr_op_name(op), " is not binary");
  KILN_CHECK(dtype(a) == dtype(b), "kernel IR: ", expr_op_name(op), " of ", dtype(a), " and ", dtype(b));
  Expr e;
  e.op = op;
  e.a = a;
  e.b = b;
  const bool compare = op >= ExprOp::Eq && op <= ExprOp::Ge;
  e.dtype = compare ? DType::Bool : dtype(a);
  if (op == ExprOp::Div || op == ExprOp::Pow || op == ExprOp::Atan2 || op == ExprOp::Hypot || op == ExprOp::Fmod ||
      op == ExprOp::Copysign) {
    KILN_CHECK(is_floating_point(e.dtype), "kernel IR: ", expr_op_name(op), " of ", e.dtype);
  }
  if (op == ExprOp::Shl || op == ExprOp::Shr) {
    KILN_CHECK(!is_floating_point(e.dtype) && e.dtype != DType::Bool, "kernel IR: ", expr_op_name(op), " of ", e.dtype);
  }
  return add(e);
}

int32_t KernelBuilder::select(int32_t cond, int32_t a, int32_t b) {
  KILN_CHECK(dtype(cond) == DType::Bool, "kernel IR: select's condition is ", dtype(cond));
  KILN_CHECK(dtype(a) == dtype(b), "kernel IR: select of ", dtype(a), " and ", dtype(b));
  Expr e;
  e.op = ExprOp::Select;
  e.dtype = dtype(a);
  e.a = cond;
  e.b = a;
  e.c = b;
  return add(e);
}

}  // namespace kiln::codegen

namespace kiln::codegen {

namespace {

Expr fma_expr(DType d, int32_t a, int32_t b, int32_t c, bool whole_vectors) {
  Expr e;
  e.op = ExprOp::Fma;
  e.dtype = d;
  e.a = a;
  e.b = b;
  e.c = c;
  e.ivalue = whole_vectors ? 1 : 0;
  return e;
}

}  // namespace

int32_t KernelBuilder::fma(int32_t a, int32_t b, int32_t c) {
  KILN_CHECK(dtype(a) == dtype(b) && dtype(b) == dtype(c) && is_floating_point(dtype(a)), "kernel IR: fma of ",
             dtype(a), ", ", dtype(b), " and ", dtype(c));
  return add(fma_expr(dtype(a), a, b, c, false));
}

int32_t KernelBuilder::fma_in_whole_vectors(int32_t a, int32_t b, int32_t c) {
  KILN_CHECK(dtype(a) == dtype(b) && dtype(b) == dtype(c) && is_floating_point(dtype(a)), "kernel IR: fma of ",
             dtype(a), ", ", dtype(b), " and ", dtype(c));
  KILN_CHECK(k_.rows, "kernel IR: fma_in_whole_vectors outside a row kernel");
  return add(fma_expr(dtype(a), a, b, c, true));
}

}  // namespace kiln::codegen

namespace kiln::codegen {

int32_t KernelBuilder::reduce(ExprOp op, int32_t a, int64_t lanes) {
  KILN_CHECK(is_reduction(op), "kernel IR: ", expr_op_name(op), " is not a reduction");
  KILN_CHECK(k_.rows, "kernel IR: ", expr_op_name(op), " outside a row kernel");
  KILN_CHECK(is_floating_point(dtype(a)), "kernel IR: ", expr_op_name(op), " of ", dtype(a));
  Expr e;
  e.op = op;
  e.dtype = dtype(a);
  e.a = a;
  e.ivalue = lanes;
  return add(e);
}

int32_t KernelBuilder::reduce_product(int32_t a, int32_t b, int64_t lanes) {
  KILN_CHECK(k_.rows, "kernel IR: a product fold outside a row or column kernel");
  KILN_CHECK(is_floating_point(dtype(a)) && dtype(a) == dtype(b), "kernel IR: a product fold of ", dtype(a), " and ",
             dtype(b));
  Expr e;
  e.op = ExprOp::ReduceSum;
  e.dtype = dtype(a);
  e.a = a;
  e.b = b;
  e.ivalue = lanes;
  return add(e);
}

}  // namespace kiln::codegen
