// The eager CUDA pointwise ops: one boxed kernel serves every overload
// (function, in-place, out=, Scalar operand) of every op in PointwiseMath.h.
//
// Note [One boxed kernel for the pointwise overloads]
// ---------------------------------------------------
// The CPU side has a generated entry point per overload around one `_into`
// kernel (eager/ops/README.md). On CUDA the overloads differ only in where the
// result goes and whether `other` is a Python number, which the schema says;
// so register_cuda_pointwise_kernels() registers one boxed kernel per
// overload, with the op's PointwiseMath row as its context, and the kernel
// reads its arguments off the stack by the schema: Tensor/Scalar operands in
// order, `alpha`, `out`, in-place when the name ends in '_'. It builds the same
// TensorIterator the CPU kernel builds (promotion, broadcasting, out= resizing
// and safe-cast checks are shared), then launches the kernel of the op's math:
// generated from the compiler's table where it covers the dtypes, else the
// op's template (Note [Eager CUDA pointwise math from the compiler's table],
// PointwiseMath.h).
#include <optional>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/dispatch/Dispatcher.h"
#include "eager/dispatch/Library.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/UnaryOps.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/CudaLaunch.h"
#include "eager/kernels/cuda/PointwiseMath.h"

namespace kiln::native {

namespace {

using cuda_kernels::PointwiseKind;
using cuda_kernels::KernelInstance;
using cuda_kernels::PointwiseMath;

/// The generated kernel of the table's math for these dtypes (PointwiseMath.h), if the generator covers them.
std::optional<KernelInstance> generated_kernel(const PointwiseMath& math, DType in, DType out,
                                               const std::optional<Scalar>& alpha, const std::string& approximate,
                                               const std::optional<Scalar>& threshold) {
  const cuda_kernels::PointwiseKernelGenerator generate = cuda_kernels::pointwise_kernel_generator();
  if (generate == nullptr) return std::nullopt;
  cuda_kernels::PointwiseKernelRequest request;
  request.op = math.name;
  request.arity = math.arity;
  request.input = in;
  request.output = out;
  request.alpha = alpha;
  request.approximate = approximate;
  request.threshold = threshold;
  return generate(request);
}

/// `value` converted to `dtype` and back to double (a float16 threshold rounds as the CPU's does).
double scalar_in_dtype(const Scalar& value, DType dtype) {
  double result = 0;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = static_cast<double>(value.to<T>());
  });
  return result;
}

void pointwise_boxed(void* ctx, const OperatorHandle& op, DispatchKeySet /*keys*/, Stack* stack) {
  const auto* math = static_cast<const PointwiseMath*>(ctx);
  const FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t base = stack->size() - args.size();
  std::vector<Tensor> operands;
  Tensor out;
  double alpha = 1.0;
  std::optional<Scalar> alpha_scalar;
  std::string approximate;
  std::optional<Scalar> threshold;
  for (size_t i = 0; i < args.size(); ++i) {
    const SchemaArgument& a = args[i];
    IValue& v = (*stack)[base + i];
    if (a.is_out()) {
      out = v.to_tensor();
    } else if (a.name == "alpha") {
      alpha_scalar = v.to_scalar();
      alpha = alpha_scalar->to_double();
    } else if (a.name == "approximate") {
      approximate = v.to_string();
    } else if (!math->scalar_argument.empty() && a.name == math->scalar_argument) {
      threshold = v.to_scalar();
    } else if (v.is_tensor()) {
      operands.push_back(v.to_tensor());
    } else {
      operands.push_back(wrapped_scalar_tensor(v.to_scalar()));
    }
  }
  const bool inplace = schema.is_inplace();
  const ResultInto into = inplace ? ResultInto::InPlace : (out.defined() ? ResultInto::Out : ResultInto::NewTensor);
  if (inplace) out = operands[0];
  std::vector<Tensor> all = operands;
  if (out.defined()) all.push_back(out);
  all = cuda_kernels::on_one_device(all, math->name.c_str());
  if (out.defined()) out = all.back();
  const std::string& name = math->name;
  const char* cname = name.c_str();
  const int device = cuda_kernels::device_of(out.defined() ? out : all[0]);
  cuda::DeviceGuard guard(device);
  Tensor result;
  if (math->arity == 1) {
    const Tensor& self = all[0];
    TensorIterator iter = math->kind == PointwiseKind::UnaryFloat
                              ? unary_float_iterator(cname, into, out, self)
                              : (inplace ? (check_inplace(self, {}), unary_same_dtype_iterator(cname, into, out, self))
                                         : unary_same_dtype_iterator(cname, into, out, self));
    const DType in = iter.input(0).dtype();
    KILN_CHECK_NOT_IMPLEMENTED(cuda_kernels::dtype_in_set(in, math->dtypes) && cuda_kernels::is_cuda_kernel_dtype(in),
                               "\"", name, "_cuda\" not implemented for '", scalar_type_name(in), "'");
    auto ix = cuda_kernels::indexer_of<2>(iter);
    long long n = iter.numel();
    const std::optional<KernelInstance> generated =
        generated_kernel(*math, in, iter.dtype(0), alpha_scalar, approximate, threshold);
    KILN_CHECK_NOT_IMPLEMENTED(generated || approximate.empty() || approximate == "none", "gelu(approximate='",
                               approximate, "') has no CUDA kernel yet");
    cuda_kernels::launch_elementwise(generated ? *generated : cuda_kernels::unary_kernel(name, in, iter.dtype(0)),
                                     device, n, {&ix, &n});
    iter.cast_outputs();
    result = finish(iter, into);
  } else {
    const Tensor& self = all[0];
    const Tensor& other = all[1];
    TensorIterator iter = math->kind == PointwiseKind::Comparison
                              ? comparison_op_iterator(cname, into, out, self, other)
                              : binary_op_iterator(cname, into, out, self, other,
                                                   math->kind == PointwiseKind::BinaryFloat);
    const DType in = iter.input(0).dtype();
    KILN_CHECK_NOT_IMPLEMENTED(cuda_kernels::dtype_in_set(in, math->dtypes) && cuda_kernels::is_cuda_kernel_dtype(in),
                               "\"", name, "_cuda\" not implemented for '", scalar_type_name(in), "'");
    auto ix = cuda_kernels::indexer_of<3>(iter);
    long long n = iter.numel();
    if (const auto generated = generated_kernel(*math, in, iter.dtype(0), alpha_scalar, approximate, threshold)) {
      cuda_kernels::launch_elementwise(*generated, device, n, {&ix, &n});  // alpha is a constant of its source
    } else {
      // The template's one double parameter: alpha, or the op's Scalar argument in the operands' dtype
      // (rounded through it, as the CPU kernel reads threshold).
      double scalar = alpha;
      if (threshold) scalar = scalar_in_dtype(*threshold, in);
      cuda_kernels::launch_elementwise(cuda_kernels::binary_kernel(name, in, iter.dtype(0)), device, n,
                                       {&ix, &n, &scalar});
    }
    iter.cast_outputs();
    result = finish(iter, into);
  }
  stack->resize(base);
  stack->emplace_back(result);
}

