// Kernel IR -> CUDA C: pointwise and row kernels (CudaKernelSource.h).
#include "codegen/cuda/CudaKernelSource.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "codegen/RowSchedule.h"
#include "codegen/cuda/CudaExpr.h"
#include "eager/core/Error.h"

namespace kiln::codegen::cuda {

// Note [CUDA row kernels]
// -----------------------
// A row kernel (Note [Row reduction kernels]) runs one block of kCudaBlock
// threads per row, rows in a grid-stride loop. Each pass over the row is a
// block-strided loop (thread t takes cols t, t + 256, ...) folding into one
// accumulator per reduction and thread, then a block reduction: shfl_down
// within each warp, the warps' results through shared memory, folded again
// by shfl_down the same way in every warp and broadcast from lane 0, so every
// thread holds the same bits. Uniform values are then computed per row by
// every thread (as codegen/llvm, once per row, a division of row values by a
// uniform value multiplies by its reciprocal); per-row outputs are stored by
// thread 0, element outputs in the last pass. Max and min propagate NaN as
// amax/amin (x wins when it is NaN or beyond the accumulator).
// Summation semantics: sum and mean start at +0 and add in a fixed order for
// a given cols (each thread's cols in increasing order, then the shuffle
// tree), independent of how rows are spread over blocks: deterministic, and
// equal to the CPU's (and eager's) up to the order of additions, so a float32
// row sum differs from the CPU's by rounding of order sqrt(cols) ulp
// (tests: rtol 1e-5 float32, 1e-12 float64). Values the CPU keeps in scratch
// rows between passes (codegen/RowSchedule.h: softmax's exp) are recomputed
// here in each pass: global memory traffic costs more on a GPU than the math.

namespace {

std::string var(char prefix, int32_t i) { return prefix + std::to_string(i); }

/// The argument struct of `name` with `pointers` data pointers and `words` 8-byte fields after them.
std::string argument_struct(const std::string& name, size_t pointers, const std::vector<std::string>& fields) {
  std::ostringstream s;
  s << "struct __align__(8) " << name << "_args {\n  void* p[" << std::max<size_t>(pointers, 1) << "];\n";
  for (const std::string& f : fields) s << "  long long " << f << ";\n";
  s << "};\n";
  return s.str();
}

std::string entries(const std::string& name) {
  std::ostringstream s;
  s << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << name << "_i32(const " << name
    << "_args a) { " << name << "_body<int>(a); }\n";
  s << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << name << "_i64(const " << name
    << "_args a) { " << name << "_body<long long>(a); }\n";
  return s.str();
}

std::string input_pointer(const Kernel& k, int32_t input) {
  return std::string("static_cast<const ") + memory_type(k.input_dtypes[static_cast<size_t>(input)]) + "*>(a.p[" +
         std::to_string(input) + "])";
}

std::string output_pointer(const Kernel& k, size_t o) {
  return std::string("static_cast<") + memory_type(k.output_dtypes[o]) + "*>(a.p[" +
         std::to_string(k.input_dtypes.size() + o) + "])";
}

/// The statement storing output o (computed as `value`, an expr of dtype `from`) at `index`.
std::string store(const Kernel& k, size_t o, const std::string& value, DType from, const std::string& index) {
  const DType d = k.output_dtypes[o];
  return output_pointer(k, o) + "[" + index + "] = " + store_value(d, cast_value(value, from, d)) + ";";
}

// Note [Vectorised pointwise kernels]
// ------------------------------------
// A contiguous pointwise kernel moves its elements in vectors of V = 16 bytes
// / the widest element it loads or stores (4 floats, 8 halves, 2 doubles):
// thread t takes vectors t, t + step, ... of every non-scalar operand, one
// 128-bit (or narrower, for the narrower operands) load or store each, and
// computes the V elements in an unrolled loop of the same statements the
// scalar loop prints; the last n % V elements (the tail) run through the
// scalar loop. The vector loop runs only when every non-scalar operand's
// address is a multiple of its vector's size (checked at run time: a view at
// an offset is not, and takes the scalar loop for all its elements). The
// results are bit-identical to the scalar loop's: the same statements on the
// same values, in no particular order (each element is independent).
// Strided kernels keep the scalar loop (their elements are not adjacent).

/// Elements per vector of a contiguous kernel: 16 bytes over its widest non-scalar operand (1: none).
int vector_width(const Kernel& k) {
  int64_t widest = 0;
  for (size_t in = 0; in < k.input_dtypes.size(); ++in) {
    if (in < k.input_scalar.size() && k.input_scalar[in]) continue;
    widest = std::max<int64_t>(widest, itemsize(k.input_dtypes[in]));
  }
  for (DType d : k.output_dtypes) widest = std::max<int64_t>(widest, itemsize(d));
  return widest == 0 || widest > 16 ? 1 : static_cast<int>(16 / widest);
}

std::string vec_type(DType d, int v) {
  return std::string("kcg::Vec<") + memory_type(d) + ", " + std::to_string(v) + ">";
}

std::string pointwise_source(const Kernel& k) {
  const size_t ni = k.input_dtypes.size(), no = k.output_dtypes.size();
  const int r = std::max(1, k.rank);
  const std::string& name = k.name;
  const auto is_scalar = [&](int32_t in) {
    return k.contiguous && static_cast<size_t>(in) < k.input_scalar.size() && k.input_scalar[static_cast<size_t>(in)];
  };
  const int vec = k.contiguous ? vector_width(k) : 1;
  std::ostringstream s;
  s << "// " << name << ": pointwise, " << (k.contiguous ? "contiguous" : "rank " + std::to_string(r) + ", strided")
    << ", " << ni << " inputs, " << no << " outputs";
  if (vec > 1) s << ", vectors of " << vec;
  s << "\n";
  s << argument_struct(name, ni + no,
                       {"numel", "sizes[" + std::to_string(r) + "]",
                        "strides[" + std::to_string(std::max<size_t>(1, ni * static_cast<size_t>(r))) + "]"});
  s << "template <typename I>\n__device__ __forceinline__ void " << name << "_body(const " << name << "_args& a) {\n";
  s << "  const I n = static_cast<I>(a.numel);\n";
  s << "  const I step = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n";
  s << "  const I start = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);\n";
  s << "  I first = 0;\n";
  if (vec > 1) {
    // the vector loop (Note [Vectorised pointwise kernels]), when every vector operand is aligned
    const std::string v = std::to_string(vec);
    std::vector<std::string> aligned;
    for (size_t in = 0; in < ni; ++in) {
      if (is_scalar(static_cast<int32_t>(in))) continue;
      aligned.push_back("reinterpret_cast<unsigned long long>(a.p[" + std::to_string(in) + "]) % " +
                        std::to_string(vec * itemsize(k.input_dtypes[in])) + " == 0");
    }
    for (size_t o = 0; o < no; ++o) {
      aligned.push_back("reinterpret_cast<unsigned long long>(a.p[" + std::to_string(ni + o) + "]) % " +
                        std::to_string(vec * itemsize(k.output_dtypes[o])) + " == 0");
    }
    s << "  if (";
    for (size_t i = 0; i < aligned.size(); ++i) s << (i ? " && " : "") << "(" << aligned[i] << ")";
    s << ") {\n";
    s << "    const I groups = n / " << v << ";\n";
    s << "    for (I g = start; g < groups; g += step) {\n";
    for (size_t in = 0; in < ni; ++in) {
      if (is_scalar(static_cast<int32_t>(in))) continue;
      const std::string t = vec_type(k.input_dtypes[in], vec);
      s << "      const " << t << " x" << in << " = *reinterpret_cast<const " << t << "*>(" +
               input_pointer(k, static_cast<int32_t>(in)) + " + g * " << v << ");\n";
    }
    for (size_t o = 0; o < no; ++o) s << "      " << vec_type(k.output_dtypes[o], vec) << " y" << o << ";\n";
    s << "#pragma unroll\n      for (int j = 0; j < " << v << "; ++j) {\n";
    ExprPrinter vp{k, [](int32_t i) { return var('v', i); },
                   [&](int32_t in) {
                     return is_scalar(in) ? input_pointer(k, in) + "[0]" : "x" + std::to_string(in) + ".v[j]";
                   }};
    for (size_t i = 0; i < k.exprs.size(); ++i) s << "        " << vp.statement(static_cast<int32_t>(i)) << "\n";
    for (size_t o = 0; o < no; ++o) {
      const int32_t e = k.outputs[o];
      const DType d = k.output_dtypes[o];
      const DType from = k.exprs[static_cast<size_t>(e)].dtype;
      s << "        y" << o << ".v[j] = " << store_value(d, cast_value(var('v', e), from, d)) << ";\n";
    }
    s << "      }\n";
    for (size_t o = 0; o < no; ++o) {
      const std::string t = vec_type(k.output_dtypes[o], vec);
      s << "      *reinterpret_cast<" << t << "*>(" << output_pointer(k, o) << " + g * " << v << ") = y" << o << ";\n";
    }
    s << "    }\n    first = groups * " << v << ";  // the tail: the scalar loop\n  }\n";
  }
  s << "  for (I i = first + start; i < n; i += step) {\n";
  if (!k.contiguous && ni > 0) {
    s << "    I rest = i;\n";
    for (size_t in = 0; in < ni; ++in) s << "    I o" << in << " = 0;\n";
    for (int d = r - 1; d >= 0; --d) {
      s << "    {\n";
      if (d == 0) {
        s << "      const I c = rest;\n";
      } else {
        s << "      const I size = static_cast<I>(a.sizes[" << d << "]);\n";
        s << "      const I c = rest % size;\n      rest /= size;\n";
      }
      for (size_t in = 0; in < ni; ++in) {
        s << "      o" << in << " += c * static_cast<I>(a.strides[" << in * static_cast<size_t>(r) + static_cast<size_t>(d)
          << "]);\n";
      }
      s << "    }\n";
    }
  }
  ExprPrinter p{k, [](int32_t i) { return var('v', i); },
                [&](int32_t in) {
                  const std::string index = is_scalar(in) ? "0" : (k.contiguous ? "i" : "o" + std::to_string(in));
                  return input_pointer(k, in) + "[" + index + "]";
                }};
  for (size_t i = 0; i < k.exprs.size(); ++i) s << "    " << p.statement(static_cast<int32_t>(i)) << "\n";
  for (size_t o = 0; o < no; ++o) {
    const int32_t e = k.outputs[o];
    s << "    " << store(k, o, var('v', e), k.exprs[static_cast<size_t>(e)].dtype, "i") << "\n";
  }
  s << "  }\n}\n" << entries(name);
  return s.str();
}

const char* reduce_functor(ExprOp op) {
  switch (op) {
    case ExprOp::ReduceMax: return "kcg::MaxNan()";
    case ExprOp::ReduceMin: return "kcg::MinNan()";
    default: return "kcg::Sum()";
  }
}

std::string reduce_identity(ExprOp op, DType d) {
  if (op == ExprOp::ReduceMax) return literal(d, -INFINITY, 0);
  if (op == ExprOp::ReduceMin) return literal(d, INFINITY, 0);
  return literal(d, 0.0, 0);
}

std::string combine(ExprOp op, const std::string& acc, const std::string& x) {
  switch (op) {
    case ExprOp::ReduceMax: return "kcg::max_nan(" + acc + ", " + x + ")";
    case ExprOp::ReduceMin: return "kcg::min_nan(" + acc + ", " + x + ")";
    default: return "kcg::add_rn(" + acc + ", " + x + ")";
  }
}

/// Prints a row kernel (Note [CUDA row kernels]) following codegen/RowSchedule's passes.
class RowPrinter {
 public:
  explicit RowPrinter(const Kernel& k) : k_(k), s_(schedule_rows(k)), known_(k.exprs.size(), false),
                                         recip_(k.exprs.size(), false) {}

