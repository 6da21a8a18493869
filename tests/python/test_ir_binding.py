"""kiln._C._ir: the IR's text form, verifier and reference interpreter from Python."""

import pytest
import torch

import kiln
from kiln import _C

GRAPH = (
    "graph(%x : f32[s0, 3], %y : f32[3, 2]):\n"
    "  %a : f32[s0, 3] = kiln::add.Tensor(%x, %x, alpha=2)\n"
    "  %r : f32[s0, 3] = kiln::relu(%a)\n"
    "  %m : f32[s0, 2] = kiln::matmul(%r, %y)\n"
    "  %s : f32[] = kiln::sum(%m, dtype=None)\n"
    "  return (%m, %s)\n"
)


def test_parse_print_round_trip():
    g = _C._ir.parse(GRAPH)
    assert _C._ir.print(g) == GRAPH
    assert str(g) == GRAPH
    assert g.num_inputs == 2 and g.num_outputs == 2
    assert g.node_kinds == ["kiln::add.Tensor", "kiln::relu", "kiln::matmul", "kiln::sum"]
    g.verify()


def test_run_matches_eager_and_torch():
    x = [[-1.0, 0.5, 2.0], [3.0, -4.0, 0.25]]
    y = [[1.0, -2.0], [0.5, 0.0], [-1.5, 3.0]]
    m, s = _C._ir.run(GRAPH, [kiln.tensor(x), kiln.tensor(y)])
    expected = kiln.matmul(kiln.relu(kiln.add(kiln.tensor(x), kiln.tensor(x), alpha=2)), kiln.tensor(y))
    assert m.tolist() == expected.tolist()
    assert s.item() == expected.sum().item()
    tx, ty = torch.tensor(x), torch.tensor(y)
    torch.testing.assert_close(torch.from_numpy(m.numpy()), torch.relu(tx + 2 * tx) @ ty)


def test_run_a_parsed_graph_with_int_inputs():
    g = _C._ir.parse(
        "graph(%x : f32[6], %n : int):\n"
        "  %three : int = prim::Constant(value=3)\n"
        "  %shape : int[] = prim::ListConstruct(%n, %three)\n"
        "  %r : Tensor = kiln::reshape(%x, %shape)\n"
        "  return (%r)\n"
    )
    (r,) = _C._ir.run(g, [kiln.arange(6.0), 2])
    assert r.shape == (2, 3)


def test_parse_error_names_line_and_column():
    with pytest.raises(RuntimeError, match=r"ir parse error at line 2, column 17: unknown operator kiln::nope"):
        _C._ir.parse("graph(%x : f32[2]):\n  %0 : f32[2] = kiln::nope(%x)\n  return (%0)\n")


def test_verify_and_run_errors():
    g = _C._ir.parse("graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x, %x)\n  return (%0)\n")
    with pytest.raises(RuntimeError, match="expects 1 value arguments"):
        g.verify()
    with pytest.raises(RuntimeError, match="must be float32, got int64"):
        _C._ir.run("graph(%x : f32[2]):\n  return (%x)\n", [kiln.tensor([1, 2])])
    with pytest.raises(TypeError, match="the graph takes 1 inputs but got 0"):
        _C._ir.run("graph(%x : f32[2]):\n  return (%x)\n", [])


def test_ir_includes_only_eager_and_itself():
    """The folder order (shared DESIGN): ir/ may include eager/, never capture/passes/codegen/runtime."""
    import pathlib
    import re

    ir_dir = pathlib.Path(__file__).resolve().parents[2] / "ir"
    sources = sorted(ir_dir.glob("*.h")) + sorted(ir_dir.glob("*.cpp"))
    assert sources
    for path in sources:
        for include in re.findall(r'#include "([^"]+)"', path.read_text()):
            assert include.split("/")[0] in ("eager", "ir"), f"{path.name} includes {include}"
            assert "eager/kernels" not in include, f"{path.name} includes kernel internals: {include}"
