// kiln._C._distributed: the stores, ProcessGroupGloo, ProcessGroupNCCL and Work for kiln.distributed.
// Every blocking call releases the GIL: other Python threads (and the autograd
// hooks DDP runs) keep going while a process waits for its peers.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "eager/distributed/FileStore.h"
#include "eager/distributed/NcclLibrary.h"
#include "eager/distributed/ProcessGroupGloo.h"
#include "eager/distributed/ProcessGroupNccl.h"
#include "eager/distributed/TcpStore.h"
#include "python/csrc/PyTensor.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

using distributed::Bytes;
using distributed::CallMode;
using distributed::Milliseconds;
using distributed::ProcessGroupGloo;
using distributed::ProcessGroupNccl;
using distributed::ReduceOp;
using distributed::Store;
using distributed::Work;

Tensor as_tensor(const py::handle& obj) { return tensor_from_object(obj.ptr(), "kiln.distributed"); }

Bytes to_bytes(const py::handle& value) {
  if (py::isinstance<py::str>(value)) {
    const std::string s = value.cast<std::string>();
    return Bytes(s.begin(), s.end());
  }
  const std::string s = py::bytes(py::reinterpret_borrow<py::object>(value)).cast<std::string>();
  return Bytes(s.begin(), s.end());
}

py::bytes from_bytes(const Bytes& value) {
  return py::bytes(reinterpret_cast<const char*>(value.data()), value.size());
}

/// The operations ProcessGroupGloo and ProcessGroupNccl share (one signature each), bound the same
/// way on both, so kiln.distributed calls either through one code path.
template <typename PG>
void bind_collectives(py::class_<PG, std::shared_ptr<PG>>& cls) {
  // `blocking`: the caller waits at once (async_op=False; Note [Blocking calls on an idle group]).
  const auto mode_of = [](bool blocking) { return blocking ? CallMode::Blocking : CallMode::Async; };
  auto tensor_op = [mode_of](std::shared_ptr<Work> (PG::*fn)(const Tensor&, ReduceOp, CallMode)) {
    return [fn, mode_of](PG& pg, const py::handle& t, ReduceOp op, bool blocking) {
      Tensor tensor = as_tensor(t);
      py::gil_scoped_release nogil;
      return (pg.*fn)(tensor, op, mode_of(blocking));
    };
  };
  cls.def("rank", &PG::rank)
      .def("size", &PG::size)
      .def_property_readonly("timeout", &PG::timeout)
      .def("all_reduce", tensor_op(&PG::all_reduce), py::arg("tensor"), py::arg("op"), py::arg("blocking") = false)
      .def("reduce", [mode_of](PG& pg, const py::handle& t, ReduceOp op, int root, bool blocking) {
        Tensor tensor = as_tensor(t);
        py::gil_scoped_release nogil;
        return pg.reduce(tensor, op, root, mode_of(blocking));
      }, py::arg("tensor"), py::arg("op"), py::arg("root"), py::arg("blocking") = false)
      .def("broadcast", [mode_of](PG& pg, const py::handle& t, int root, bool blocking) {
        Tensor tensor = as_tensor(t);
        py::gil_scoped_release nogil;
        return pg.broadcast(tensor, root, mode_of(blocking));
      }, py::arg("tensor"), py::arg("root"), py::arg("blocking") = false)
      .def("all_gather", [mode_of](PG& pg, const py::handle& out, const py::handle& in, bool blocking) {
        Tensor o = as_tensor(out), i = as_tensor(in);
        py::gil_scoped_release nogil;
        return pg.all_gather(o, i, mode_of(blocking));
      }, py::arg("output"), py::arg("input"), py::arg("blocking") = false)
      .def("gather", [mode_of](PG& pg, const py::handle& out, const py::handle& in, int root, bool blocking) {
        Tensor o = out.is_none() ? Tensor() : as_tensor(out), i = as_tensor(in);
        py::gil_scoped_release nogil;
        return pg.gather(o, i, root, mode_of(blocking));
      }, py::arg("output"), py::arg("input"), py::arg("root"), py::arg("blocking") = false)
      .def("scatter", [mode_of](PG& pg, const py::handle& out, const py::handle& in, int root, bool blocking) {
        Tensor o = as_tensor(out), i = in.is_none() ? Tensor() : as_tensor(in);
        py::gil_scoped_release nogil;
        return pg.scatter(o, i, root, mode_of(blocking));
      }, py::arg("output"), py::arg("input"), py::arg("root"), py::arg("blocking") = false)
      .def("reduce_scatter", [mode_of](PG& pg, const py::handle& out, const py::handle& in, ReduceOp op,
                                       bool blocking) {
        Tensor o = as_tensor(out), i = as_tensor(in);
        py::gil_scoped_release nogil;
        return pg.reduce_scatter(o, i, op, mode_of(blocking));
      }, py::arg("output"), py::arg("input"), py::arg("op"), py::arg("blocking") = false)
      .def("all_to_all", [mode_of](PG& pg, const py::handle& out, const py::handle& in,
                                   std::vector<int64_t> out_counts, std::vector<int64_t> in_counts, bool blocking) {
        Tensor o = as_tensor(out), i = as_tensor(in);
        py::gil_scoped_release nogil;
        return pg.all_to_all(o, i, std::move(out_counts), std::move(in_counts), mode_of(blocking));
      }, py::arg("output"), py::arg("input"), py::arg("output_counts"), py::arg("input_counts"),
         py::arg("blocking") = false)
      .def("barrier", [mode_of](PG& pg, bool blocking) {
        py::gil_scoped_release nogil;
        return pg.barrier(mode_of(blocking));
      }, py::arg("blocking") = false)
      .def("send", [](PG& pg, const py::handle& t, int dst, uint32_t tag) {
        Tensor tensor = as_tensor(t);
        py::gil_scoped_release nogil;
        return pg.send(tensor, dst, tag);
      }, py::arg("tensor"), py::arg("dst"), py::arg("tag"))
      .def("recv", [](PG& pg, const py::handle& t, int src, uint32_t tag) {
        Tensor tensor = as_tensor(t);
        py::gil_scoped_release nogil;
        return pg.recv(tensor, src, tag);
      }, py::arg("tensor"), py::arg("src"), py::arg("tag"));
}

}  // namespace

