"""kiln.onnx.export on the model families of issue 28: each model exported, checked with onnx.checker, run
with onnxruntime and compared with kiln's eager forward (in eval mode); dynamic_axes run at other sizes; an op
with no ONNX mapping names itself; the model is left as it was."""

import io

import numpy as np
import pytest

import kiln
from onnx_models import DCGANDiscriminator, DCGANGenerator, GPT, MnistNet, RNNModel, TransformerModel, VAE

onnx = pytest.importorskip("onnx", reason="optional package onnx is not installed")
ort = pytest.importorskip("onnxruntime", reason="optional package onnxruntime is not installed")

TOL = dict(rtol=1e-4, atol=1e-5)


def export(model, args, **options):
    """(the ModelProto, an onnxruntime session) of ``model`` exported on ``args``."""
    buf = io.BytesIO()
    kiln.onnx.export(model, args, buf, **options)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto, ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])


def run(session, *inputs):
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def eager(model, *args):
    was = model.training
    model.eval()
    with kiln.no_grad():
        out = model(*args)
    model.train(was)
    return out


def assert_matches(outputs, expected):
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want.numpy(), **TOL)


@pytest.fixture(autouse=True)
def seed():
    kiln.manual_seed(0)


def test_mnist_cnn_matches_eager_with_a_dynamic_batch():
    model = MnistNet()
    x = kiln.randn(2, 1, 14, 14)
    proto, session = export(model, (x,), input_names=["image"], output_names=["log_probs"],
                            dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}})
    assert [i.name for i in proto.graph.input] == ["image"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    names = {i.name for i in proto.graph.initializer}
    assert {"conv1.weight", "fc2.bias", "bn.running_mean", "bn.running_var"} <= names
    assert_matches(run(session, x), [eager(model, x)])
    x5 = kiln.randn(5, 1, 14, 14)
    assert_matches(run(session, x5), [eager(model, x5)])


def test_export_leaves_the_model_as_it_was(tmp_path):
    model = MnistNet()
    model.train()
    model.dropout1.eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    kiln.onnx.export(model, (kiln.randn(3, 1, 14, 14),), tmp_path / "mnist.onnx")
    assert [m.training for m in model.modules()] == flags
    for k, v in model.state_dict().items():
        assert kiln.equal(v, before[k]), k
    session = ort.InferenceSession(str(tmp_path / "mnist.onnx"), providers=["CPUExecutionProvider"])
    x = kiln.randn(3, 1, 14, 14)
    assert_matches(run(session, x), [eager(model, x)])  # exported in eval mode: no dropout, running statistics


def test_vae_encoder_matches_eager_and_the_sample_is_a_random_normal():
    model = VAE()
    x = kiln.rand(4, 20)
    proto, session = export(model, (x,), output_names=["recon", "mu", "logvar"])
    assert "RandomNormalLike" in {n.op_type for n in proto.graph.node}
    recon, mu, logvar = run(session, x)
    _, want_mu, want_logvar = eager(model, x)
    assert_matches([mu, logvar], [want_mu, want_logvar])
    assert recon.shape == (4, 20) and ((recon > 0) & (recon < 1)).all()
    z = kiln.randn(3, 4)
    _, decoder = export(model.decode, (z,))
    with kiln.no_grad():
        assert_matches(run(decoder, z), [model.decode(z)])


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "tanh", "relu"])
def test_word_language_model_matches_eager(rnn_type):
    model = RNNModel(rnn_type)
    tokens = kiln.randint(0, 20, (5, 3))
    hidden = model.init_hidden(3)
    hidden = tuple(h + kiln.randn(h.shape) for h in hidden) if isinstance(hidden, tuple) else \
        hidden + kiln.randn(hidden.shape)
    flat_hidden = list(hidden) if isinstance(hidden, tuple) else [hidden]
    _, session = export(model, (tokens, hidden))
    out, new_hidden = eager(model, tokens, hidden)
    expected = [out] + (list(new_hidden) if isinstance(new_hidden, tuple) else [new_hidden])
    assert_matches(run(session, tokens, *flat_hidden), expected)


def test_lstm_language_model_with_dynamic_sequence_length_and_batch():
    model = RNNModel("LSTM")
    tokens = kiln.randint(0, 20, (5, 3))
    h, c = model.init_hidden(3)
    proto, session = export(model, (tokens, (h, c)), input_names=["tokens", "h0", "c0"],
                            dynamic_axes={"tokens": {0: "seq", 1: "batch"}, "h0": {1: "batch"},
                                          "c0": {1: "batch"}})
    assert "LSTM" in {n.op_type for n in proto.graph.node}
    tokens = kiln.randint(0, 20, (7, 2))
    h, c = kiln.randn(2, 2, 12), kiln.randn(2, 2, 12)
    out, (hn, cn) = eager(model, tokens, (h, c))
    assert_matches(run(session, tokens, h, c), [out, hn, cn])


def test_gru_unrolled_over_time_refuses_a_dynamic_sequence_length():
    model = RNNModel("GRU")
    tokens = kiln.randint(0, 20, (5, 3))
    with pytest.raises(kiln.onnx.OnnxExporterError, match="graph changes with the size of dynamic axis 'seq'"):
        kiln.onnx.export(model, (tokens, model.init_hidden(3)), io.BytesIO(), input_names=["tokens", "h0"],
                         dynamic_axes={"tokens": {0: "seq"}})


