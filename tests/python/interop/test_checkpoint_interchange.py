"""kiln.save / kiln.load against torch.save / torch.load, both ways: state_dicts
(with tied weights), optimizers, whole modules, shared storages and views,
every dtype, numpy arrays and the small torch objects a checkpoint carries."""

import io
import pickle

import numpy as np
import pytest
import torch

import kiln

DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64", "int32", "int16", "int8",
          "uint8", "bool"]


def kiln_to_torch(obj, **load_args):
    buf = io.BytesIO()
    kiln.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_args)


def torch_to_kiln(obj, **load_args):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return kiln.load(buf, **load_args)


def kiln_to_kiln(obj, **load_args):
    buf = io.BytesIO()
    kiln.save(obj, buf)
    buf.seek(0)
    return kiln.load(buf, **load_args)


def values(t):
    """A tensor of either library as a numpy array (bfloat16 widened to float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    t = t.detach()
    return (t.float() if t.dtype is kiln.bfloat16 else t).numpy()


class KilnTiedNet(kiln.nn.Module):
    """A small CNN + MLP with an embedding tied to the output layer."""

    def __init__(self):
        super().__init__()
        self.conv = kiln.nn.Conv2d(1, 4, 3)
        self.bn = kiln.nn.BatchNorm2d(4)
        self.embed = kiln.nn.Embedding(10, 4)
        self.out = kiln.nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight


class TorchTiedNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.embed = torch.nn.Embedding(10, 4)
        self.out = torch.nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight


def test_kiln_state_dict_loads_in_torch_with_weights_only_and_keeps_ties():
    net = KilnTiedNet()
    net.bn.running_mean.add_(1.5)
    sd = kiln_to_torch(net.state_dict(), weights_only=True)
    assert list(sd) == list(net.state_dict())
    for key, value in net.state_dict().items():
        np.testing.assert_array_equal(values(sd[key]), values(value))
    assert sd["embed.weight"].untyped_storage().data_ptr() == sd["out.weight"].untyped_storage().data_ptr()
    tnet = TorchTiedNet()
    tnet.load_state_dict(sd)
    np.testing.assert_array_equal(tnet.bn.running_mean.numpy(), net.bn.running_mean.numpy())
    assert sd["bn.num_batches_tracked"].dtype == torch.int64


def test_torch_state_dict_loads_in_kiln_and_keeps_ties():
    tnet = TorchTiedNet()
    sd = torch_to_kiln(tnet.state_dict())
    assert list(sd) == list(tnet.state_dict())
    for key, value in tnet.state_dict().items():
        np.testing.assert_array_equal(values(sd[key]), values(value))
    assert sd["embed.weight"].data_ptr() == sd["out.weight"].data_ptr()
    net = KilnTiedNet()
    net.load_state_dict(sd)
    np.testing.assert_array_equal(net.conv.weight.detach().numpy(), tnet.conv.weight.detach().numpy())


@pytest.mark.parametrize("direction", ["kiln_to_torch", "torch_to_kiln"])
def test_adam_state_dict_crosses_over_and_training_continues(direction):
    kmodel, tmodel = kiln.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    tmodel.load_state_dict(kiln_to_torch(kmodel.state_dict()))
    kopt, topt = kiln.optim.Adam(kmodel.parameters(), lr=0.1), torch.optim.Adam(tmodel.parameters(), lr=0.1)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    for _ in range(2):
        for model, opt, lib in ((kmodel, kopt, kiln), (tmodel, topt, torch)):
            opt.zero_grad()
            model(lib.tensor(x)).pow(2).sum().backward()
            opt.step()
    if direction == "kiln_to_torch":
        state = kiln_to_torch(kopt.state_dict(), weights_only=True)
        topt.load_state_dict(state)
        assert torch.is_tensor(state["state"][0]["step"]) and float(state["state"][0]["step"]) == 2.0
    else:
        state = torch_to_kiln(topt.state_dict())
        kopt.load_state_dict(state)
        assert float(state["state"][0]["step"]) == 2.0
    for k_param, t_param in zip(kmodel.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(values(k_param), values(t_param), rtol=1e-4, atol=1e-5)
    for model, opt, lib in ((kmodel, kopt, kiln), (tmodel, topt, torch)):
        opt.zero_grad()
        model(lib.tensor(x)).pow(2).sum().backward()
        opt.step()
    for k_param, t_param in zip(kmodel.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(values(k_param), values(t_param), rtol=1e-4, atol=1e-5)


def test_whole_kiln_module_round_trips_with_weights_only_false(tmp_path):
    net = kiln.nn.Sequential(kiln.nn.Conv2d(1, 2, 3), kiln.nn.ReLU(), kiln.nn.Flatten(), kiln.nn.Linear(8, 3))
    kiln.save(net, tmp_path / "net.pt")
    back = kiln.load(tmp_path / "net.pt", weights_only=False)
    assert type(back) is kiln.nn.Sequential and isinstance(back[0].weight, kiln.nn.Parameter)
    x = kiln.randn(2, 1, 4, 4)
    np.testing.assert_array_equal(values(back(x)), values(net(x)))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load 'kiln.nn.modules.container.Sequential'"):
        kiln.load(tmp_path / "net.pt")


def test_whole_torch_module_loads_as_kiln_module():
    tnet = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8, 3))
    net = torch_to_kiln(tnet, weights_only=False)
    assert type(net) is kiln.nn.Sequential and type(net[0]) is kiln.nn.Conv2d
    assert type(net[0].weight) is kiln.nn.Parameter and net[0].weight.requires_grad
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(values(net(kiln.tensor(x))), values(tnet(torch.tensor(x))), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_crosses_both_ways(dtype):
    base = np.arange(-3, 9).reshape(3, 4)
    array = (base % 2 == 0) if dtype == "bool" else (np.abs(base) if dtype == "uint8" else base)
    k = kiln.tensor(array.tolist(), dtype=getattr(kiln, dtype))
    if dtype.startswith("complex"):
        k = k * kiln.tensor(1 - 2j, dtype=k.dtype)
    t = kiln_to_torch({"t": k, "view": k[1:, ::2]}, weights_only=True)
    assert t["t"].dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(values(t["t"]), values(k))
    np.testing.assert_array_equal(values(t["view"]), values(k[1:, ::2]))
    back = torch_to_kiln(t)
    assert back["t"].dtype is k.dtype
    np.testing.assert_array_equal(values(back["t"]), values(k))
    np.testing.assert_array_equal(values(back["view"]), values(k[1:, ::2]))


def test_views_keep_their_storage_offsets_strides_and_sharing():
    base = kiln.arange(24.0).view(4, 6)
    obj = {"base": base, "t": base.t(), "slice": base[1:3, 2:5], "step": base[:, ::3], "row": base[2]}
    t = kiln_to_torch(obj)
    storages = {t[key].untyped_storage().data_ptr() for key in obj}
    assert len(storages) == 1
    assert t["slice"].storage_offset() == 8 and t["slice"].stride() == (6, 1) and t["t"].stride() == (1, 6)
    for key, value in obj.items():
        np.testing.assert_array_equal(values(t[key]), values(value))
    back = torch_to_kiln(t)
    assert back["slice"].storage_offset() == 8 and back["step"].stride() == (6, 3)
    back["base"].zero_()
    assert back["row"].tolist() == [0.0] * 6  # still views of one storage
    one_record = io.BytesIO()
    kiln.save(obj, one_record)
    assert len(one_record.getvalue()) < 2048  # the 24 floats are written once, not per view


def test_parameters_buffers_and_requires_grad_cross_over():
    p = kiln.nn.Parameter(kiln.ones(2, 2))
    frozen = kiln.nn.Parameter(kiln.zeros(3), requires_grad=False)
    leaf = kiln.ones(2).requires_grad_(True)
    t = kiln_to_torch({"p": p, "frozen": frozen, "leaf": leaf, "again": p}, weights_only=True)
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad and t["again"] is t["p"]
    assert isinstance(t["frozen"], torch.nn.Parameter) and not t["frozen"].requires_grad
    assert not isinstance(t["leaf"], torch.nn.Parameter) and t["leaf"].requires_grad
    back = torch_to_kiln(t)
    assert isinstance(back["p"], kiln.nn.Parameter) and back["p"].requires_grad and back["again"] is back["p"]
    assert not back["frozen"].requires_grad and back["leaf"].requires_grad
    buffer = kiln.nn.Buffer(kiln.ones(2), persistent=False)
    assert isinstance(kiln_to_kiln({"b": buffer})["b"], kiln.nn.Buffer)
    assert isinstance(kiln_to_torch({"b": buffer}, weights_only=True)["b"], torch.nn.Buffer)


def test_torch_objects_in_a_checkpoint_map_to_kiln_objects():
    obj = {"size": kiln.Size([2, 3]), "dtype": kiln.bfloat16, "device": kiln.device("cpu"), "layout": kiln.strided,
           "bytes": b"\x00\xffab", "complex": 1 + 2j, "set": {1, 2}, "none": None, "nested": [(1, 2.5, "s")]}
    t = kiln_to_torch(obj, weights_only=True)
    assert t["size"] == torch.Size([2, 3]) and type(t["size"]) is torch.Size
    assert t["dtype"] is torch.bfloat16 and t["device"] == torch.device("cpu") and t["layout"] is torch.strided
    assert t["bytes"] == b"\x00\xffab" and t["complex"] == 1 + 2j and t["nested"] == [(1, 2.5, "s")]
    back = torch_to_kiln(t)
    assert type(back["size"]) is kiln.Size and back["dtype"] is kiln.bfloat16 and back["layout"] is kiln.strided
    assert back["device"] == kiln.device("cpu") and back == {**obj, "size": back["size"], "device": back["device"]}


def test_numpy_arrays_load_with_weights_only_false_or_allowed_globals():
    obj = {"array": np.arange(6.0).reshape(2, 3), "int32": np.arange(3, dtype=np.int32)}
    for loaded in (kiln_to_kiln(obj, weights_only=False), kiln_to_torch(obj, weights_only=False),
                   torch_to_kiln(obj, weights_only=False)):
        np.testing.assert_array_equal(loaded["array"], obj["array"])
        assert loaded["int32"].dtype == np.int32
    buf = io.BytesIO()
    kiln.save(obj, buf)
    unsafe = kiln.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue()))
    assert "numpy.ndarray" in unsafe and "numpy.dtype" in unsafe
    with pytest.raises(pickle.UnpicklingError, match="refusing to load 'numpy"):
        kiln.load(io.BytesIO(buf.getvalue()))
    reconstruct = np._core.multiarray._reconstruct
    dtype_classes = [type(obj["array"].dtype), type(obj["int32"].dtype)]  # np.dtypes.Float64DType..., as torch asks
    with kiln.serialization.safe_globals([reconstruct, np.ndarray, np.dtype, *dtype_classes]):
        loaded = kiln.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(loaded["array"], obj["array"])


def test_file_paths_written_by_torch_load_in_kiln_with_mmap(tmp_path):
    tnet = TorchTiedNet()
    torch.save(tnet.state_dict(), tmp_path / "torch.pt")
    sd = kiln.load(str(tmp_path / "torch.pt"), mmap=True)
    for key, value in tnet.state_dict().items():
        np.testing.assert_array_equal(values(sd[key]), values(value))
    kiln.save(sd, tmp_path / "kiln.pt")
    again = torch.load(tmp_path / "kiln.pt", mmap=True, weights_only=True)
    for key, value in tnet.state_dict().items():
        np.testing.assert_array_equal(values(again[key]), values(value))