void init_distributed(PyObject* module) {
  py::module_ m = py::reinterpret_borrow<py::module_>(module).def_submodule(
      "_distributed", "kiln.distributed's C++ side (see eager/distributed/README.md)");

  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::Sum)
      .value("AVG", ReduceOp::Avg)
      .value("PRODUCT", ReduceOp::Product)
      .value("MIN", ReduceOp::Min)
      .value("MAX", ReduceOp::Max);

  // NCCL (dlopen'ed at first use): whether it loads, and why not; its version.
  m.def("_nccl_loadable", [] {
    std::string why;
    const bool ok = distributed::nccl_loadable(&why);
    return py::make_tuple(ok, why);
  });
  m.def("_nccl_version", [] { return distributed::nccl_version(); });

  py::class_<Store, std::shared_ptr<Store>>(m, "Store")
      .def("set", [](Store& s, const std::string& key, const py::handle& value) {
        Bytes bytes = to_bytes(value);
        py::gil_scoped_release nogil;
        s.set(key, bytes);
      }, py::arg("key"), py::arg("value"))
      .def("get", [](Store& s, const std::string& key) {
        Bytes value;
        {
          py::gil_scoped_release nogil;
          value = s.get(key);
        }
        return from_bytes(value);
      }, py::arg("key"))
      .def("add", [](Store& s, const std::string& key, int64_t delta) {
        py::gil_scoped_release nogil;
        return s.add(key, delta);
      }, py::arg("key"), py::arg("amount"))
      .def("compare_set", [](Store& s, const std::string& key, const py::handle& expected, const py::handle& desired) {
        Bytes e = to_bytes(expected), d = to_bytes(desired), out;
        {
          py::gil_scoped_release nogil;
          out = s.compare_set(key, e, d);
        }
        return from_bytes(out);
      }, py::arg("key"), py::arg("expected_value"), py::arg("desired_value"))
      .def("delete_key", [](Store& s, const std::string& key) {
        py::gil_scoped_release nogil;
        return s.delete_key(key);
      }, py::arg("key"))
      .def("num_keys", [](Store& s) {
        py::gil_scoped_release nogil;
        return s.num_keys();
      })
      .def("check", [](Store& s, const std::vector<std::string>& keys) {
        py::gil_scoped_release nogil;
        return s.check(keys);
      }, py::arg("keys"))
      .def("wait", [](Store& s, const std::vector<std::string>& keys, std::optional<Milliseconds> timeout) {
        py::gil_scoped_release nogil;
        s.wait(keys, timeout.value_or(s.timeout()));
      }, py::arg("keys"), py::arg("timeout") = py::none())
      .def_property("timeout", &Store::timeout, &Store::set_timeout)
      .def("set_timeout", &Store::set_timeout, py::arg("timeout"));

  py::class_<distributed::TcpStore, Store, std::shared_ptr<distributed::TcpStore>>(m, "TCPStore")
      .def(py::init([](const std::string& host, int port, bool is_master, Milliseconds timeout) {
        py::gil_scoped_release nogil;
        return std::make_shared<distributed::TcpStore>(host, port, is_master, timeout);
      }), py::arg("host_name"), py::arg("port"), py::arg("is_master"), py::arg("timeout"))
      .def_property_readonly("host", &distributed::TcpStore::host)
      .def_property_readonly("port", &distributed::TcpStore::port);

  py::class_<distributed::FileStore, Store, std::shared_ptr<distributed::FileStore>>(m, "FileStore")
      .def(py::init([](const std::string& path, Milliseconds timeout) {
        py::gil_scoped_release nogil;
        return std::make_shared<distributed::FileStore>(path, timeout);
      }), py::arg("file_name"), py::arg("timeout"))
      .def_property_readonly("path", &distributed::FileStore::path);

  py::class_<distributed::PrefixStore, Store, std::shared_ptr<distributed::PrefixStore>>(m, "PrefixStore")
      .def(py::init([](const std::string& prefix, std::shared_ptr<Store> base) {
        return std::make_shared<distributed::PrefixStore>(prefix, std::move(base));
      }), py::arg("prefix"), py::arg("store"))
      .def_property_readonly("underlying_store", &distributed::PrefixStore::base);

  py::class_<Work, std::shared_ptr<Work>>(m, "Work")
      .def("is_completed", &Work::is_completed)
      .def("wait", [](Work& w) {
        py::gil_scoped_release nogil;
        w.wait();
      })
      .def("_source_rank", &Work::source_rank);

  py::class_<ProcessGroupGloo, std::shared_ptr<ProcessGroupGloo>> gloo(m, "ProcessGroupGloo");
  gloo.def(py::init([](std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
                       const std::string& hostname, const std::string& interface) {
        py::gil_scoped_release nogil;
        return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, timeout,
                                                  distributed::GlooDeviceAddress{hostname, interface});
      }), py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("hostname") = "",
           py::arg("interface") = "");
  bind_collectives(gloo);

  py::class_<ProcessGroupNccl, std::shared_ptr<ProcessGroupNccl>> nccl(m, "ProcessGroupNCCL");
  nccl.def(py::init([](std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout, int device) {
        py::gil_scoped_release nogil;
        return std::make_shared<ProcessGroupNccl>(std::move(store), rank, size, timeout, device);
      }), py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("device") = -1)
      .def_property_readonly("device", &ProcessGroupNccl::device);
  bind_collectives(nccl);
}

}  // namespace kiln::python
