// kiln._C's CUDA functions and the _CudaStream / _CudaEvent classes behind
// kiln.cuda (python/kiln/cuda/). Each call raises kiln's no-driver error
// (eager/cuda/DriverApi.h) on a machine without an NVIDIA driver, except the
// queries that answer "no": is_available, device_count, is_pinned.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/cuda/Cublas.h"
#include "eager/cuda/CublasLt.h"
#include "eager/cuda/CudaAllocator.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/cuda/CudaStream.h"
#include "eager/cuda/DynamicLibrary.h"
#include "eager/cuda/KernelCache.h"
#include "eager/cuda/Nvrtc.h"
#include "eager/dispatch/Dispatcher.h"
#include "eager/kernels/cuda/CudaCopy.h"
#include "eager/kernels/cuda/CudaKernels.h"
#include "eager/kernels/cuda/KernelSources.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

const Tensor& tensor_arg(const py::handle& obj, const char* what) { return tensor_from_object(obj.ptr(), what); }

py::object wrap(Tensor t) { return py::reinterpret_steal<py::object>(wrap_tensor(std::move(t))); }

py::dict stats_dict(const memory::MemoryStats& stats) {
  py::dict out;
  for (const auto& [key, value] : stats.as_flat_dict()) out[py::str(key)] = value;
  return out;
}

}  // namespace

