"""kiln's public functions written in Python under fuzzed calls (issue 30; fuzz/python/fuzz_python_functions.py).

Every corpus case was once a finding (an AttributeError, IndexError, KeyError, ZeroDivisionError, ... leaking
out of a function's body, or a refusal of another type than torch's) and now keeps the contract: replayed here
one by one, each against torch on the same arguments. A fixed-seed run of fresh and mutated cases runs in a
subprocess, so that a crash fails the test and names the case; KILN_LONG_TESTS=1 makes it 20,000 cases.
And the declared-signature check those fixes use (kiln._arguments.checked_signature) says torch's words."""

import json
import os
import sys
from pathlib import Path

import pytest
import torch

import kiln
from fuzz_runs import seeded_outcomes

ROOT = Path(__file__).resolve().parents[3]
FUZZ = ROOT / "fuzz" / "python"
TARGET = FUZZ / "fuzz_python_functions.py"
CORPUS = ROOT / "fuzz" / "corpus" / "python_functions"
RUNS = 20000 if os.environ.get("KILN_LONG_TESTS") == "1" else 400

sys.path.insert(0, str(FUZZ))
import fuzz_python_functions as target  # noqa: E402

ORACLE = target.Oracle(True)


def test_seeded_cases_keep_the_contract(tmp_path):
    counts = seeded_outcomes(TARGET, CORPUS, RUNS, 11, tmp_path, "current-python_functions-input.json", timeout=3600)
    assert counts.get("returned", 0) > 0 and counts.get("TypeError", 0) > 0


@pytest.mark.parametrize("path", sorted(CORPUS.iterdir()), ids=lambda p: p.stem)
def test_corpus_case_keeps_the_contract(path):
    case = json.loads(path.read_text())
    assert target.check_one(case, ORACLE) not in ("skipped",), f"{case['function']} is no longer fuzzed"


def test_every_python_level_namespace_is_fuzzed():
    names = set(target.FUNCTIONS)
    assert {"kiln.diagflat", "kiln.nn.functional.pad", "kiln.linalg.norm", "kiln.fft.irfftn",
            "kiln.special.ndtr", "kiln.autograd.grad"} <= names
    assert len(names) > 500


def _t(lib):
    return lib.ones(3, 3)