  std::string print() {
    const size_t ni = k_.input_dtypes.size(), no = k_.output_dtypes.size();
    const std::string& name = k_.name;
    out_ << "// " << name << ": row kernel, " << s_.passes() << " passes, " << ni << " inputs, " << no << " outputs\n";
    out_ << argument_struct(name, ni + no, {"rows", "cols"});
    out_ << "template <typename I>\n__device__ __forceinline__ void " << name << "_body(const " << name
         << "_args& a) {\n";
    out_ << "  __shared__ float shm_f[32];\n  __shared__ double shm_d[32];\n  (void)shm_f;\n  (void)shm_d;\n";
    out_ << "  const I rows = static_cast<I>(a.rows), cols = static_cast<I>(a.cols);\n";
    out_ << "  for (I row = static_cast<I>(blockIdx.x); row < rows; row += static_cast<I>(gridDim.x)) {\n";
    out_ << "    const I row_start = row * cols;\n    (void)row_start;\n";
    compute_uniform(0);
    for (int pass = 1; pass <= s_.passes(); ++pass) {
      reduction_pass(s_.reduces[static_cast<size_t>(pass - 1)]);
      compute_uniform(pass);
    }
    std::vector<int32_t> element_outputs;
    for (size_t o = 0; o < no; ++o) {
      const int32_t e = k_.outputs[o];
      if (k_.output_roles[o] == RowOperand::Element) {
        element_outputs.push_back(e);
        continue;
      }
      KILN_CHECK(known_[static_cast<size_t>(e)], "codegen/cuda: row kernel output ", o, " is not uniform along the row");
      out_ << "    if (threadIdx.x == 0) " << store(k_, o, name_of(e), k_.exprs[static_cast<size_t>(e)].dtype, "row")
           << "\n";
    }
    if (!element_outputs.empty()) {
      out_ << "    for (I j = static_cast<I>(threadIdx.x); j < cols; j += static_cast<I>(blockDim.x)) {\n";
      loop_body(element_outputs);
      for (size_t o = 0; o < no; ++o) {
        if (k_.output_roles[o] != RowOperand::Element) continue;
        const int32_t e = k_.outputs[o];
        out_ << "      " << store(k_, o, name_of(e), k_.exprs[static_cast<size_t>(e)].dtype, "row_start + j") << "\n";
      }
      out_ << "    }\n";
    }
    out_ << "  }\n}\n" << entries(name);
    return out_.str();
  }

