// kiln._C._polynomial_recurrence: the three-term recurrences of torch.special's orthogonal
// polynomials (kiln/special/_polynomials.py), run element by element as torch's CPU kernels run
// them: each element takes its own number of steps and stops early once its value is NaN.
//
// Note [Polynomial recurrences run per element]
// The Python module used to run the recurrence as whole-tensor steps (a few elementwise ops per
// step, for as many steps as the largest degree asks). A degree of 10^7 at a point where the value
// stays finite (laguerre_polynomial_l(-0.01, n) overflows only after ~10^7 steps; torch returns in
// tens of milliseconds) then took minutes. Here each step is a few scalar flops on one element, as in
// torch, and rounds as torch's CPU kernels do: their `a * q - k * p` is compiled with FMA contraction
// (fma(a, q, -(k * p))), so kiln writes that fma out, and the recurrences' values are torch's bit for
// bit (tests/python/pointwise/test_special_functions.py). The case analysis around the recurrence
// (endpoints, trigonometric forms, degree limits) stays in Python.
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <pybind11/pybind11.h>

#include "eager/kernels/cpu/creation/Factories.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyTensor.h"

// No contraction beyond the fma written out: each step rounds as torch's.
#pragma GCC optimize("fp-contract=off")

namespace py = pybind11;

namespace kiln::python {

namespace {

// The step of each form: q_{j+1} from (j, a, p = q_{j-1}, q = q_j); `a` is the per-element coefficient.
enum class Form : int { Chebyshev = 0, HermiteH = 1, HermiteHe = 2, Laguerre = 3, Legendre = 4 };

template <typename T, Form F>
void run(const T* a, const T* first, const int64_t* steps, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T ai = a[i];
    T p = T(1);
    T q = first[i];
    for (int64_t j = 1; j <= steps[i] && !std::isnan(q); ++j) {
      T next;
      if constexpr (F == Form::Chebyshev) {
        next = std::fma(ai, q, -p);
      } else if constexpr (F == Form::HermiteH) {
        next = std::fma(ai, q, -(static_cast<T>(2 * j) * p));
      } else if constexpr (F == Form::HermiteHe) {
        next = std::fma(ai, q, -(static_cast<T>(j) * p));
      } else if constexpr (F == Form::Laguerre) {
        next = std::fma(static_cast<T>(j + j) + ai, q, -(static_cast<T>(j) * p)) / static_cast<T>(j + 1);
      } else {
        next = std::fma(static_cast<T>(2 * j + 1) * ai, q, -(static_cast<T>(j) * p)) / static_cast<T>(j + 1);
      }
      p = q;
      q = next;
    }
    out[i] = q;
  }
}

template <typename T>
void run_form(Form form, const T* a, const T* first, const int64_t* steps, T* out, int64_t n) {
  switch (form) {
    case Form::Chebyshev: return run<T, Form::Chebyshev>(a, first, steps, out, n);
    case Form::HermiteH: return run<T, Form::HermiteH>(a, first, steps, out, n);
    case Form::HermiteHe: return run<T, Form::HermiteHe>(a, first, steps, out, n);
    case Form::Laguerre: return run<T, Form::Laguerre>(a, first, steps, out, n);
    case Form::Legendre: return run<T, Form::Legendre>(a, first, steps, out, n);
  }
}

/// q after steps[i] steps of `form` from (p, q) = (1, first[i]), for contiguous CPU tensors of one
/// shape: a and first float32 or float64 (the same), steps int64.
py::object polynomial_recurrence(int form, py::handle a_obj, py::handle first_obj, py::handle steps_obj) {
  const Tensor& a = tensor_from_object(a_obj.ptr(), "a");
  const Tensor& first = tensor_from_object(first_obj.ptr(), "first");
  const Tensor& steps = tensor_from_object(steps_obj.ptr(), "steps");
  KILN_CHECK(form >= 0 && form <= static_cast<int>(Form::Legendre), "polynomial recurrence: unknown form ", form);
  KILN_CHECK(a.device().is_cpu() && first.device().is_cpu() && steps.device().is_cpu(),
             "polynomial recurrence: CPU tensors only");
  KILN_CHECK(a.is_contiguous() && first.is_contiguous() && steps.is_contiguous(),
             "polynomial recurrence: contiguous tensors only");
  KILN_CHECK(std::ranges::equal(a.sizes(), first.sizes()) && std::ranges::equal(a.sizes(), steps.sizes()),
             "polynomial recurrence: shapes differ");
  KILN_CHECK(a.dtype() == first.dtype() && (a.dtype() == DType::Float32 || a.dtype() == DType::Float64) &&
                 steps.dtype() == DType::Int64,
             "polynomial recurrence: float32 or float64 operands and int64 steps");
  Tensor out = empty(a.sizes(), a.dtype());
  const int64_t n = a.numel();
  const auto* counts = static_cast<const int64_t*>(steps.data_ptr());
  {
    py::gil_scoped_release release;
    if (a.dtype() == DType::Float32) {
      run_form(static_cast<Form>(form), static_cast<const float*>(a.data_ptr()),
               static_cast<const float*>(first.data_ptr()), counts, static_cast<float*>(out.data_ptr()), n);
    } else {
      run_form(static_cast<Form>(form), static_cast<const double*>(a.data_ptr()),
               static_cast<const double*>(first.data_ptr()), counts, static_cast<double*>(out.data_ptr()), n);
    }
  }
  return py::reinterpret_steal<py::object>(wrap_tensor(std::move(out)));
}

}  // namespace

void init_polynomial_recurrence(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  m.def("_polynomial_recurrence", &polynomial_recurrence, py::arg("form"), py::arg("a"), py::arg("first"),
        py::arg("steps"));
}

}  // namespace kiln::python