# Calls a declared signature refuses, with torch's words: (call on a library, message).
DECLARED_REFUSALS = {
    "positional_tensor": (lambda lib: lib.diagflat("cpu"), "diagflat\\(\\): argument 'input' \\(position 1\\) "
                          "must be Tensor, not str"),
    "keyword_int_given_bool": (lambda lib: lib.kthvalue(_t(lib), k=True), "kthvalue\\(\\): argument 'k' must be "
                               "int, not bool"),
    "positional_int_given_float": (lambda lib: lib.diagflat(_t(lib), 1.5), "diagflat\\(\\): argument 'offset' "
                                   "\\(position 2\\) must be int, not float"),
    "tensor_named_A_spelled_input": (lambda lib: lib.linalg.tensorinv([[1.0]]), "linalg_tensorinv\\(\\): argument "
                                     "'input' \\(position 1\\) must be Tensor, not list"),
    "single_out": (lambda lib: lib.fft.irfftn(_t(lib), out=[1]), "fft_irfftn\\(\\): argument 'out' must be Tensor, "
                   "not list"),
    "tuple_out": (lambda lib: lib.linalg.eig(_t(lib), out=_t(lib)), "linalg_eig\\(\\): argument 'out' must be tuple "
                  "of Tensors, not Tensor"),
    "dtype_instead_of_tensor": (lambda lib: lib.alias_copy(lib.float32), "alias_copy\\(\\): argument 'input' "
                                "\\(position 1\\) must be Tensor, not (torch|kiln).dtype"),
    "overloads_int_or_int_list": (lambda lib: lib.dsplit(lib.ones(2, 2, 2), None), "dsplit\\(\\) received an "
                                  "invalid combination of arguments - got \\(Tensor, NoneType\\)"),
    "overloads_device": (lambda lib: lib.kaiser_window(5, device=3.5), "kaiser_window\\(\\) received an invalid "
                         "combination of arguments - got \\(int, device=float\\)"),
    "generator": (lambda lib: lib.poisson(_t(lib), _t(lib)), "poisson\\(\\): argument 'generator' \\(position 2\\) "
                  "must be (torch|kiln).Generator, not Tensor"),
    "int_list_refuses_a_tensor": (lambda lib: lib.nn.functional.pad(lib.ones(2), lib.tensor([1, 1])),
                                  "pad\\(\\): argument 'pad' \\(position 2\\) must be tuple of ints, not Tensor"),
    "missing_argument_before_kinds": (lambda lib: lib.nn.functional.max_pool3d(lib.ones(1, 1, 2, 2, 2), dilation=2**63),
                                      "max_pool3d\\(\\) missing .*required .*argument: 'kernel_size'"),
    "int_list_first_element_kind": (lambda lib: lib.nn.functional.pad(lib.ones(2), [1.5, 1]),
                                    "pad\\(\\): argument 'pad' \\(position 2\\) must be tuple of ints, but found "
                                    "element of type float at pos 0"),
    "int_list_later_element_unpacked": (lambda lib: lib.nn.functional.pad(lib.ones(2), [1, None]),
                                        "pad\\(\\): argument 'pad' failed to unpack the object at pos 2 with error "
                                        "\"type must be tuple of ints,but got NoneType\""),
    "int_list_element_past_int64": (lambda lib: lib.nn.functional.avg_pool1d(lib.ones(1, 1, 4), [1, 2**64]),
                                    "avg_pool1d\\(\\): argument 'kernel_size' failed to unpack the object at pos 2 "
                                    "with error \"Overflow when unpacking long long"),
    "stft_centre_padding_mode": (lambda lib: lib.stft(lib.ones(64), 16, pad_mode=3, return_complex=True),
                                 "pad\\(\\): argument 'mode' \\(position 3\\) must be str, not int"),
    "ctc_loss_lengths_of_two_kinds": (lambda lib: lib.nn.functional.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2),
                                                                             [6, 6], lib.tensor([2, 2])),
                                      "ctc_loss\\(\\) received an invalid combination of arguments - got \\(Tensor, "
                                      "Tensor, list, Tensor, int, int, bool\\)"),
    "ctc_loss_length_past_int64": (lambda lib: lib.nn.functional.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2),
                                                                          [6, 2**64], [2, 2]),
                                   "ctc_loss\\(\\): argument 'input_lengths' failed to unpack the object at pos 2"),
    "svd_lowrank_q_past_int64": (lambda lib: lib.svd_lowrank(lib.ones(5, 4), q=2**64),
                                 "randn\\(\\): argument 'size' failed to unpack the object at pos 2 with error "
                                 "\"Overflow when unpacking long long"),
    "svd_lowrank_q_float": (lambda lib: lib.svd_lowrank(lib.ones(5, 4), q=1.5),
                            "randn\\(\\): argument 'size' failed to unpack the object at pos 2 with error \"type must "
                            "be tuple of ints,but got float\""),
    "kinds_before_int_overflow": (lambda lib: lib.nn.functional.max_pool3d(lib.ones(1, 1, 2, 2, 2), 2, dilation=2**63,
                                                                           padding=lib.ones(0)),
                                  "argument 'padding'.* must be tuple of ints, not Tensor"),
}


@pytest.mark.parametrize("name", sorted(DECLARED_REFUSALS))
def test_declared_signature_refuses_with_torchs_words(name):
    call, message = DECLARED_REFUSALS[name]
    with pytest.raises(TypeError, match=message):
        call(torch)
    with pytest.raises(TypeError, match=message):
        call(kiln)


def test_declared_signature_takes_what_torchs_parser_takes():
    t = kiln.ones(4, 4)
    assert kiln.diagflat(kiln.ones(2), kiln.tensor(1)).shape == (3, 3)  # an integer 0-dim tensor is an int
    assert kiln.kthvalue(kiln.ones(3), 1, dim=None if False else 0).values.item() == 1.0
    assert kiln.linalg.norm(t, dim=(0, 1)).item() == 4.0  # int[] takes a tuple
    assert kiln.fft.irfftn(t.to(kiln.complex64), norm=None).shape == (4, 6)  # str? takes None
    assert kiln.nn.functional.alpha_dropout(t, True, False).shape == (4, 4)  # a bool is a float


def test_an_int_past_int64_is_refused_after_every_kind_matched():
    for lib in (torch, kiln):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            lib.bartlett_window(2**64)
        with pytest.raises(TypeError, match="bartlett_window\\(\\) received an invalid combination"):
            lib.bartlett_window(2**64, requires_grad=lib.ones(1))


def test_a_device_string_is_parsed_before_the_op_runs():
    # kaiser_window of 2**31 points would compute for seconds: the malformed device stops it first, as torch's
    for lib in (torch, kiln):
        with pytest.raises(RuntimeError, match="Device string must not be empty"):
            lib.kaiser_window(2**31, device="")


