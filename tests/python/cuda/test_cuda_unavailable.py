"""kiln.cuda on a machine without an NVIDIA driver: is_available() is False, device_count() 0,
and every CUDA entry point raises kiln's wording of torch's RuntimeError "Found no NVIDIA
driver on your system. ..." (DESIGN.md, decision 6). The loader's own errors name the missing
library, every path tried and how to install it."""

import os
import subprocess
import sys
import textwrap

import pytest

import kiln

pytestmark = pytest.mark.skipif(kiln.cuda.is_available(), reason="no GPU: these tests need a machine without one")

NO_DRIVER = r"Found no NVIDIA driver on your system"


def test_is_available_false_and_no_devices():
    assert kiln.cuda.is_available() is False
    assert kiln.cuda.device_count() == 0
    assert kiln.cuda.is_initialized() is False


@pytest.mark.parametrize("call", [
    pytest.param(lambda: kiln.cuda.init(), id="init"),
    pytest.param(lambda: kiln.cuda.current_device(), id="current_device"),
    pytest.param(lambda: kiln.cuda.set_device(0), id="set_device"),
    pytest.param(lambda: kiln.cuda.get_device_name(), id="get_device_name"),
    pytest.param(lambda: kiln.cuda.get_device_name(0), id="get_device_name_0"),
    pytest.param(lambda: kiln.cuda.get_device_properties(0), id="get_device_properties"),
    pytest.param(lambda: kiln.cuda.get_device_capability(), id="get_device_capability"),
    pytest.param(lambda: kiln.cuda.synchronize(), id="synchronize"),
    pytest.param(lambda: kiln.cuda.Stream(), id="Stream"),
    pytest.param(lambda: kiln.cuda.current_stream(), id="current_stream"),
    pytest.param(lambda: kiln.cuda.default_stream(), id="default_stream"),
    pytest.param(lambda: kiln.cuda.Event().record(), id="Event.record"),
    pytest.param(lambda: kiln.zeros(2, device="cuda"), id="zeros_cuda"),
    pytest.param(lambda: kiln.empty(2, 3, device="cuda:1"), id="empty_cuda1"),
    pytest.param(lambda: kiln.ones(2, device=kiln.device("cuda", 0)), id="ones_device_object"),
    pytest.param(lambda: kiln.full((2,), 1.5, device="cuda"), id="full_cuda"),
    pytest.param(lambda: kiln.tensor([1.0, 2.0], device="cuda"), id="tensor_cuda"),
    pytest.param(lambda: kiln.randn(3).to("cuda"), id="to_cuda"),
    pytest.param(lambda: kiln.randn(3).to("cuda:0", kiln.float64), id="to_cuda_dtype"),
    pytest.param(lambda: kiln.randn(3).cuda(), id="cuda_method"),
    pytest.param(lambda: kiln.randn(3).cuda(1), id="cuda_method_index"),
    pytest.param(lambda: kiln.randn(3).to(device="cuda", non_blocking=True), id="to_non_blocking"),
    pytest.param(lambda: kiln.randn(3).pin_memory(), id="pin_memory"),
])
def test_entry_points_raise_no_driver(call):
    with pytest.raises(RuntimeError, match=NO_DRIVER):
        call()


def test_no_driver_message_says_what_was_tried():
    with pytest.raises(RuntimeError, match=r"(?s)Found no NVIDIA driver.*libcuda\.so\.1.*is_available\(\) is False"):
        kiln.cuda.init()


def test_queries_answer_without_raising():
    assert kiln.randn(3).is_pinned() is False
    assert kiln.cuda.memory_allocated() == 0
    assert kiln.cuda.max_memory_allocated() == 0
    assert kiln.cuda.memory_reserved() == 0
    assert kiln.cuda.memory_stats() == {}
    kiln.cuda.empty_cache()
    kiln.cuda.reset_peak_memory_stats()
    assert "cuda (no device)" in kiln.cuda.memory_summary()
    assert kiln.cuda.OutOfMemoryError is kiln.OutOfMemoryError


def test_stream_context_of_none_is_a_no_op():
    with kiln.cuda.stream(None) as s:
        assert s is None


@pytest.mark.parametrize("spec,index", [("cuda", None), ("cuda:0", 0), ("cuda:1", 1), ("cuda:15", 15)])
def test_device_strings_parse(spec, index):
    d = kiln.device(spec)
    assert d.type == "cuda" and d.index == index
    assert str(d) == spec


@pytest.mark.parametrize("spec", ["cuda:-1", "cuda:01", "cuda:x", "cuda:1:2", "gpu:0"])
def test_bad_device_strings_raise(spec):
    with pytest.raises(RuntimeError, match=r"Invalid device string|Expected one of"):
        kiln.device(spec)


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_loader_errors_name_the_missing_library_and_how_to_get_it():
    bogus = "/nonexistent/kiln-test"
    result = _run("""
        import kiln
        for name, call in (("nvrtc", kiln._C._nvrtc_version), ("cublas", kiln._C._cublas_library_path),
                           ("driver", kiln.cuda.init)):
            try:
                call()
            except RuntimeError as e:
                print(f"<{name}>{e}</{name}>")
        print("available", kiln.cuda.is_available())
    """, KILN_NVRTC_LIBRARY=f"{bogus}/libnvrtc.so.13", KILN_CUBLAS_LIBRARY=f"{bogus}/libcublas.so.13",
        KILN_CUDA_DRIVER_LIBRARY=f"{bogus}/libcuda.so.1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    nvrtc = out.split("<nvrtc>")[1].split("</nvrtc>")[0]
    assert "could not load NVRTC (libnvrtc.so.13)" in nvrtc
    assert f"{bogus}/libnvrtc.so.13" in nvrtc
    assert 'pip install "nvidia-cuda-nvrtc==13.0.*"' in nvrtc and "KILN_NVRTC_LIBRARY" in nvrtc
    cublas = out.split("<cublas>")[1].split("</cublas>")[0]
    assert "could not load cuBLAS (libcublas.so.13)" in cublas and f"{bogus}/libcublas.so.13" in cublas
    assert "nvidia-cublas" in cublas
    driver = out.split("<driver>")[1].split("</driver>")[0]
    assert driver.startswith("Found no NVIDIA driver on your system")
    assert f"{bogus}/libcuda.so.1" in driver and "KILN_CUDA_DRIVER_LIBRARY" in driver
    assert "available False" in out


def test_library_dirs_point_at_the_nvidia_wheels():
    from kiln.cuda._libraries import nvidia_wheel_lib_dirs
    dirs = kiln._C._cuda_library_dirs()
    assert dirs == nvidia_wheel_lib_dirs()
