// flip and roll: layout copies whose source is read backwards (flip: negative
// strides from the last element) or in rotated blocks (roll: two blocks per
// rolled dim). See Note [Layout copies] in copy/ShapeCopy.h.
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// out[j] = src[(j + start[d]) mod n] along every dim d: 2^k blocks for k rolled dims.
void roll_into(const Tensor& out, const Tensor& src, IntArrayRef starts) {
  const int64_t ndim = src.dim();
  const int64_t itemsize = src.itemsize();
  std::vector<int64_t> rolled;
  for (int64_t d = 0; d < ndim; ++d) {
    if (starts[d] != 0) rolled.push_back(d);
  }
  const int64_t blocks = int64_t{1} << rolled.size();
  for (int64_t mask = 0; mask < blocks; ++mask) {
    DimVector sizes(src.sizes());
    int64_t dst_offset = 0;
    int64_t src_offset = 0;
    for (size_t k = 0; k < rolled.size(); ++k) {
      const int64_t d = rolled[k];
      const int64_t n = src.sizes()[d];
      const int64_t s = starts[d];
      if ((mask >> k) & 1) {  // out [n - s, n) <- src [0, s)
        sizes[d] = s;
        dst_offset += (n - s) * out.strides()[d];
      } else {  // out [0, n - s) <- src [s, n)
        sizes[d] = n - s;
        src_offset += s * src.strides()[d];
      }
    }
    copy_strided(static_cast<char*>(out.data_ptr()) + dst_offset * itemsize, out.strides(),
                 static_cast<const char*>(src.data_ptr()) + src_offset * itemsize, src.strides(), sizes, itemsize);
  }
}

/// (n - shift) mod n, in [0, n).
int64_t roll_start(int64_t n, int64_t shift) {
  int64_t start = (n - shift) % n;
  return start < 0 ? start + n : start;
}

}  // namespace

Tensor flip_cpu(const Tensor& self, IntArrayRef dims) {
  const auto flipped = dims_to_bitset(dims, self.dim());
  Tensor result = empty_like_format(self, MemoryFormat::Preserve);
  if (result.numel() == 0 || result.impl()->is_meta()) return result;  // the checks above are the meta function
  DimVector src_strides(self.strides());
  const char* src = static_cast<const char*>(self.data_ptr());
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!flipped[static_cast<size_t>(d)] || self.sizes()[d] < 2) continue;
    src += (self.sizes()[d] - 1) * self.strides()[d] * self.itemsize();
    src_strides[d] = -self.strides()[d];
  }
  copy_strided(static_cast<char*>(result.data_ptr()), result.strides(), src, src_strides, self.sizes(),
               self.itemsize());
  return result;
}

Tensor roll_cpu(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  if (dims.size() != 1 || shifts.size() != 1) {
    KILN_CHECK(!shifts.empty(), "`shifts` required");
    if (dims.empty() && shifts.size() == 1) {  // roll the flattened tensor
      Tensor out = empty(self.sizes(), self.dtype(), self.device());
      if (self.numel() == 0 || out.impl()->is_meta()) return out;
      const Tensor flat_src = kiln::view(contiguous_values(self), {self.numel()});
      const Tensor flat_out = kiln::view(out, {self.numel()});
      const int64_t start = roll_start(self.numel(), shifts[0]);
      roll_into(flat_out, flat_src, IntArrayRef(&start, 1));
      return out;
    }
    KILN_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
               ", dims:", dims.size());
  }
  if (self.numel() == 0) return empty_like_format(self, MemoryFormat::Preserve);
  // Shifts along one dim add up (PyTorch rolls once per listed dim).
  DimVector total_shift(static_cast<size_t>(self.dim()), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    (void)self.size(dims[i]);  // PyTorch's IndexError for a bad dim (0-dim tensors included)
    total_shift[wrap_dim(dims[i], self.dim())] += shifts[i];
  }
  DimVector starts(static_cast<size_t>(self.dim()), 0);
  for (int64_t d = 0; d < self.dim(); ++d) starts[d] = roll_start(self.sizes()[d], total_shift[d]);
  Tensor result = empty(self.sizes(), self.dtype(), self.device());
  if (result.impl()->is_meta()) return result;  // the checks above are the meta function
  roll_into(result, self, starts);
  return result;
}

}  // namespace kiln::native
