// A row kernel step: checks, outputs, rows across threads.
#include "runtime/RowKernelRun.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::runtime {

namespace {

/// The calling thread's scratch block of at least `n` doubles, kept from call to call and grown as needed,
/// uninitialised: a row kernel writes each scratch element in one pass before a later pass of the same row
/// reads it (codegen/RowSchedule.h). A thread runs one row kernel chunk at a time (parallel_for bodies do
/// not nest), so one block per thread serves every kernel.
double* thread_scratch(size_t n) {
  thread_local std::unique_ptr<double[]> block;
  thread_local size_t size = 0;
  if (size < n) {
    block.reset(new double[n]);  // default-initialised: no zero fill
    size = n;
  }
  return block.get();
}

}  // namespace

bool run_row_kernel(const codegen::RowKernel& rk, codegen::KernelFn fn, const std::vector<Tensor>& inputs,
                    std::vector<Tensor>& outputs, int64_t grain) {
  const codegen::Kernel& k = rk.kernel;
  if (inputs.size() != k.input_dtypes.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.dtype() != k.input_dtypes[i]) return false;
    if (k.input_roles[i] == codegen::RowOperand::Scalar) {
      if (t.numel() != 1) return false;
      continue;
    }
    const auto& want = rk.input_sizes[i];
    if (!std::equal(t.sizes().begin(), t.sizes().end(), want.begin(), want.end()) || !t.is_contiguous()) return false;
  }
  std::vector<void*> data;
  for (const Tensor& t : inputs) data.push_back(t.data_ptr());
  outputs.clear();
  for (size_t o = 0; o < k.output_dtypes.size(); ++o) {
    outputs.push_back(kiln::empty_strided(IntArrayRef(rk.output_sizes[o]), IntArrayRef(rk.output_strides[o]),
                                          k.output_dtypes[o]));
    data.push_back(outputs.back().data_ptr());
  }
  if (rk.rows == 0 || rk.cols == 0) return true;
  const int64_t sizes[2] = {rk.rows, rk.cols};
  void** d = data.data();
  if (k.columns) {
    // A column kernel takes a piece of the columns (Note [Column reduction kernels]), cut as eager's
    // across-rows reduction cuts them: one piece per thread, a multiple of 64 columns, at most 4096.
    const int64_t threads = get_num_threads();
    const int64_t wanted = (rk.cols + threads - 1) / threads;
    const int64_t piece = std::min<int64_t>(4096, std::max<int64_t>(64, (wanted + 63) / 64 * 64));
    const int64_t pieces = (rk.cols + piece - 1) / piece;
    parallel_for(0, pieces, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(rk.rows * piece, 1)),
                 [&](int64_t b, int64_t e) {
      double* rows_kept = thread_scratch(static_cast<size_t>(rk.scratch_rows * piece));
      for (int64_t p = b; p < e; ++p) {
        fn(d, sizes, reinterpret_cast<const int64_t*>(rows_kept), p * piece, std::min(rk.cols, (p + 1) * piece));
      }
    });
    return true;
  }
  const size_t scratch = static_cast<size_t>(rk.scratch_rows * rk.cols);
  // Rows split as eager's row loops split theirs (softmax, layer_norm: kGrainSize elements a chunk), or by
  // the kernel's schedule (Note [Kernel schedules]).
  parallel_for(0, rk.rows, std::max<int64_t>(1, (grain > 0 ? grain : kGrainSize) / rk.cols), [&](int64_t b, int64_t e) {
    // The kernel's `strides` argument is this thread's scratch rows (codegen/RowSchedule.h).
    double* rows_kept = scratch == 0 ? nullptr : thread_scratch(scratch);
    fn(d, sizes, reinterpret_cast<const int64_t*>(rows_kept), b, e);
  });
  return true;
}

}  // namespace kiln::runtime
