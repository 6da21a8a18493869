"""The modules and names real training programs touch without a GPU (issue 28
item 3), against torch's CPU build in the same process: kiln.accelerator,
kiln.backends, kiln.cuda's seeding and queries, the legacy typed constructors,
RNNBase.flatten_parameters and kiln.multiprocessing."""

import pytest
import torch

import kiln

# Calls that work (equal results) or raise on both sides, with their arguments.
CUDA_CALLS = [
    ("manual_seed", (1,)), ("manual_seed_all", (1,)), ("seed", ()), ("seed_all", ()), ("is_available", ()),
    ("device_count", ()), ("is_initialized", ()), ("get_rng_state_all", ()), ("is_bf16_supported", ()),
    ("is_tf32_supported", ()), ("empty_cache", ()), ("memory_allocated", ()), ("max_memory_allocated", ()),
    ("memory_reserved", ()), ("max_memory_reserved", ()),
    ("get_arch_list", ()), ("initial_seed", ()), ("current_device", ()), ("get_device_name", ()),
    ("get_device_capability", ()), ("get_device_properties", ()), ("synchronize", ()), ("get_rng_state", ()),
    ("init", ()), ("ipc_collect", ()), ("mem_get_info", ()), ("current_stream", ()), ("default_stream", ()),
]
ACCELERATOR_CALLS = [
    ("current_accelerator", ()), ("is_available", ()), ("device_count", ()), ("current_device_index", ()),
    ("synchronize", ()), ("empty_cache", ()), ("memory_allocated", ()),
    ("current_stream", ()), ("set_device_index", (0,)), ("memory_stats", ()),
]


def outcome(fn, args):
    try:
        value = fn(*args)
    except (RuntimeError, AssertionError):
        return "raises"
    return dict(value) if isinstance(value, dict) else value


@pytest.mark.parametrize("name,args", CUDA_CALLS, ids=[c[0] for c in CUDA_CALLS])
def test_cuda_calls_work_or_raise_where_torch_does(name, args):
    assert outcome(getattr(kiln.cuda, name), args) == outcome(getattr(torch.cuda, name), args)


@pytest.mark.parametrize("name,args", ACCELERATOR_CALLS, ids=[c[0] for c in ACCELERATOR_CALLS])
def test_accelerator_calls_work_or_raise_where_torch_does(name, args):
    assert outcome(getattr(kiln.accelerator, name), args) == outcome(getattr(torch.accelerator, name), args)


def test_accelerator_errors_and_device_index():
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        kiln.accelerator.synchronize()
    with kiln.accelerator.device_index(None):
        pass
    with pytest.raises(RuntimeError, match="Found no NVIDIA driver on your system"):
        kiln.cuda.current_device()


def test_backends_flags_and_queries_match_torch_defaults():
    kb, tb = kiln.backends, torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(kb.cudnn, name) == getattr(tb.cudnn, name), name
    assert kb.cudnn.is_available() == tb.cudnn.is_available() and kb.cudnn.version() == tb.cudnn.version()
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(kb.cuda.matmul, name) == getattr(tb.cuda.matmul, name), name
    assert kb.cuda.is_built() == tb.cuda.is_built()
    for name in ("flash_sdp_enabled", "math_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled"):
        assert getattr(kb.cuda, name)() == getattr(tb.cuda, name)(), name
    assert kb.mkldnn.enabled and kb.mkldnn.is_available() == tb.mkldnn.is_available()
    assert kb.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    assert kb.opt_einsum.is_available() is False and kb.mps.is_available() == tb.mps.is_available()


def test_backend_flags_are_kept_and_restored():
    cudnn = kiln.backends.cudnn
    cudnn.benchmark = True
    try:
        assert kiln.backends.cudnn.benchmark is True
        with cudnn.flags(enabled=False, deterministic=True):
            assert cudnn.enabled is False and cudnn.deterministic is True
        assert cudnn.enabled is True and cudnn.deterministic is False
    finally:
        cudnn.benchmark = False
    kiln.backends.cuda.matmul.allow_tf32 = True
    assert kiln.backends.cuda.matmul.allow_tf32 is True
    kiln.backends.cuda.matmul.allow_tf32 = False
    with kiln.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
        assert not kiln.backends.cuda.flash_sdp_enabled() and kiln.backends.cuda.math_sdp_enabled()
    assert kiln.backends.cuda.flash_sdp_enabled()


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                                  "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"])
def test_legacy_typed_constructors(name):
    k_cls, t_cls = getattr(kiln, name), getattr(torch, name)
    assert str(k_cls.dtype).removeprefix("kiln.") == str(t_cls.dtype).removeprefix("torch.")
    assert tuple(k_cls(2, 3).shape) == tuple(t_cls(2, 3).shape) == (2, 3)
    assert tuple(k_cls().shape) == tuple(t_cls().shape) == (0,)
    assert k_cls([1, 0]).tolist() == t_cls([1, 0]).tolist()
    assert k_cls(kiln.Size([4])).shape == (4,)
    made = k_cls([1])
    assert type(made) is kiln.Tensor and isinstance(made, k_cls) and made.dtype is k_cls.dtype
    other = kiln.LongTensor if name != "LongTensor" else kiln.FloatTensor
    assert not isinstance(made, other)


def test_rnn_flatten_parameters_is_a_no_op():
    for cls in (kiln.nn.LSTM, kiln.nn.GRU, kiln.nn.RNN):
        rnn = cls(3, 4)
        before = [p.detach().clone() for p in rnn.parameters()]
        assert rnn.flatten_parameters() is None
        assert all((a == b.detach()).all() for a, b in zip(before, rnn.parameters()))


def test_multiprocessing_is_torchs_face():
    import kiln.multiprocessing as kmp

    assert kmp.get_sharing_strategy() in kmp.get_all_sharing_strategies()
    assert kmp.Process is not None and kmp.get_context is not None
    with pytest.raises(ValueError, match="unknown sharing strategy"):
        kmp.set_sharing_strategy("file_descriptor_magic")
