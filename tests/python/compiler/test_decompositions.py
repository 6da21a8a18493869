"""decompose_composites (passes/decompose_composites.h) against kiln's eager
ops: each composite, run through the interpreter before and after the pass,
gives the same values within the dtype's tolerance, and is gone after it."""

import numpy as np
import pytest

import kiln
from kiln import _C

SHORT = {kiln.float32: "f32", kiln.float64: "f64", kiln.float16: "f16", kiln.bfloat16: "bf16"}
# Differences come from the order of operations only (float16/bfloat16 compute in
# float32 on both sides, then round once).
TOLERANCE = {kiln.float32: (1e-5, 1e-6), kiln.float64: (1e-12, 1e-13), kiln.float16: (1e-3, 1e-3),
             kiln.bfloat16: (1e-2, 1e-2)}

# (name, the composite's line with {t} for the input type and {st} for its statistics' type, extra inputs)
CASES = [
    ("gelu", "%y : {t} = kiln::gelu(%x, approximate=\"none\")", []),
    ("gelu_tanh", "%y : {t} = kiln::gelu(%x, approximate=\"tanh\")", []),
    ("silu", "%y : {t} = kiln::silu(%x)", []),
    ("softmax_last", "%y : {t} = kiln::softmax.int(%x, dim=-1, dtype=None)", []),
    ("softmax_first", "%y : {t} = kiln::softmax.int(%x, dim=0, dtype=None)", []),
    ("_softmax", "%y : {t} = kiln::_softmax(%x, dim=1, half_to_float=False)", []),
    ("log_softmax", "%y : {t} = kiln::log_softmax.int(%x, dim=-1, dtype=None)", []),
    ("_log_softmax", "%y : {t} = kiln::_log_softmax(%x, dim=0, half_to_float=False)", []),
    ("_softmax_backward_data",
     "%y : {t} = kiln::_softmax_backward_data(%g, %x, dim=-1, input_dtype={dtype})", ["g"]),
    ("_log_softmax_backward_data",
     "%y : {t} = kiln::_log_softmax_backward_data(%g, %x, dim=1, input_dtype={dtype})", ["g"]),
    ("native_layer_norm",
     "%y : {t}, %m : {st}, %r : {st} = kiln::native_layer_norm(%x, normalized_shape=[8], weight=%w, bias=%b, "
     "eps=1e-05)", ["w", "b"]),
    ("layer_norm_two_dims",
     "%y : {t} = kiln::layer_norm(%x, normalized_shape=[6, 8], weight=None, bias=None, eps=0.001, "
     "cudnn_enable=True)", []),
    ("_fused_rms_norm",
     "%y : {t}, %r : {st} = kiln::_fused_rms_norm(%x, normalized_shape=[8], weight=%w, eps=None)", ["w"]),
    ("rms_norm", "%y : {t} = kiln::rms_norm(%x, normalized_shape=[8], weight=None, eps=1e-06)", []),
    ("_norm_backward_input",
     "%y : {t} = kiln::_norm_backward_input(%g, %x, normalized_shape=[8], mean=%m, rstd=%r, weight=%w)",
     ["g", "m", "r", "w"]),
    ("_norm_backward_input_rms",
     "%y : {t} = kiln::_norm_backward_input(%g, %x, normalized_shape=[8], mean=None, rstd=%r, weight=None)",
     ["g", "r"]),
    ("dropout_eval", "%y : {t} = kiln::dropout(%x, p=0.3, train=False)", []),
    ("dropout_p0", "%y : {t} = kiln::dropout(%x, p=0.0, train=True)", []),
    ("native_dropout_eval", "%y : {t}, %mask : b8[4, 6, 8]{{48, 8, 1}} = kiln::native_dropout(%x, p=0.3, train=False)", []),
]
SIZES = [4, 6, 8]
DTYPE_NAME = {kiln.float32: "float32", kiln.float64: "float64", kiln.float16: "float16", kiln.bfloat16: "bfloat16"}


def _graph(line, dtype, extra):
    sizes = ", ".join(map(str, SIZES))
    t = f"{SHORT[dtype]}[{sizes}]{{48, 8, 1}}"
    inputs = [f"%x : {t}"]
    stats = f"{SHORT[dtype]}[4, 6, 1]{{6, 1, 1}}"  # a norm's mean and rstd (%m, %r)
    inputs += [f"%{name} : " + (t if name == "g" else stats if name in ("m", "r") else f"{SHORT[dtype]}[8]{{1}}")
               for name in extra]
    body = line.format(t=t, st=f"{SHORT[dtype]}[4, 6, 1]{{6, 1, 1}}", dtype=DTYPE_NAME[dtype])
    outputs = [part.split(" : ")[0].strip() for part in body.split(" = ")[0].split(", %")]
    outputs = [o if o.startswith("%") else "%" + o for o in outputs]
    return f"graph({', '.join(inputs)}):\n  {body}\n  return ({', '.join(outputs)})\n"


def _inputs(dtype, extra):
    g = np.random.default_rng(1)
    x = g.standard_normal(SIZES) * 3
    x[0, 0, :] = [1000.0, -1000.0, 0.0, -0.0, 1e-3, 5.0, 5.0, -5.0]  # a row far from zero, and ties
    out = [kiln.tensor(x.tolist(), dtype=kiln.float64).to(dtype)]
    for name in extra:
        values = g.standard_normal(SIZES if name == "g" else [4, 6, 1] if name in ("m", "r") else 8) + 1
        if name == "r":
            values = np.abs(values) + 0.5  # an rstd is positive
        out.append(kiln.tensor(values.tolist(), dtype=kiln.float64).to(dtype))
    return out


@pytest.mark.parametrize("dtype", list(SHORT), ids=[SHORT[d] for d in SHORT])
@pytest.mark.parametrize("name,line,extra", CASES, ids=[c[0] for c in CASES])
def test_decomposition_matches_eager(name, line, extra, dtype):
    text = _graph(line, dtype, extra)
    graph = _C._ir.parse(text)
    graph.verify()
    assert _C._passes.decompose_composites(graph) == 1
    graph.verify()
    composite = line.split("= ", 1)[1].split("(", 1)[0]
    assert composite not in graph.node_kinds, str(graph)
    inputs = _inputs(dtype, extra)
    if name.startswith(("_softmax_backward", "_log_softmax_backward")):  # a softmax result as the output
        inputs[0] = (kiln.softmax if name.startswith("_softmax") else kiln.log_softmax)(inputs[0], dim=-1)
    expected = _C._ir.run(text, inputs)
    actual = _C._ir.run(graph, inputs)
    rtol, atol = TOLERANCE[dtype]
    for e, a in zip(expected, actual):
        assert (a.dtype, a.shape, a.stride()) == (e.dtype, e.shape, e.stride())
        a64, e64 = a.to(kiln.float64).numpy(), e.to(kiln.float64).numpy()
        np.testing.assert_allclose(a64, e64, rtol=rtol, atol=atol * max(1.0, float(np.abs(e64).max())))


def test_every_decomposed_op_has_a_case():
    covered = {line.split("= ", 1)[1].split("(", 1)[0] for _, line, _ in CASES}
    assert covered == set(_C._passes.decomposed_ops())