/// Whether the boxed kernel can read this overload: Tensor/Scalar operands, alpha, out, gelu's approximate,
/// the row's Scalar argument (threshold_backward's threshold).
bool handled_schema(const FunctionSchema& schema, const PointwiseMath& math) {
  const int arity = math.arity;
  int operands = 0;
  for (const SchemaArgument& a : schema.arguments()) {
    if (a.is_out()) {
      if (a.type.kind != SchemaType::Kind::Tensor || a.type.is_list) return false;
    } else if (a.name == "alpha" || a.name == "approximate" ||
               (!math.scalar_argument.empty() && a.name == math.scalar_argument)) {
      continue;
    } else if ((a.type.kind == SchemaType::Kind::Tensor || a.type.kind == SchemaType::Kind::Scalar) &&
               !a.type.is_list && !a.type.optional) {
      // The first operand must be a tensor (pow.Scalar's Scalar self is another kernel).
      if (operands == 0 && a.type.kind != SchemaType::Kind::Tensor) return false;
      ++operands;
    } else {
      return false;
    }
  }
  return operands == arity && schema.returns().size() == 1;
}

/// where(condition, self, other): self and other promoted to their result type, condition bool.
Tensor where_cuda(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const auto ops = cuda_kernels::on_one_device({condition, self, other}, "where");
  KILN_CHECK(condition.dtype() == DType::Bool, "where expected condition to be a boolean tensor, but got a tensor "
             "with dtype ", scalar_type_name(condition.dtype()));
  const DType result = result_type(self, other);
  cuda_kernels::check_kernel_dtype(result, "where");
  const int device = cuda_kernels::device_of(ops[0]);
  cuda::DeviceGuard guard(device);
  auto as_result = [&](const Tensor& t) {
    return t.dtype() == result ? t : to_copy_across_devices(t, result, t.device(), false, std::nullopt);
  };
  TensorIterator iter = TensorIteratorConfig()
                            .set_op_name("where")
                            .add_output(Tensor())
                            .add_const_input(ops[0])
                            .add_const_input(as_result(ops[1]))
                            .add_const_input(as_result(ops[2]))
                            .declare_static_dtype(result)
                            .build();
  auto ix = cuda_kernels::indexer_of<4>(iter);
  long long n = iter.numel();
  cuda_kernels::launch_elementwise(cuda_kernels::where_kernel(result), device, n, {&ix, &n});
  return iter.output();
}

}  // namespace

void register_cuda_pointwise_kernels() {
  static Library* lib = new Library(Library::Kind::Impl, "kiln", DispatchKey::CUDA, __FILE__, __LINE__);
  lib->impl("where.self", &where_cuda);
  Dispatcher& d = Dispatcher::singleton();
  for (const PointwiseMath& math : cuda_kernels::pointwise_math_table()) {
    for (const std::string& name : {math.name, math.name + "_"}) {
      for (const OperatorHandle& op : d.find_overloads("kiln::" + name)) {
        if (!handled_schema(op.schema(), math)) continue;
        d.register_impl(op.name(), DispatchKey::CUDA,
                        KernelFunction::from_boxed(&pointwise_boxed, const_cast<PointwiseMath*>(&math)));
      }
    }
  }
}

}  // namespace kiln::native