def test_declared_kinds_take_what_torchs_parser_takes():
    x = kiln.ones(1, 1, 4, 4)
    assert kiln.nn.functional.pad(kiln.ones(2), [kiln.tensor([1]), 1]).shape == (4,)  # a 1-element tensor in int[]
    assert kiln.nn.functional.adaptive_max_pool2d_with_indices(x, (None, 2))[0].shape == (1, 1, 4, 2)
    assert kiln.nn.functional.adaptive_max_pool1d_with_indices(x[0], kiln.tensor([2]))[0].shape == (1, 4, 2)
    assert kiln.histogramdd(kiln.ones(4, 2), 2, range=(0.0, 1.0, 0.0, 1.0)).hist.shape == (2, 2)
    assert kiln.kaiser_window(4, device="cpu").shape == (4,)
    with pytest.raises(TypeError, match='nanmedian\\(\\) missing 1 required positional arguments: "dim"'):
        kiln.nanmedian(kiln.ones(3), keepdim=True)


def test_a_declared_signature_keeps_the_function_inspectable():
    import inspect
    assert list(inspect.signature(kiln.diagflat).parameters) == ["input", "offset"]
    assert kiln.diagflat.__name__ == "diagflat" and kiln.diagflat.__doc__ == kiln.diagflat.__wrapped__.__doc__


# Refusals whose whole text is torch's: the parser's listing of every overload, with the types it refused marked.
WHOLE_MESSAGE_REFUSALS = {
    "stft_float_n_fft": lambda lib: lib.stft(lib.ones(64), 16.0, return_complex=True),
    "stft_float_hop_length": lambda lib: lib.stft(lib.ones(64), 16, 2.5, center=False, return_complex=True),
    "stft_list_window": lambda lib: lib.stft(lib.ones(64), 16, window=[1, 2], return_complex=True),
    "ctc_loss_float_length": lambda lib: lib.nn.functional.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2), [6.0, 6], [2, 2]),
    "ctc_loss_float_blank": lambda lib: lib.nn.functional.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2), [6, 6], [2, 2],
                                                                   blank=1.5),
    "torch_ctc_loss_as_given": lambda lib: lib.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2), [6, 6], lib.tensor([2, 2])),
    "torch_ctc_loss_keyword": lambda lib: lib.ctc_loss(lib.ones(6, 2, 4), lib.ones(2, 2), [6, 6], [2, 2], 0, 1,
                                                       zero_infinity=3),
}


@pytest.mark.parametrize("name", sorted(WHOLE_MESSAGE_REFUSALS))
def test_overloaded_refusal_is_torchs_whole_message(name):
    call = WHOLE_MESSAGE_REFUSALS[name]
    with pytest.raises(TypeError) as expected:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(kiln)
    assert str(got.value) == str(expected.value)


def test_int_list_takes_a_bool_after_its_first_element():
    for lib in (torch, kiln):  # torch checks the first element's kind only, and unpacks True as 1
        assert tuple(lib.nn.functional.pad(lib.ones(1, 1, 4), [1, True]).shape) == (1, 1, 6)


def test_torch_spelled_losses_default_to_no_reduction():
    # torch's parser reads the schemas' default "at::Reduction::Mean" as the integer 0
    a, b = kiln.ones(3, 4), kiln.ones(3, 4)
    assert kiln.kl_div(a, b).shape == torch.kl_div(torch.ones(3, 4), torch.ones(3, 4)).shape == (3, 4)
    log_probs = kiln.ones(6, 2, 4).log_softmax(2)
    targets = kiln.tensor([[1, 2], [1, 1]])
    assert kiln.ctc_loss(log_probs, targets, [6, 6], [2, 2]).shape == (2,)


def test_stft_align_to_window_matches_torch():
    import numpy as np
    signal = np.random.default_rng(0).standard_normal(64)
    window = np.hanning(8)
    results = [lib.stft(lib.tensor(signal), 16, 4, 8, lib.tensor(window), center=False, return_complex=True,
                        align_to_window=True) for lib in (torch, kiln)]
    assert tuple(results[1].shape) == tuple(results[0].shape) == (9, 15)
    np.testing.assert_allclose(results[1].numpy(), results[0].numpy(), atol=1e-12)
    for lib in (torch, kiln):
        with pytest.raises(RuntimeError, match="align_to_window should only be set when center = false"):
            lib.stft(lib.ones(64), 16, align_to_window=False, return_complex=True)