 private:
  std::string name_of(int32_t i) const { return var(known_[static_cast<size_t>(i)] ? 'u' : 'v', i); }

  std::string load(int32_t in) const {
    switch (k_.input_roles[static_cast<size_t>(in)]) {
      case RowOperand::Element: return input_pointer(k_, in) + "[row_start + j]";
      case RowOperand::PerRow: return input_pointer(k_, in) + "[row]";
      case RowOperand::PerColumn: return input_pointer(k_, in) + "[j]";
      case RowOperand::Scalar: return input_pointer(k_, in) + "[0]";
    }
    return "";
  }

  ExprPrinter printer() const {
    return ExprPrinter{k_, [this](int32_t i) { return name_of(i); }, [this](int32_t in) { return load(in); },
                       [this](int32_t b) { return recip_[static_cast<size_t>(b)] ? var('r', b) : std::string(); }};
  }

  /// Statements for what `targets` need beyond the known values (inside a loop over j).
  void loop_body(const std::vector<int32_t>& targets) {
    const std::vector<bool> need = needed_for(k_, targets, known_);
    const ExprPrinter p = printer();
    for (size_t i = 0; i < need.size(); ++i) {
      if (need[i] && !known_[i]) out_ << "      " << p.statement(static_cast<int32_t>(i)) << "\n";
    }
  }

