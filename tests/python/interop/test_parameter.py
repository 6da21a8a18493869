"""nn.Parameter and tensor copying/pickling, against torch."""

import copy
import pickle

import numpy as np
import torch

import kiln
from kiln.nn.parameter import Parameter


def test_parameter_is_a_tensor_that_requires_grad_and_shares_memory():
    base = kiln.ones(2, 3)
    p = Parameter(base)
    assert isinstance(p, kiln.Tensor) and isinstance(p, Parameter)
    assert p.requires_grad and p.is_leaf
    assert p.data_ptr() == base.data_ptr()
    assert not Parameter(kiln.ones(1), requires_grad=False).requires_grad
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2, 3))).replace("torch.", "kiln.")


def test_deepcopy_and_pickle_keep_type_values_and_flag():
    p = Parameter(kiln.tensor([[1.0, 2.0], [3.0, 4.0]]))
    for clone in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(clone) is Parameter and clone.requires_grad
        assert clone.tolist() == p.tolist() and clone.data_ptr() != p.data_ptr()
    t = kiln.tensor([1, 2, 3], dtype=kiln.int32)
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.dtype is kiln.int32 and t2.tolist() == [1, 2, 3]
    shared = {"a": p, "b": p}
    copied = copy.deepcopy(shared)
    assert copied["a"] is copied["b"]


def test_parameter_gradients_accumulate():
    w = Parameter(kiln.tensor(np.ones((2, 3), dtype=np.float32)))
    kiln.linear(kiln.ones(4, 3), w).backward(kiln.ones(4, 2))
    assert w.grad.tolist() == [[4.0] * 3] * 2
