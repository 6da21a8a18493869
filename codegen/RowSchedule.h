// The pass structure of a row kernel (Note [Row reduction kernels]): which
// exprs each pass over the row computes, and which values a pass keeps in a
// scratch row for the later passes instead of recomputing them (softmax's
// exp). Backend-independent: codegen/llvm lowers it; the runtime sizes the
// scratch from it.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/KernelIR.h"

namespace kiln::codegen {

struct RowSchedule {
  std::vector<int> stage;             // per expr: the pass after which it is available (Reduce*: its operand's + 1)
  std::vector<bool> uniform, live;    // per expr
  std::vector<std::vector<int32_t>> reduces;  // reduces[p - 1]: the Reduce* exprs pass p (1..) folds
  // Scratch rows: expr spilled[s] is stored to scratch row s by pass spill_pass[s] (1.. ; the pass that
  // first computes it) and read back by the later passes. Only values whose cone holds a transcendental,
  // a division or a square root are kept (recomputing the rest is cheaper than a store and a load).
  std::vector<int32_t> spilled;
  std::vector<int> spill_pass;

  [[nodiscard]] int passes() const { return static_cast<int>(reduces.size()); }
};

[[nodiscard]] RowSchedule schedule_rows(const Kernel& k);

/// Which exprs computing `targets` needs, given the exprs already `available` (not recursed into).
[[nodiscard]] std::vector<bool> needed_for(const Kernel& k, const std::vector<int32_t>& targets,
                                           const std::vector<bool>& available);

/// Bytes of scratch one thread needs per call for a row of `cols` (8 bytes per spilled element).
[[nodiscard]] int64_t row_scratch_bytes(const RowSchedule& s, int64_t cols);

}  // namespace kiln::codegen
