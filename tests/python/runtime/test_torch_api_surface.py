"""The public API a training script touches, kiln against torch==2.13.0,
compared mechanically (issue 28 item 5): every public name of torch's modules
that kiln's same-path module lacks is listed here, and so is every constructor
argument (by name) of an nn Module, optimizer, scheduler or data class that
kiln's lacks. The test fails both when kiln loses a name (a new gap) and when
kiln gains a listed one (take it off the list): the lists are the gaps, exactly.

Most of torch's top-level gaps are TorchScript/JIT types, quantization, sparse
and legacy storage classes; kiln.cuda's are CUDA streams, graphs and allocator
internals a CPU-only program does not call.
"""

import pytest

from torch_api_surface import MODULES, missing_names, signature_gaps

KNOWN_MISSING = {
    'torch': [
        'AVG', 'AcceleratorError', 'AggregationType', 'AliasDb', 'AnyType', 'Argument', 'ArgumentSpec', 'AwaitType',
        'BenchmarkConfig', 'BenchmarkExecutionStats', 'Block', 'BoolStorage', 'BoolType', 'BufferDict', 'ByteStorage',
        'CallStack', 'Capsule', 'CharStorage', 'ClassType', 'Code', 'CompilationUnit', 'CompleteArgumentSpec',
        'ComplexType', 'ConcreteModuleType', 'ConcreteModuleTypeBuilder', 'DeepCopyMemoTable',
        'DeserializationStorageContext', 'DeviceObjType', 'DictType', 'DisableTorchFunction',
        'DisableTorchFunctionSubclass', 'DispatchKey', 'DispatchKeySet', 'DoubleStorage', 'EnumType', 'ErrorReport',
        'Event', 'ExcludeDispatchKeyGuard', 'ExecutionPlan', 'FatalError', 'FileCheck', 'FloatStorage', 'FloatType',
        'FunctionSchema', 'Future', 'FutureType', 'Gradient', 'Graph', 'GraphExecutorState', 'IODescriptor',
        'InferredType', 'IntStorage', 'IntType', 'InterfaceType', 'JITException', 'ListType', 'LiteScriptModule',
        'LockingLogger', 'LongStorage', 'ModuleDict', 'Node', 'NoneType', 'NoopLogger', 'NumberType', 'OperatorInfo',
        'OptionalType', 'ParameterDict', 'PyObjectType', 'PyTorchFileReader', 'PyTorchFileWriter', 'RRefType', 'SUM',
        'ScriptClass', 'ScriptClassFunction', 'ScriptDict', 'ScriptDictIterator', 'ScriptDictKeyIterator',
        'ScriptFunction', 'ScriptList', 'ScriptListIterator', 'ScriptMethod', 'ScriptModule',
        'ScriptModuleSerializer', 'ScriptObject', 'ScriptObjectProperty', 'SerializationStorageContext',
        'ShortStorage', 'StaticModule', 'Stream', 'StreamObjType', 'StringType', 'SymBool', 'SymBoolType', 'SymFloat',
        'SymInt', 'SymIntType', 'Tag', 'TensorType', 'ThroughputBenchmark', 'TracingState', 'TupleType', 'Type',
        'TypedStorage', 'UnionType', 'UntypedStorage', 'Use', 'Value', 'bit', 'bits16', 'bits1x8', 'bits2x4',
        'bits4x2', 'bits8', 'ccol_indices_copy', 'chalf', 'choose_qparams_optimized', 'col_indices_copy', 'complex32',
        'cond', 'cpp', 'crow_indices_copy', 'cudnn_affine_grid_generator', 'cudnn_batch_norm', 'cudnn_convolution',
        'cudnn_convolution_add_relu', 'cudnn_convolution_relu', 'cudnn_convolution_transpose', 'cudnn_grid_sampler',
        'cudnn_is_acceptable', 'dequantize', 'dsmm', 'empty_quantized', 'export', 'fake_quantize_per_channel_affine',
        'fake_quantize_per_tensor_affine', 'fbgemm_linear_fp16_weight', 'fbgemm_linear_fp16_weight_fp32_activation',
        'fbgemm_linear_int8_weight', 'fbgemm_linear_int8_weight_fp32_activation', 'fbgemm_linear_quantize_weight',
        'fbgemm_pack_gemm_matrix_fp16', 'fbgemm_pack_quantized_matrix', 'float4_e2m1fn_x2', 'float8_e4m3fn',
        'float8_e4m3fnuz', 'float8_e5m2', 'float8_e5m2fnuz', 'float8_e8m0fnu', 'fork', 'from_file',
        'fused_moving_avg_obs_fake_quant', 'get_autocast_ipu_dtype', 'get_autocast_xla_dtype', 'get_device_module',
        'hsmm', 'hspmm', 'import_ir_module', 'import_ir_module_from_buffer', 'indices_copy', 'int1',
        'int2', 'int3', 'int4', 'int5', 'int6', 'int7', 'int_repr', 'is_autocast_ipu_enabled',
        'is_autocast_xla_enabled', 'merge_type_from_type_comment', 'miopen_batch_norm', 'miopen_convolution',
        'miopen_convolution_add_relu', 'miopen_convolution_relu', 'miopen_convolution_transpose', 'miopen_ctc_loss',
        'miopen_depthwise_convolution', 'miopen_rnn', 'mkldnn_adaptive_avg_pool2d', 'mkldnn_convolution',
        'mkldnn_linear_backward_weights', 'mkldnn_max_pool2d', 'mkldnn_max_pool3d', 'mkldnn_rnn_layer',
        'parse_ir', 'parse_schema', 'parse_type_comment', 'q_per_channel_axis',
        'q_per_channel_scales', 'q_per_channel_zero_points', 'q_scale', 'q_zero_point', 'qint32', 'qint8', 'qscheme',
        'quantize_per_channel', 'quantize_per_tensor', 'quantize_per_tensor_dynamic', 'quantized_batch_norm',
        'quantized_gru_cell', 'quantized_lstm_cell', 'quantized_max_pool1d', 'quantized_max_pool2d',
        'quantized_max_pool3d', 'quantized_rnn_relu_cell', 'quantized_rnn_tanh_cell', 'quint2x4', 'quint4x2',
        'quint8', 'resize_as_sparse_', 'row_indices_copy', 'saddmm', 'set_autocast_ipu_dtype',
        'set_autocast_ipu_enabled', 'set_autocast_xla_dtype', 'set_autocast_xla_enabled', 'slice_inverse', 'smm',
        'spmm', 'sspaddmm', 'sym_constrain_range',
        'sym_constrain_range_for_size', 'sym_float', 'sym_fresh_size', 'sym_int', 'sym_ite', 'sym_max', 'sym_min',
        'sym_not', 'sym_sqrt', 'sym_sum', 'thread_safe_generator', 'uint1', 'uint16', 'uint2', 'uint3', 'uint32',
        'uint4', 'uint5', 'uint6', 'uint64', 'uint7', 'unify_type_list', 'values_copy', 'view_as_complex_copy',
        'view_as_real_copy', 'wait',
    ],
    'torch.nn': [
    ],
    'torch.nn.functional': [
        'BroadcastingList1', 'BroadcastingList2', 'BroadcastingList3', 'GRID_SAMPLE_INTERPOLATION_MODES',
        'GRID_SAMPLE_PADDING_MODES', 'ScalingType', 'SwizzleType', 'TYPE_CHECKING', 'assert_int_or_pair',
        'boolean_dispatch', 'handle_torch_function', 'has_torch_function', 'has_torch_function_unary',
        'has_torch_function_variadic', 'reproducibility_notes', 'scaled_grouped_mm', 'scaled_mm',
        'sparse_support_notes', 'tf32_notes',
    ],
    'torch.nn.init': [
    ],
    'torch.nn.utils': [
    ],
    'torch.optim': [
    ],
    'torch.optim.lr_scheduler': [
    ],
    'torch.utils.data': [
        'DFIterDataPipe', 'DataChunk', 'IterDataPipe', 'MapDataPipe', '_DatasetKind',
        'argument_validation', 'functional_datapipe', 'guaranteed_datapipes_determinism', 'non_deterministic',
        'runtime_validation', 'runtime_validation_disabled',
    ],
    'torch.cuda': [
        'BFloat16Storage', 'BFloat16Tensor', 'BoolStorage', 'BoolTensor', 'ByteStorage', 'ByteTensor', 'CUDAGraph',
        'CUDAPluggableAllocator', 'CharStorage', 'CharTensor', 'ComplexDoubleStorage', 'ComplexFloatStorage',
        'CudaError', 'DeferredCudaCallError', 'DoubleStorage', 'DoubleTensor', 'ExternalStream',
        'FloatStorage', 'FloatTensor', 'GreenContext', 'HalfStorage', 'HalfTensor', 'IntStorage', 'IntTensor',
        'LongStorage', 'LongTensor', 'MemPool', 'ShortStorage', 'ShortTensor', 
        'caching_allocator_alloc', 'caching_allocator_delete', 'caching_allocator_disabled',
        'caching_allocator_enable', 'change_current_allocator', 'check_error', 'clock_rate', 'cudaStatus', 'cudart',
        'current_blas_handle', 'current_solver_handle', 'default_generators', 'device_memory_used',
        'device_of', 'get_allocator_backend', 'get_gencode_flags', 'get_per_process_memory_fraction',
        'get_stream_from_external', 'get_sync_debug_mode', 'graph', 'graph_pool_handle', 'graphs', 'has_half',
        'has_magma', 'host_memory_stats', 'host_memory_stats_as_nested_dict', 'is_current_stream_capturing',
        'jiterator', 'list_gpu_processes', 'make_graphed_callables', 'memory', 'memory_snapshot',
        'memory_stats_as_nested_dict', 'memory_usage', 'nccl', 'nvtx', 'power_draw', 'profiler',
        'random', 'reset_accumulated_host_memory_stats', 'reset_max_memory_cached', 'reset_peak_host_memory_stats',
        'set_sync_debug_mode', 'sparse', 'streams', 'temperature', 'tunable', 'use_mem_pool',
        'utilization',
    ],
    'torch.amp': [
    ],
    'torch.autograd': [
        'NestedIOFunction', 'enforce_grad_layout_policy',
    ],
    'torch.utils.checkpoint': [
        'CheckpointPolicy', 'DefaultDeviceType', 'GraphExecGroup', 'SAC_IGNORED_OPS', 'SelectiveCheckpointContext',
        'create_selective_checkpoint_contexts', 'get_device_states', 'set_device_states',
    ],
    'torch.random': [
        'thread_safe_generator',
    ],
    'torch.linalg': [
        'common_notes',
    ],
    'torch.fft': [
        'Tensor',
    ],
    'torch.special': [
    ],
    'torch.backends': [
    ],
    'torch.accelerator': [
        'Graph', 'empty_host_cache', 'get_device_capability', 'get_memory_info',
    ],
    'torch.multiprocessing': [
    ],
    'torch.serialization': [
        'check_module_version_greater_or_equal', 'default_restore_location', 'location_tag', 'mkdtemp',
        'normalize_storage_type', 'register_package', 'skip_data', 'storage_to_tensor_type', 'validate_cuda_device',
        'validate_hpu_device',
    ],
}
KNOWN_SIGNATURE_GAPS = {
    'torch.nn.RNNCellBase': ['num_chunks'],
}


