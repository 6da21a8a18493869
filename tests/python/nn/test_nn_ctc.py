"""F.ctc_loss and nn.CTCLoss against torch: values and gradients (log_probs as
a leaf and through log_softmax, float32 and float64) for padded and
concatenated targets, lengths as tensors or lists, unbatched input, other
blanks, empty targets, impossible alignments with and without zero_infinity,
non-contiguous input, every reduction, and torch's errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, close, grad_pair
from torch_compare import assert_same_error

T, N, C = 8, 3, 5
PADDED = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 1]])
INPUT_LENGTHS, TARGET_LENGTHS = [8, 6, 7], [3, 2, 4]


def _logits(shape, dtype, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    kx = kiln.tensor(values, dtype=getattr(kiln, dtype), requires_grad=True)
    tx = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    return kx, tx


def ctc_case(dtype="float64", reduction="mean", normalise=True, targets=PADDED, input_lengths=INPUT_LENGTHS,
             target_lengths=TARGET_LENGTHS, as_tensors=True, shape=(T, N, C), noncontiguous=False, **kwargs):
    if noncontiguous:  # leaves laid out [C, N, T]; the losses see transposed views
        kx, tx = _logits(tuple(reversed(shape)), dtype)
        kx_in, tx_in = kx.permute(*reversed(range(kx.dim()))), tx.permute(*reversed(range(tx.dim())))
        assert not kx_in.is_contiguous()
    else:
        kx, tx = _logits(shape, dtype)
        kx_in, tx_in = kx, tx
    dim = len(shape) - 1
    klp = KF.log_softmax(kx_in, dim) if normalise else kx_in
    tlp = tx_in.log_softmax(dim) if normalise else tx_in

    def lengths(lib, values):
        return lib.tensor(np.asarray(values, dtype=np.int64)) if as_tensors else list(values)

    kt, tt = kiln.tensor(np.asarray(targets, dtype=np.int64)), torch.tensor(np.asarray(targets, dtype=np.int64))
    ko = KF.ctc_loss(klp, kt, lengths(kiln, input_lengths), lengths(kiln, target_lengths), reduction=reduction,
                     **kwargs)
    to = TF.ctc_loss(tlp, tt, lengths(torch, input_lengths), lengths(torch, target_lengths), reduction=reduction,
                     **kwargs)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}
    close(ko, to, **tol)
    grad_pair(ko, to)
    close(kx.grad, tx.grad, **tol)
    return ko


@pytest.mark.parametrize("normalise", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_ctc_loss_padded_targets(dtype, reduction, normalise):
    ctc_case(dtype, reduction, normalise)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_concatenated_targets_and_lists(reduction):
    flat = np.concatenate([PADDED[n, :length] for n, length in enumerate(TARGET_LENGTHS)])
    ctc_case(reduction=reduction, targets=flat)
    ctc_case(reduction=reduction, targets=flat, as_tensors=False, normalise=False)
    ctc_case(reduction=reduction, as_tensors=False)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_unbatched(reduction):
    out = ctc_case(reduction=reduction, shape=(T, C), targets=[2, 3, 3], input_lengths=[7], target_lengths=[3])
    assert tuple(out.shape) == ()


def test_ctc_loss_blank_empty_targets_and_short_inputs():
    ctc_case(blank=4, targets=np.array([[1, 2, 2, 0], [3, 1, 0, 0], [0, 0, 0, 1]]))
    ctc_case(reduction="none", target_lengths=[0, 2, 4])                      # an empty target: all blanks
    ctc_case(reduction="none", input_lengths=[1, 6, 0], target_lengths=[1, 2, 0])  # one frame; no frames
    ctc_case(reduction="none", shape=(T, N, 2), targets=np.ones((3, 4), dtype=np.int64), target_lengths=[1, 3, 3])


def test_ctc_loss_impossible_alignment_and_zero_infinity():
    repeats = np.array([[1, 1, 1, 1], [3, 1, 0, 0], [2, 2, 2, 1]])
    out = ctc_case(reduction="none", targets=repeats, input_lengths=[6, 6, 5], target_lengths=[4, 2, 3],
                   zero_infinity=True)
    assert out.detach().numpy()[0] == 0.0 and out.detach().numpy()[1] > 0  # 4 repeats need 7 frames, 6 given
    kx, tx = _logits((T, N, C), "float64")
    args = (kiln.tensor(repeats), [6, 6, 5], [4, 2, 3])
    ko = KF.ctc_loss(KF.log_softmax(kx, 2), *args, reduction="none")
    to = TF.ctc_loss(tx.log_softmax(2), torch.tensor(repeats), [6, 6, 5], [4, 2, 3], reduction="none")
    close(ko, to)
    assert np.isinf(ko.detach().numpy()[0])
    ctc_case(reduction="mean", targets=repeats, input_lengths=[6, 6, 5], target_lengths=[4, 2, 3],
             zero_infinity=True)


def test_ctc_loss_noncontiguous_and_float32():
    ctc_case("float32", noncontiguous=True)
    ctc_case("float64", "sum", normalise=False, noncontiguous=True)


def test_ctc_loss_layer():
    assert repr(kiln.nn.CTCLoss(blank=2, reduction="sum", zero_infinity=True)) == "CTCLoss()"
    kx, tx = _logits((T, N, C), "float64")
    klayer, tlayer = kiln.nn.CTCLoss(blank=4, reduction="sum"), torch.nn.CTCLoss(blank=4, reduction="sum")
    targets = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [0, 0, 0, 1]])
    ko = klayer(KF.log_softmax(kx, 2), kiln.tensor(targets), INPUT_LENGTHS, TARGET_LENGTHS)
    to = tlayer(tx.log_softmax(2), torch.tensor(targets), INPUT_LENGTHS, TARGET_LENGTHS)
    close(ko, to)
    ko.backward(), to.backward()
    close(kx.grad, tx.grad)
    assert klayer.blank == 4 and not klayer.zero_infinity


def _error(lib, log_probs_shape=(T, N, C), targets=PADDED, input_lengths=INPUT_LENGTHS,
           target_lengths=TARGET_LENGTHS, dtype="float32", **kwargs):
    log_probs = lib.zeros(*log_probs_shape, dtype=getattr(lib, dtype))
    return lib.nn.functional.ctc_loss(log_probs, lib.tensor(np.asarray(targets, dtype=np.int64)), input_lengths,
                                      target_lengths, **kwargs)


ERRORS = [
    ("input_too_long", {"input_lengths": [9, 6, 7]}, True),
    ("target_too_long", {"target_lengths": [5, 2, 4]}, True),
    ("input_lengths_size", {"input_lengths": [8, 6]}, True),
    ("target_lengths_size", {"target_lengths": [3, 2]}, True),
    ("blank_high", {"blank": 5}, True),
    ("blank_negative", {"blank": -1}, True),
    ("log_probs_dims", {"log_probs_shape": (1, T, N, C)}, False),
    ("reduction", {"reduction": "foo"}, True),
    ("concatenated_size", {"targets": [1, 2, 2, 3]}, True),
    ("negative_input_length", {"input_lengths": [-1, 6, 7]}, True),
    ("negative_target_length", {"target_lengths": [-1, 2, 4]}, True),
    ("integer_log_probs", {"dtype": "int64"}, True),
]


@pytest.mark.parametrize("name, kwargs, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_ctc_loss_errors(name, kwargs, message):
    error = assert_same_error(lambda: _error(kiln, **kwargs), lambda: _error(torch, **kwargs), message=message)
    if not message:
        assert "log_probs" in str(error)


def test_ctc_loss_length_type_errors():
    lp = kiln.zeros(T, N, C)
    tensor_lengths = kiln.tensor(np.asarray(INPUT_LENGTHS))
    float_lengths = kiln.tensor(np.asarray(INPUT_LENGTHS, dtype=np.float64))
    for fn in (lambda L, lp, il: L.nn.functional.ctc_loss(lp, L.tensor(PADDED), il, TARGET_LENGTHS),):
        assert_same_error(lambda: fn(kiln, lp, tensor_lengths),
                          lambda: fn(torch, torch.zeros(T, N, C), torch.tensor(INPUT_LENGTHS)), message=False)
    assert_same_error(
        lambda: KF.ctc_loss(lp, kiln.tensor(PADDED), float_lengths, kiln.tensor(np.asarray(TARGET_LENGTHS))),
        lambda: TF.ctc_loss(torch.zeros(T, N, C), torch.tensor(PADDED), torch.tensor(INPUT_LENGTHS).double(),
                            torch.tensor(TARGET_LENGTHS)))
    with pytest.raises(RuntimeError, match="ctc_loss: targets"):
        KF.ctc_loss(lp, kiln.tensor(np.array([[1, 7, 2, 0]] * 3)), INPUT_LENGTHS, TARGET_LENGTHS)
