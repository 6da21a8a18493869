// add on the CPU with broadcasting, category promotion, in-place and out= forms.
#include "eager/kernels/cpu/BinaryOps.h"

#include <algorithm>

#include "eager/core/Error.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/cpu/Copy.h"
#include "eager/kernels/cpu/Factories.h"

namespace kiln::native {

namespace {

void check_alpha(DType dtype, const Scalar& alpha) {
  KILN_CHECK(!alpha.is_floating_point() || is_floating_point(dtype),
             "For integral input tensors, argument alpha must not be a floating point number.");
}

void check_castable(DType result, DType out) {
  KILN_CHECK(can_cast(result, out), "result type ", scalar_type_name(result),
             " can't be cast to the desired output type ", scalar_type_name(out));
}

/// out[i] = a[i] + alpha * b[i] over the broadcast shape, computed in `compute`
/// dtype and written as out's dtype. `out` already has the broadcast shape.
void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, DType compute) {
  const IntArrayRef shape = out.sizes();
  const DimVector sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
  const size_t nd = shape.size();
  visit_dtype(compute, [&](auto ctag) {
    using C = decltype(ctag);
    using Acc = std::conditional_t<std::is_same_v<C, Half> || std::is_same_v<C, BFloat16>, float, C>;
    const Acc alpha_v = alpha.to<Acc>();
    visit_dtype(out.dtype(), [&](auto otag) {
      using O = decltype(otag);
      visit_dtype(a.dtype(), [&](auto atag) {
        using A = decltype(atag);
        visit_dtype(b.dtype(), [&](auto btag) {
          using B = decltype(btag);
          O* po = out.data_ptr<O>();
          const A* pa = a.data_ptr<A>();
          const B* pb = b.data_ptr<B>();
          auto apply = [&](int64_t oo, int64_t oa, int64_t ob) {
            const Acc x = convert_element<Acc>(convert_element<C>(pa[oa]));
            const Acc y = convert_element<Acc>(convert_element<C>(pb[ob]));
            Acc r;
            if constexpr (std::is_same_v<Acc, bool>) {
              r = x || (alpha_v && y);
            } else {
              r = static_cast<Acc>(x + alpha_v * y);
            }
            po[oo] = convert_element<O>(convert_element<C>(r));
          };
          const int64_t n = out.numel();
          if (n == 0) return;
          DimVector index(nd, 0);
          const IntArrayRef so = out.strides();
          int64_t oo = 0, oa = 0, ob = 0;
          for (int64_t linear = 0; linear < n; ++linear) {
            apply(oo, oa, ob);
            for (size_t d = nd; d-- > 0;) {
              if (++index[d] < shape[d]) {
                oo += so[d];
                oa += sa[d];
                ob += sb[d];
                break;
              }
              oo -= (shape[d] - 1) * so[d];
              oa -= (shape[d] - 1) * sa[d];
              ob -= (shape[d] - 1) * sb[d];
              index[d] = 0;
            }
          }
        });
      });
    });
  });
}

Tensor scalar_tensor(const Scalar& s, DType dtype) { return full({}, s, dtype, Device()); }

}  // namespace

Tensor add_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  const DType dtype = result_type(self, other);
  check_alpha(dtype, alpha);
  Tensor out = empty(broadcast_shapes(self.sizes(), other.sizes()), dtype, self.device());
  add_kernel(out, self, other, alpha, dtype);
  return out;
}

Tensor add_scalar_cpu(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  const DType dtype = result_type(self, other);
  return add_cpu(self, scalar_tensor(other, dtype), alpha);
}

Tensor add_cpu_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  const DType dtype = result_type(self, other);
  check_castable(dtype, self.dtype());
  const DimVector shape = broadcast_shapes(self.sizes(), other.sizes());
  KILN_CHECK(IntArrayRef(shape).size() == self.sizes().size() &&
                 std::equal(shape.begin(), shape.end(), self.sizes().begin()),
             "output with shape ", self.sizes(), " doesn't match the broadcast shape ", shape);
  check_alpha(dtype, alpha);
  add_kernel(self, self, other, alpha, dtype);
  self.impl()->bump_version();
  return self;
}

Tensor add_out_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  const DType dtype = result_type(self, other);
  check_castable(dtype, out.dtype());
  const DimVector shape = broadcast_shapes(self.sizes(), other.sizes());
  KILN_CHECK(IntArrayRef(shape).size() == out.sizes().size() &&
                 std::equal(shape.begin(), shape.end(), out.sizes().begin()),
             "add: out= tensor has shape ", out.sizes(), " but the result has shape ", shape,
             " (resizing out= tensors is not supported yet)");
  check_alpha(dtype, alpha);
  add_kernel(out, self, other, alpha, dtype);
  out.impl()->bump_version();
  return out;
}

}  // namespace kiln::native
