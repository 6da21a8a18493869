// One parallel loop over a multi-tensor step's members (MultiTensorRun.h).
#include "runtime/MultiTensorRun.h"

#include <algorithm>

#include "eager/kernels/Parallel.h"

namespace kiln::runtime {

void run_multi_tensor(codegen::KernelFn fn, const std::vector<MultiTensorMember>& members) {
  std::vector<int64_t> start(members.size() + 1, 0);  // member m's elements are [start[m], start[m + 1])
  for (size_t m = 0; m < members.size(); ++m) start[m + 1] = start[m] + members[m].numel;
  const int64_t total = start.back();
  if (total == 0) return;
  // A contiguous kernel reads its iteration size and unit strides from here; they are not per member.
  static const int64_t kUnitStrides[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  parallel_for(0, total, kGrainSize, [&](int64_t begin, int64_t end) {
    // The member holding `begin` (skipping empty ones: the last start not after it).
    size_t m = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), begin) - start.begin()) - 1;
    while (begin < end && m < members.size()) {
      const int64_t stop = std::min(end, start[m + 1]);
      if (stop > begin) {
        const int64_t sizes[1] = {members[m].numel};
        fn(members[m].data, sizes, kUnitStrides, begin - start[m], stop - start[m]);
      }
      begin = std::max(begin, stop);
      ++m;
    }
  });
}

}  // namespace kiln::runtime
