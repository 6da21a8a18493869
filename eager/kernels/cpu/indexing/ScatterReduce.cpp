// scatter_reduce's steps over a device's put (ScatterReduce.h).
#include "eager/kernels/cpu/indexing/ScatterReduce.h"

#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/indexing/ScatterGatherChecks.h"
#include "kiln/generated/Functions.h"

namespace kiln::native::indexing {

void scatter_reduce_into(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& src,
                         std::string_view reduce, bool include_self, const ScatterReducePuts& puts,
                         const char* device) {
  const PutReduce put = scatter_reduction(reduce);
  check_scatter_reduce_dtype(target.dtype(), reduce, device);
  if (!include_self) {
    puts.put(target, dim, index, nullptr, reduction_identity(reduce, target.dtype()), PutReduce::Assign);
  }
  puts.put(target, dim, index, &src, std::nullopt, put);
  if (reduce != "mean") return;
  // (counted in the real dtype for a complex target: counts are real, and the division needs an order)
  const DType count_dtype = is_complex(target.dtype()) ? to_real_value_type(target.dtype()) : target.dtype();
  const Tensor counts = kiln::full(target.sizes(), Scalar(int64_t{include_self ? 1 : 0}), count_dtype, target.device());
  const Tensor ones = kiln::ones(src.sizes(), count_dtype, src.device());
  puts.put(counts, dim, index, &ones, std::nullopt, PutReduce::Add);
  puts.divide_by_counts(target, counts);
}

}  // namespace kiln::native::indexing