@pytest.mark.parametrize("module", MODULES)
def test_missing_names_are_exactly_the_listed_gaps(module):
    missing = set(missing_names(module))
    known = set(KNOWN_MISSING[module])
    assert not missing - known, f"kiln lost names of {module}: {sorted(missing - known)}"
    assert not known - missing, f"kiln now has {sorted(known - missing)} of {module}: take them off KNOWN_MISSING"


def test_constructor_arguments_missing_are_exactly_the_listed_gaps():
    gaps = signature_gaps()
    assert gaps == KNOWN_SIGNATURE_GAPS


def test_names_training_programs_hit_are_there():
    import kiln

    for name in ("inf", "nan", "pi", "e", "newaxis", "FloatTensor", "LongTensor", "accelerator", "backends",
                 "multiprocessing"):
        assert hasattr(kiln, name), name
    assert kiln.autograd.Variable(kiln.ones(2), requires_grad=True).requires_grad
    assert isinstance(kiln.ones(1), kiln.autograd.Variable)
    with pytest.raises(RuntimeError, match="deprecated, use torch.tensor"):
        kiln.autograd.variable(1)
    stacked = kiln.utils.data.StackDataset(a=kiln.arange(3), b=kiln.arange(3) * 2)
    assert len(stacked) == 3 and stacked[1]["b"].item() == 2
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        kiln.utils.data.StackDataset(kiln.arange(3), kiln.arange(4))


def test_constructor_arguments_closed_here_behave_as_torchs():
    import torch

    import kiln

    for dims in (1, 2, 3):
        k_norm = getattr(kiln.nn, f"InstanceNorm{dims}d")(3, affine=True, bias=False)
        t_norm = getattr(torch.nn, f"InstanceNorm{dims}d")(3, affine=True, bias=False)
        assert [n for n, _ in k_norm.named_parameters()] == [n for n, _ in t_norm.named_parameters()] == ["weight"]
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and rename to `min_val`"):
        hardtanh = kiln.nn.Hardtanh(min_value=-2.0)
    assert hardtanh.min_val == -2.0 and hardtanh.max_val == 1.0
