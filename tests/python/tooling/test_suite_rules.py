"""Rules the test suite holds itself to, checked on its own source.

An error test that only checks the exception's type passes when kiln raises the
right type for the wrong reason (a TypeError from a typo passes a TypeError
test). So a `pytest.raises` in an error-test file (test_*errors*.py) or in a
test that compares with torch names the message with match= (ideally torch's
own text), or reads the exception it caught (`.value`) to compare its text, or
the comparison goes through torch_compare.assert_same_error, which compares the
whole message.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent  # tests/python: every area folder
TEST_FILES = sorted(p for p in HERE.rglob("test_*.py"))


def _is_pytest_raises(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raises"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest")


def _uses_torch(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Name) and node.id in ("torch", "TF") for node in ast.walk(function))


def _messages_read(function: ast.AST) -> tuple[set[str], set[int]]:
    """The names bound to a pytest.raises (`with ... as NAME`, `NAME = pytest.raises(...)`) whose `.value` the
    function reads afterwards, and the ids of the raises calls read directly (`pytest.raises(...).value`)."""
    bound: dict[str, int] = {}
    direct: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.withitem) and _is_pytest_raises(node.context_expr) and isinstance(
                node.optional_vars, ast.Name):
            bound[node.optional_vars.id] = id(node.context_expr)
        elif isinstance(node, ast.Assign) and _is_pytest_raises(node.value) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            bound[node.targets[0].id] = id(node.value)
        elif isinstance(node, ast.Attribute) and node.attr == "value" and _is_pytest_raises(node.value):
            direct.add(id(node.value))
    read = {node.value.id for node in ast.walk(function) if isinstance(node, ast.Attribute) and node.attr == "value"
            and isinstance(node.value, ast.Name)}
    return {bound[name] for name in read if name in bound}, direct


def raises_without_match(path: Path) -> list[str]:
    """The `pytest.raises` calls of ``path`` this rule covers that neither carry match= nor have their exception's
    message read afterwards (``.value``), as 'file:line'."""
    tree = ast.parse(path.read_text(), filename=str(path))
    errors_file = "errors" in path.stem
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name.startswith("test")]
    for function in functions:
        if not (errors_file or _uses_torch(function)):
            continue
        bound_read, direct_read = _messages_read(function)
        for node in ast.walk(function):
            if (_is_pytest_raises(node) and not any(k.arg == "match" for k in node.keywords)
                    and id(node) not in bound_read and id(node) not in direct_read):
                found.append(f"{path.relative_to(HERE) if path.is_relative_to(HERE) else path.name}:{node.lineno}")
    return sorted(set(found))


def test_the_rule_sees_the_suite():
    assert len(TEST_FILES) > 100
    assert any("errors" in p.stem for p in TEST_FILES)


@pytest.mark.parametrize("path", TEST_FILES, ids=[str(p.relative_to(HERE)) for p in TEST_FILES])
def test_error_checks_name_the_message(path):
    missing = raises_without_match(path)
    assert not missing, (
        "pytest.raises without match= in a test comparing with torch (or an error-test file): give torch's message "
        "(match=re.escape(...)) or compare through torch_compare.assert_same_error: " + ", ".join(missing))


def test_the_rule_catches_a_bare_raises(tmp_path):
    sample = tmp_path / "test_sample_errors.py"
    sample.write_text("import pytest\n\ndef test_a():\n    with pytest.raises(ValueError):\n        f()\n\n"
                      "def test_b():\n    with pytest.raises(ValueError, match='bad'):\n        f()\n")
    assert raises_without_match(sample) == ["test_sample_errors.py:4"]


def test_the_skip_budget_allows_only_its_reasons():
    from conftest import skip_is_allowed

    assert skip_is_allowed("no GPU: CUDA is not available")
    assert skip_is_allowed("optional package mpmath is not installed (the high-precision reference)")
    assert skip_is_allowed("could not import 'scipy': No module named 'scipy'")
    assert skip_is_allowed("CPU lacks the instruction set of the avx512 build: no avx512f in /proc/cpuinfo")
    for reason in ("needs relu (branch i4-unary not merged)", "every op of this check is in this build",
                   "kiln is not built", "torch.nn.functional.max_pool2d is a dispatcher wrapper without a signature"):
        assert not skip_is_allowed(reason), reason