void init_cuda(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module);
  native::register_cuda_kernels();

  m.def("_cuda_is_available", [] { return cuda::driver_available(); });
  m.def("_cuda_unavailable_reason", [] { return std::string(cuda::unavailable_reason()); });
  m.def("_cuda_require", [] { cuda::require_cuda(); });
  m.def("_cuda_device_count", [] { return cuda::device_count(); });
  m.def("_cuda_current_device", [] { return cuda::current_device(); });
  m.def("_cuda_set_device", [](int device) { cuda::set_device(device); });
  m.def("_cuda_synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    cuda::synchronize_device(device);
  });
  m.def("_cuda_get_device_properties", [](int device) {
    const cuda::DeviceProperties p = cuda::device_properties(device);
    py::dict d;
    d["name"] = p.name;
    d["major"] = p.major;
    d["minor"] = p.minor;
    d["total_memory"] = p.total_memory;
    d["multi_processor_count"] = p.multi_processor_count;
    d["max_threads_per_multi_processor"] = p.max_threads_per_multi_processor;
    d["max_threads_per_block"] = p.max_threads_per_block;
    d["warp_size"] = p.warp_size;
    d["L2_cache_size"] = p.l2_cache_size;
    d["shared_memory_per_block"] = p.shared_memory_per_block;
    d["is_integrated"] = p.is_integrated;
    d["is_multi_gpu_board"] = p.is_multi_gpu_board;
    return d;
  });

  // Libraries: where the NVIDIA wheels are, and NVRTC itself (no GPU needed).
  m.def("_cuda_add_library_dir", [](const std::string& dir) { cuda::add_library_search_dir(dir); });
  m.def("_cuda_library_dirs", [] { return cuda::library_search_dirs(); });
  m.def("_nvrtc_version", [] { return cuda::nvrtc_version(); });
  m.def("_nvrtc_library_path", [] { return cuda::nvrtc_library_path(); });
  m.def("_cublas_library_path", [] { return std::string(cuda::cublas_library_path()); });
  // "" when cuBLASLt does not load (addmm then keeps to cuBLAS: Note [addmm's bias epilogue]).
  m.def("_cublaslt_library_path", [] { return std::string(cuda::cublaslt_library_path()); });
  m.def(
      "_nvrtc_compile",
      [](const std::string& source, const std::string& name, const std::string& arch, bool ptx) {
        std::string out;
        {
          py::gil_scoped_release no_gil;
          out = cuda::nvrtc_compile(source, name, arch, ptx ? cuda::NvrtcOutput::Ptx : cuda::NvrtcOutput::Cubin);
        }
        return py::bytes(out);
      },
      py::arg("source"), py::arg("name"), py::arg("arch"), py::arg("ptx") = true);
  m.def("_cuda_kernel_modules", [] {
    // (family, module source, [kernel names]) for every template instantiation.
    py::list out;
    for (const auto& [family, kernels] : native::cuda_kernels::all_kernel_instances()) {
      py::list names;
      for (const auto& k : kernels) names.append(k.name);
      out.append(py::make_tuple(family, native::cuda_kernels::module_source(kernels), names));
    }
    return out;
  });
  m.def(
      "_cuda_check_kernel",
      [](const std::string& qualified_name, const std::string& overload) {
        // What dispatching `op` on a CUDA tensor finds, without a GPU: True when a kernel (the
        // op's CUDA kernel or a composite) serves it, else the dispatcher's NotImplementedError
        // naming the op and the 'CUDA' backend, as a call would raise it.
        const std::optional<OperatorHandle> op = Dispatcher::singleton().find_op(qualified_name, overload);
        KILN_CHECK(op.has_value(), "no operator ", qualified_name, overload.empty() ? "" : ".", overload);
        const OperatorEntry& entry = op->entry();
        if (!entry.lookup(DispatchKey::CUDA).is_kernel()) entry.report_missing_kernel(DispatchKey::CUDA);
        return true;
      },
      py::arg("qualified_name"), py::arg("overload") = "");
  m.def("_cublas_gemm_direct", [](py::handle out_obj, py::handle a_obj, py::handle b_obj) {
    // out = a @ b for contiguous 2-D CUDA tensors of one dtype, straight through cuda::gemm: the
    // "cuBLAS called directly" baseline of tests/gpu/cuda_bench.py (no checks beyond these).
    const Tensor& out = tensor_arg(out_obj, "out");
    const Tensor& a = tensor_arg(a_obj, "a");
    const Tensor& b = tensor_arg(b_obj, "b");
    KILN_CHECK(a.dim() == 2 && b.dim() == 2 && out.dim() == 2 && a.is_contiguous() && b.is_contiguous() &&
                   out.is_contiguous() && a.dtype() == b.dtype() && a.dtype() == out.dtype() && a.size(1) == b.size(0) &&
                   out.size(0) == a.size(0) && out.size(1) == b.size(1) && out.device().is_cuda(),
               "_cublas_gemm_direct: contiguous 2-D CUDA tensors of one dtype with matching shapes");
    cuda::GemmArgs g;
    g.m = b.size(1);  // row-major out = a b is column-major out^T = b^T a^T
    g.n = a.size(0);
    g.k = a.size(1);
    g.a = b.data_ptr();
    g.lda = b.size(1);
    g.b = a.data_ptr();
    g.ldb = a.size(1);
    g.c = out.data_ptr();
    g.ldc = b.size(1);
    cuda::gemm(cuda::current_stream(out.device().index()), out.dtype(), g);
  });
  m.def("_cuda_nvrtc_compile_count", [] { return cuda::nvrtc_compile_count(); });

  // Memory.
  m.def("_cuda_memory_stats", [](int device) { return stats_dict(cuda::cuda_memory_stats(device)); });
  m.def("_cuda_reset_peak_memory_stats", [](int device) { cuda::cuda_reset_peak_memory_stats(device); });
  m.def("_cuda_empty_cache", [] { cuda::cuda_empty_cache(); });
  m.def("_cuda_pin_memory", [](py::handle t) { return wrap(native::pin_memory(tensor_arg(t, "pin_memory"))); });
  m.def("_cuda_is_pinned", [](py::handle t) { return native::is_pinned(tensor_arg(t, "is_pinned")); });

  py::class_<cuda::Stream>(m, "_CudaStream")
      .def(py::init([](int device, int priority) { return cuda::Stream::create(device, priority); }),
           py::arg("device") = -1, py::arg("priority") = 0)
      .def_static("default", [](int device) { return cuda::Stream::default_stream(device); }, py::arg("device") = -1)
      .def_static("current", [](int device) { return cuda::current_stream(device); }, py::arg("device") = -1)
      .def_static("set_current", [](const cuda::Stream& s) { cuda::set_current_stream(s); })
      .def_property_readonly("device_index", &cuda::Stream::device)
      .def_property_readonly("priority", &cuda::Stream::priority)
      .def_property_readonly("cuda_stream", [](const cuda::Stream& s) { return reinterpret_cast<intptr_t>(s.handle()); })
      .def("synchronize",
           [](const cuda::Stream& s) {
             py::gil_scoped_release no_gil;
             s.synchronize();
           })
      .def("query", &cuda::Stream::query)
      .def("__eq__", [](const cuda::Stream& a, const cuda::Stream& b) { return a == b; })
      .def("__hash__", [](const cuda::Stream& s) { return py::hash(py::make_tuple(s.device(), s.id())); });

  py::class_<cuda::Event>(m, "_CudaEvent")
      .def(py::init<bool, bool>(), py::arg("enable_timing") = false, py::arg("blocking") = false)
      .def("record", &cuda::Event::record)
      .def("wait", &cuda::Event::wait)
      .def("query", &cuda::Event::query)
      .def("synchronize",
           [](const cuda::Event& e) {
             py::gil_scoped_release no_gil;
             e.synchronize();
           })
      .def("elapsed_time", &cuda::Event::elapsed_time)
      .def_property_readonly("recorded", &cuda::Event::recorded)
      .def_property_readonly("device_index", &cuda::Event::device);

  m.def("_cuda_record_stream", [](py::handle t, const cuda::Stream& s) {
    const Tensor& tensor = tensor_arg(t, "record_stream");
    KILN_CHECK(tensor.device().is_cuda(), "record_stream: expected a CUDA tensor, got one on ", tensor.device());
    cuda::record_stream(tensor.storage()->data_ptr(), s);
  });
}

}  // namespace kiln::python