  void reduction_pass(const std::vector<int32_t>& reduces) {
    std::vector<int32_t> operands;
    for (int32_t r : reduces) operands.push_back(k_.exprs[static_cast<size_t>(r)].a);
    for (int32_t r : reduces) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      out_ << "    " << register_type(e.dtype) << " acc" << r << " = " << reduce_identity(e.op, e.dtype) << ";\n";
    }
    out_ << "    for (I j = static_cast<I>(threadIdx.x); j < cols; j += static_cast<I>(blockDim.x)) {\n";
    loop_body(operands);
    for (int32_t r : reduces) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      out_ << "      acc" << r << " = " << combine(e.op, "acc" + std::to_string(r), name_of(e.a)) << ";\n";
    }
    out_ << "    }\n";
    for (int32_t r : reduces) {
      const Expr& e = k_.exprs[static_cast<size_t>(r)];
      const bool dbl = e.dtype == DType::Float64;
      const std::string rt = register_type(e.dtype);
      std::string v = "kcg::block_reduce<" + rt + ">(acc" + std::to_string(r) + ", " + reduce_identity(e.op, e.dtype) +
                      ", " + (dbl ? "shm_d" : "shm_f") + ", " + reduce_functor(e.op) + ")";
      if (e.op == ExprOp::ReduceMean) {
        v = std::string(dbl ? "__ddiv_rn(" : "__fdiv_rn(") + v + ", static_cast<" + rt + ">(cols))";
      }
      out_ << "    const " << rt << " u" << r << " = " << v << ";\n";
      known_[static_cast<size_t>(r)] = true;
    }
  }

