"""The tree keeps DESIGN.md's layering: C++ folders include only earlier folders,
python/kiln imports only earlier layers and has no import loop.

Each rule is also shown to fail: on small trees built here, and on a copy of the
real tree with one upward include or import added.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve()
while not (REPO / "tools" / "check_architecture.py").exists():
    REPO = REPO.parent

_spec = importlib.util.spec_from_file_location("check_architecture", REPO / "tools" / "check_architecture.py")
check_architecture = importlib.util.module_from_spec(_spec)
sys.modules["check_architecture"] = check_architecture  # dataclasses resolve their module by name
_spec.loader.exec_module(check_architecture)


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_tree_keeps_its_layering():
    violations = check_architecture.all_violations(REPO)
    assert violations == [], "\n".join(map(str, violations))


# --- C++ ------------------------------------------------------------------------

def test_an_include_of_an_earlier_folder_is_allowed(tmp_path):
    write(tmp_path, "eager/core/A.h", "#pragma once\n")
    write(tmp_path, "eager/kernels/B.cpp", '#include "eager/core/A.h"\n#include <vector>\n')
    write(tmp_path, "ir/Graph.cpp", '#include "eager/kernels/B.h"\n#include "ir/Graph.h"\n')
    assert check_architecture.cpp_violations(tmp_path) == []


def test_an_include_of_a_later_folder_is_caught(tmp_path):
    write(tmp_path, "ir/Graph.h", "#pragma once\n")
    write(tmp_path, "eager/core/A.h", '#pragma once\n\n#include "ir/Graph.h"\n')
    (violation,) = check_architecture.cpp_violations(tmp_path)
    assert (violation.path, violation.line) == ("eager/core/A.h", 3)
    assert '"ir/Graph.h" (ir)' in violation.message and "eager/core" in violation.message


def test_a_generated_header_sits_at_the_registry(tmp_path):
    write(tmp_path, "eager/core/Tensor.h", '#include "kiln/generated/TensorMethodDecls.inc"\n')
    write(tmp_path, "eager/autograd/Node.cpp", '#include "kiln/generated/Functions.h"\n')
    (violation,) = check_architecture.cpp_violations(tmp_path)
    assert violation.path == "eager/core/Tensor.h" and "eager/ops" in violation.message


def test_the_tensor_type_sits_between_memory_and_the_dispatcher(tmp_path):
    write(tmp_path, "eager/dispatch/IValue.h", '#include "eager/ops/Tensor.h"\n')
    write(tmp_path, "eager/ops/Tensor.h", '#include "eager/core/TensorBase.h"\n'
                                          '#include "kiln/generated/TensorMethodDecls.inc"\n'
                                          '#include "eager/dispatch/Dispatcher.h"\n')
    write(tmp_path, "eager/dispatch/Boxing.h", '#include "kiln/generated/Functions.h"\n')
    found = sorted((v.path, v.line) for v in check_architecture.cpp_violations(tmp_path))
    assert found == [("eager/dispatch/Boxing.h", 1), ("eager/ops/Tensor.h", 3)], found


def test_a_sibling_include_is_ranked_by_where_it_resolves(tmp_path):
    write(tmp_path, "eager/kernels/cpu/Loops.h", "#pragma once\n")
    write(tmp_path, "eager/kernels/cpu/Add.cpp", '#include "Loops.h"\n')
    assert check_architecture.cpp_violations(tmp_path) == []


def test_tests_and_bench_may_include_anything(tmp_path):
    write(tmp_path, "tests/cpp/test_x.cpp", '#include "runtime/CompiledGraph.h"\n')
    write(tmp_path, "bench/cpp/bench_x.cpp", '#include "python/csrc/Module.h"\n')
    assert check_architecture.cpp_violations(tmp_path) == []


# --- Python -----------------------------------------------------------------------

LAYERS = (("kiln._C",), ("kiln._tensor",), ("kiln.nn",))


def test_a_downward_import_is_allowed(tmp_path):
    write(tmp_path, "python/kiln/__init__.py", "from kiln import nn\nfrom kiln._tensor import Tensor\n")
    write(tmp_path, "python/kiln/_tensor.py", "from kiln import _C\n")
    write(tmp_path, "python/kiln/nn/__init__.py", "from kiln.nn.functional import relu\n")
    write(tmp_path, "python/kiln/nn/functional.py", "from kiln._tensor import Tensor\n\ndef relu(x):\n    return x\n")
    assert check_architecture.python_violations(tmp_path / "python" / "kiln", LAYERS) == []


def test_an_upward_import_is_caught(tmp_path):
    write(tmp_path, "python/kiln/__init__.py", "")
    write(tmp_path, "python/kiln/_tensor.py", "import math\n\nfrom kiln.nn import functional\n")
    write(tmp_path, "python/kiln/nn/__init__.py", "")
    write(tmp_path, "python/kiln/nn/functional.py", "")
    (violation,) = check_architecture.python_violations(tmp_path / "python" / "kiln", LAYERS)
    assert (violation.path, violation.line) == ("python/kiln/_tensor.py", 3)
    assert "kiln._tensor imports kiln.nn.functional" in violation.message


def test_importing_the_package_root_from_inside_is_upward(tmp_path):
    write(tmp_path, "python/kiln/__init__.py", "from kiln import nn\n")
    write(tmp_path, "python/kiln/nn/__init__.py", "def f():\n    import kiln\n    return kiln.zeros(1)\n")
    violations = check_architecture.python_violations(tmp_path / "python" / "kiln", LAYERS)
    assert any("kiln.nn imports kiln," in str(v) for v in violations), violations


def test_an_import_loop_is_caught_even_inside_a_function(tmp_path):
    write(tmp_path, "python/kiln/__init__.py", "")
    write(tmp_path, "python/kiln/nn/__init__.py", "")
    write(tmp_path, "python/kiln/nn/a.py", "from kiln.nn import b\n")
    write(tmp_path, "python/kiln/nn/b.py", "def g():\n    from kiln.nn.a import f\n    return f\n")
    (violation,) = check_architecture.python_violations(tmp_path / "python" / "kiln", LAYERS)
    assert "import loop: kiln.nn.a -> kiln.nn.b -> kiln.nn.a" in violation.message


def test_relative_imports_are_resolved(tmp_path):
    write(tmp_path, "python/kiln/__init__.py", "")
    write(tmp_path, "python/kiln/_tensor.py", "from .nn import functional\n")
    write(tmp_path, "python/kiln/nn/__init__.py", "")
    write(tmp_path, "python/kiln/nn/functional.py", "from .. import _tensor\n")
    messages = [v.message for v in check_architecture.python_violations(tmp_path / "python" / "kiln", LAYERS)]
    assert any("kiln._tensor imports kiln.nn.functional" in m for m in messages), messages
    assert any(m.startswith("import loop:") for m in messages), messages


# --- the real tree, broken on purpose ---------------------------------------------

@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    for folder in ("eager", "ir", "capture", "passes", "codegen", "runtime"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "python" / "kiln", root / "python" / "kiln",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return root


def test_an_upward_include_added_to_the_real_tree_fails(tree_copy):
    before = check_architecture.all_violations(tree_copy)
    header = tree_copy / "eager" / "dispatch" / "Dispatcher.h"
    original = header.read_text()
    header.write_text(original + '\n#include "runtime/README.md"\n')
    try:
        after = check_architecture.all_violations(tree_copy)
    finally:
        header.write_text(original)
    added = [v for v in after if v not in before]
    assert len(added) == 1 and added[0].path == "eager/dispatch/Dispatcher.h", added


def test_an_upward_import_added_to_the_real_tree_fails(tree_copy):
    before = check_architecture.all_violations(tree_copy)
    module = tree_copy / "python" / "kiln" / "_tensor.py"
    original = module.read_text()
    module.write_text(original + "\nfrom kiln.optim import SGD  # deliberately upward\n")
    try:
        after = check_architecture.all_violations(tree_copy)
    finally:
        module.write_text(original)
    added = [str(v) for v in after if v not in before]
    assert any("kiln._tensor imports kiln.optim" in v for v in added), added
