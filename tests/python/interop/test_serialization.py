"""kiln.save / kiln.load, safetensors interchange, and torch checkpoints."""

import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import safetensors.numpy as stn
import torch

import kiln
from kiln.nn.parameter import Parameter
from kiln.serialization import load_file, save_file


def roundtrip(obj):
    buf = io.BytesIO()
    kiln.save(obj, buf)
    buf.seek(0)
    return kiln.load(buf)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                                   "uint8", "bool"])
def test_every_dtype_round_trips(dtype):
    t = kiln.arange(12).view(3, 4)
    t = kiln.tensor(t.tolist(), dtype=getattr(kiln, dtype))
    back = roundtrip({"t": t})["t"]
    assert back.dtype is t.dtype and back.shape == t.shape and back.tolist() == t.tolist()


def test_nested_containers_parameters_and_tied_weights(tmp_path):
    w = Parameter(kiln.ones(2, 3))
    obj = OrderedDict(weight=w, tied=w, grads=[kiln.zeros(2), None], meta={"step": 3, "lr": 0.1, "name": "adam"},
                      shape=(2, 3), view=kiln.arange(6.0).view(2, 3).transpose(0, 1))
    kiln.save(obj, tmp_path / "ckpt.kiln")
    back = kiln.load(tmp_path / "ckpt.kiln", map_location="cpu")
    assert isinstance(back, OrderedDict) and list(back) == list(obj)
    assert isinstance(back["weight"], Parameter) and back["weight"] is back["tied"]
    assert back["meta"] == {"step": 3, "lr": 0.1, "name": "adam"} and back["shape"] == (2, 3)
    assert back["view"].tolist() == obj["view"].tolist()


def test_unsafe_objects_are_refused():
    # Any picklable object saves (issue 28); loading it needs weights_only=False.
    buf = io.BytesIO()
    kiln.save({"x": object()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load 'builtins.object'"):
        kiln.load(buf)
    buf.seek(0)
    assert type(kiln.load(buf, weights_only=False)["x"]) is object
    with pytest.raises(RuntimeError, match="no CUDA device"):
        kiln.load(io.BytesIO(b""), map_location="cuda:0")


def test_safetensors_files_are_interchangeable(tmp_path):
    save_file({"x": kiln.arange(6.0).view(2, 3), "i": kiln.tensor([1, 2], dtype=kiln.int32)}, tmp_path / "a.st")
    loaded = stn.load_file(str(tmp_path / "a.st"))
    np.testing.assert_array_equal(loaded["x"], np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert loaded["i"].dtype == np.int32
    stn.save_file({"y": np.arange(4, dtype=np.float64)}, str(tmp_path / "b.st"))
    back = load_file(tmp_path / "b.st")
    assert back["y"].dtype is kiln.float64 and back["y"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert kiln.load(tmp_path / "b.st")["y"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_torch_checkpoints_load_without_torch_code(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    model[0].bias.data = model[0].bias.data.to(torch.float64).float()
    torch.save(model.state_dict(), tmp_path / "m.pt")
    sd = kiln.load(tmp_path / "m.pt")
    assert list(sd) == list(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())
    torch.save({"x": torch.arange(10)[2:8:2], "half": torch.ones(2, dtype=torch.bfloat16)}, tmp_path / "v.pt")
    v = kiln.load(tmp_path / "v.pt")
    assert v["x"].tolist() == [2, 4, 6] and v["half"].dtype is kiln.bfloat16


def test_torch_checkpoints_with_code_are_refused(tmp_path):
    torch.save({"fn": torch.nn.Linear(1, 1)}, tmp_path / "mod.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        kiln.load(tmp_path / "mod.pt")