  /// The uniform values available after `stage` passes, once per row (as codegen/llvm's compute_uniform).
  void compute_uniform(int stage) {
    const size_t n = k_.exprs.size();
    std::vector<int32_t> ready;
    for (size_t i = 0; i < n; ++i) {
      if (s_.live[i] && s_.uniform[i] && s_.stage[i] <= stage && !known_[i] && !is_reduction(k_.exprs[i].op)) {
        ready.push_back(static_cast<int32_t>(i));
      }
    }
    if (!ready.empty()) {
      const std::vector<bool> need = needed_for(k_, ready, known_);
      std::vector<bool> now(n, false);
      for (size_t i = 0; i < n; ++i) now[i] = need[i] && !known_[i];
      // Row-scope values are named u<i>: mark them known as they are printed.
      for (size_t i = 0; i < n; ++i) {
        if (!now[i]) continue;
        const ExprPrinter p = printer();
        out_ << "    const " << register_type(k_.exprs[i].dtype) << " u" << i << " = " << p.value(static_cast<int32_t>(i))
             << ";\n";
        known_[i] = true;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const Expr& e = k_.exprs[i];
      if (e.op != ExprOp::Div || !s_.live[i] || s_.uniform[i]) continue;
      const size_t d = static_cast<size_t>(e.b);
      if (known_[d] && !recip_[d]) {
        const bool dbl = k_.exprs[d].dtype == DType::Float64;
        out_ << "    const " << register_type(k_.exprs[d].dtype) << " r" << d << " = "
             << (dbl ? "__ddiv_rn(1.0, u" : "__fdiv_rn(1.0f, u") << d << ");\n";
        recip_[d] = true;
      }
    }
  }

  const Kernel& k_;
  RowSchedule s_;
  std::vector<bool> known_, recip_;
  std::ostringstream out_;
};


std::string kernel_text(const Kernel& k) {
  KILN_CHECK(!k.name.empty(), "codegen/cuda: the kernel has no name yet");
  return k.rows ? RowPrinter(k).print() : pointwise_source(k);
}

}  // namespace

CudaKernelSource print_cuda_kernel(const Kernel& k) {
  CudaKernelSource out;
  out.source = cuda_module_source({k});
  out.entry_i32 = k.name + "_i32";
  out.entry_i64 = k.name + "_i64";
  const int64_t pointers = std::max<int64_t>(1, static_cast<int64_t>(k.input_dtypes.size() + k.output_dtypes.size()));
  const int64_t r = std::max(1, k.rank);
  out.argument_words =
      k.rows ? pointers + 2
             : pointers + 1 + r + std::max<int64_t>(1, static_cast<int64_t>(k.input_dtypes.size()) * r);
  return out;
}

std::string cuda_module_source(const std::vector<Kernel>& kernels) {
  std::string s = cuda_prelude();
  for (const Kernel& k : kernels) s += "\n" + kernel_text(k);
  return s;
}

}  // namespace kiln::codegen::cuda