def test_transformer_language_model_matches_eager_with_a_dynamic_batch():
    model = TransformerModel()
    src = kiln.randint(0, 20, (6, 3))
    _, session = export(model, (src,), input_names=["src"], dynamic_axes={"src": {1: "batch"}})
    assert_matches(run(session, src), [eager(model, src)])
    src = kiln.randint(0, 20, (6, 5))
    assert_matches(run(session, src), [eager(model, src)])


def test_dcgan_generator_and_discriminator_match_eager():
    netG, netD = DCGANGenerator(), DCGANDiscriminator()
    noise = kiln.randn(2, 8, 1, 1)
    _, session = export(netG, (noise,), input_names=["z"], dynamic_axes={"z": [0]})
    fake = eager(netG, noise)
    assert fake.shape == (2, 3, 16, 16)
    assert_matches(run(session, noise), [fake])
    noise3 = kiln.randn(3, 8, 1, 1)
    assert_matches(run(session, noise3), [eager(netG, noise3)])
    _, session = export(netD, (fake,))
    assert_matches(run(session, fake), [eager(netD, fake)])


@pytest.mark.parametrize("flash", [False, True])
def test_nanogpt_matches_eager_with_dynamic_batch_and_length(flash):
    model = GPT(flash=flash)
    idx = kiln.randint(0, 30, (2, 7))
    proto, session = export(model, (idx,), input_names=["idx"], output_names=["logits"],
                            dynamic_axes={"idx": {0: "B", 1: "T"}})
    assert [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == ["B", 1, 30]
    assert_matches(run(session, idx), [eager(model, idx)[0]])
    idx = kiln.randint(0, 30, (3, 12))
    assert_matches(run(session, idx), [eager(model, idx)[0]])


def test_an_example_of_size_one_still_exports_the_general_graph():
    """Exported from a single one-token sequence, run on other batch sizes and lengths (and on size 1)."""
    model = GPT()
    _, session = export(model, (kiln.randint(0, 30, (1, 1)),), input_names=["idx"],
                        dynamic_axes={"idx": {0: "B", 1: "T"}})
    for shape in [(3, 9), (1, 1), (2, 12)]:
        idx = kiln.randint(0, 30, shape)
        assert_matches(run(session, idx), [eager(model, idx)[0]])


def test_nanogpt_training_forward_with_its_loss():
    model = GPT()
    idx, targets = kiln.randint(0, 30, (2, 6)), kiln.randint(0, 30, (2, 6))
    _, session = export(model, (idx, targets))
    logits, loss = eager(model, idx, targets)
    assert_matches(run(session, idx, targets), [logits, loss])


def test_an_op_without_an_onnx_mapping_names_the_op_its_statement_and_module():
    def model(x):
        return kiln.lgamma(x) + 1

    with pytest.raises(kiln.onnx.UnsupportedOperatorError, match=r"the op lgamma \(kiln::lgamma\) has no ONNX "
                                                                  r"mapping.*kiln::lgamma\(%0\)"):
        kiln.onnx.export(model, (kiln.randn(3),), io.BytesIO())

    class LogGamma(kiln.nn.Module):
        def forward(self, x):
            return kiln.lgamma(x)

    model = kiln.nn.Sequential(kiln.nn.Linear(3, 3), kiln.nn.Sequential(kiln.nn.ReLU(), LogGamma()))
    with pytest.raises(kiln.onnx.UnsupportedOperatorError, match=r"lgamma.*\(called in module '1.1' \(LogGamma, "
                                                                  r"forward at .*test_onnx_export.py:\d+\)\)"):
        kiln.onnx.export(model, (kiln.randn(2, 3),), io.BytesIO())


def test_an_in_place_write_into_a_view_is_refused():
    def model(x):
        y = x * 2
        y[:, 0].zero_()
        return y

    with pytest.raises(kiln.onnx.UnsupportedOperatorError, match=r"writes in place into a view \(kiln::select.int\)"):
        kiln.onnx.export(model, (kiln.randn(3, 4),), io.BytesIO())


def test_a_graph_break_is_an_export_error():
    def model(x):
        return x * float(x.sum())

    with pytest.raises(kiln.onnx.UnsupportedOperatorError, match="cannot be captured whole"):
        kiln.onnx.export(model, (kiln.randn(3),), io.BytesIO())


def test_dynamic_axes_naming_an_unknown_input_is_refused():
    with pytest.raises(ValueError, match=r"dynamic_axes names \['y'\]"):
        kiln.onnx.export(kiln.nn.Linear(3, 2), (kiln.randn(2, 3),), io.BytesIO(), input_names=["x"],
                         dynamic_axes={"y": [0]})


def test_an_unsupported_opset_is_refused():
    with pytest.raises(ValueError, match="opset_version 9 is not supported"):
        kiln.onnx.export(kiln.nn.Linear(3, 2), (kiln.randn(2, 3),), io.BytesIO(), opset_version=9)
