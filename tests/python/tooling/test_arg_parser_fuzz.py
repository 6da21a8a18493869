"""The op bindings' argument parsing under fuzzed calls (issue 30; fuzz/python/fuzz_arg_parser.py):
every corpus case and a fixed-seed run of fresh and mutated cases return or raise one of the
exception types torch's parser raises, with a message — in a subprocess, so a crash fails the test
and names the case. And each Python-level method the fuzzer caught raising AttributeError on a
non-tensor argument now raises torch's TypeError, checked against torch."""

import json
from pathlib import Path

import pytest
import torch

import kiln
from fuzz_runs import seeded_outcomes

ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "fuzz" / "python" / "fuzz_arg_parser.py"
CORPUS = ROOT / "fuzz" / "corpus" / "arg_parser"
RUNS = 1500


def test_corpus_and_seeded_cases_keep_the_contract(tmp_path):
    counts = seeded_outcomes(TARGET, CORPUS, RUNS, 7, tmp_path, "current-arg_parser-input.json", timeout=600)
    assert counts.get("returned", 0) > 0 and counts.get("TypeError", 0) > 0


@pytest.mark.parametrize("path", sorted(CORPUS.iterdir()), ids=lambda p: p.name)
def test_corpus_case_is_valid_json_naming_an_op(path):
    case = json.loads(path.read_text())
    assert {"op", "method", "args", "kwargs"} <= case.keys()


def _t(lib):
    return lib.ones(3, 3)


# (call on a library, argument named in the message): calls with a non-tensor where a tensor goes.
NON_TENSOR_CALLS = {
    "cross": (lambda lib: lib.cross(_t(lib), lib.float32), "argument 'other' \\(position 2\\) must be Tensor, "
              "not (torch|kiln).dtype"),
    "diff_prepend": (lambda lib: _t(lib).diff(prepend=1.5), "argument 'prepend' must be Tensor, not float"),
    "map_": (lambda lib: _t(lib).map_((1,), lambda a, b: a), "argument 'other' \\(position 1\\) must be Tensor"),
    "resize_as_": (lambda lib: _t(lib).resize_as_(lib.float32), "argument 'the_template' \\(position 1\\)"),
    "put_": (lambda lib: _t(lib).put_([1], 2.0), "argument 'index' \\(position 1\\) must be Tensor, not list"),
    "put": (lambda lib: _t(lib).put(lib.tensor([1]), 2.0), "argument 'source' \\(position 2\\) must be Tensor"),
    "scatter_reduce_": (lambda lib: _t(lib).scatter_reduce_(0, True, _t(lib), "sum"),
                        "argument 'index' \\(position 2\\) must be Tensor, not bool"),
    "slice_scatter": (lambda lib: lib.slice_scatter(_t(lib), "x"), "argument 'src' \\(position 2\\)"),
    "diagonal_scatter": (lambda lib: lib.diagonal_scatter(_t(lib), None), "must be Tensor, not NoneType"),
    "ormqr": (lambda lib: lib.ormqr(_t(lib), True, _t(lib)), "argument 'input2' \\(position 2\\)"),
    "cholesky_solve": (lambda lib: lib.cholesky_solve(_t(lib), 3), "argument 'input2' \\(position 2\\)"),
    "triangular_solve": (lambda lib: lib.triangular_solve([1], _t(lib)), "argument 'input' \\(position 1\\)"),
    "lu_solve": (lambda lib: lib.lu_solve(_t(lib), [1], _t(lib)), "argument 'LU_data' \\(position 2\\)"),
    "linalg_lu_solve": (lambda lib: lib.linalg.lu_solve(_t(lib), [1], _t(lib)),
                        "argument 'pivots' \\(position 2\\) must be Tensor, not list"),
    "bincount_weights": (lambda lib: lib.tensor([1]).bincount(weights=(1,)),
                         "argument 'weights' must be Tensor, not tuple"),
    "prelu": (lambda lib: lib.prelu(_t(lib), 1.5), "argument 'weight' \\(position 2\\) must be Tensor, not float"),
    "prelu_method": (lambda lib: _t(lib).prelu(()), "argument 'weight' \\(position \\d\\) must be Tensor, not tuple"),
    "index_copy_index": (lambda lib: _t(lib).index_copy_(0, [0], _t(lib)),
                         "argument 'index' \\(position 2\\) must be Tensor, not list"),
}

# Where torch's message differs (an overload list), the type alone is compared.
NON_TENSOR_CALLS_TYPE_ONLY = {
    "histogram_weight": lambda lib: _t(lib).histogram(weight=5),
    "histogramdd_weight": lambda lib: lib.histogramdd(_t(lib), bins=[2, 2], weight=5),
}


@pytest.mark.parametrize("name", sorted(NON_TENSOR_CALLS_TYPE_ONLY))
def test_non_tensor_argument_raises_type_error(name):
    call = NON_TENSOR_CALLS_TYPE_ONLY[name]
    with pytest.raises(TypeError, match="."):
        call(torch)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        call(kiln)

# Calls with a bool or float where an int goes.
NON_INT_CALLS = {
    "index_copy_bool_dim": (lambda lib: _t(lib).index_copy(False, lib.tensor([0]), _t(lib)),
                            "argument 'dim' \\(position 1\\) must be int, not bool"),
    "index_copy__float_dim": (lambda lib: _t(lib).index_copy_(-1.5, lib.tensor([0]), _t(lib)),
                              "argument 'dim' \\(position 1\\) must be int, not float"),
}


@pytest.mark.parametrize("name", sorted(NON_INT_CALLS))
def test_non_int_argument_raises_torchs_type_error(name):
    call, message = NON_INT_CALLS[name]
    with pytest.raises(TypeError, match=message):
        call(torch)
    with pytest.raises(TypeError, match=message):
        call(kiln)


@pytest.mark.parametrize("name", sorted(NON_TENSOR_CALLS))
def test_non_tensor_argument_raises_torchs_type_error(name):
    call, message = NON_TENSOR_CALLS[name]
    with pytest.raises(TypeError, match=message):
        call(torch)
    with pytest.raises(TypeError, match=message):
        call(kiln)


def test_stft_window_must_be_a_tensor():
    # torch.stft passes nine arguments on to an op with two overloads: its parser lists both
    message = "stft\\(\\) received an invalid combination of arguments - got \\(Tensor, int, NoneType, NoneType, float,"
    for lib in (torch, kiln):
        with pytest.raises(TypeError, match=message):
            lib.stft(lib.ones(64), 16, window=1.5, return_complex=True)


def test_record_stream_needs_a_stream():
    with pytest.raises(TypeError, match="record_stream\\(\\): argument 's' \\(position 1\\) must be Stream, not int"):
        kiln.ones(3).record_stream(3)
