"""opgen's meta kernels (Note [Meta kernels], tools/opgen/README.md): `meta: cpu_kernel`
registers an entry's CPU kernel at the Meta key, `dispatch: Meta:` names an explicit
meta kernel (declared in MetaFunctions.h, not NativeFunctions.h), and an entry tagged
dynamic_output_shape may have neither. Runs the generator on small YAML texts."""

from __future__ import annotations

from opgen_text import error_of, generate

RELU = """
- func: relu(Tensor self) -> Tensor
  dispatch:
    CPU: relu_cpu
  meta: cpu_kernel
  tags: [pointwise]
"""

EMBEDDING = """
- func: embedding(Tensor weight, Tensor indices) -> Tensor
  dispatch:
    CPU: embedding_cpu
    Meta: embedding_meta
"""


def _meta_block(register_ops: str) -> str:
    start = register_ops.index("KILN_LIBRARY_IMPL(kiln, Meta, m) {")
    return register_ops[start:register_ops.index("}\n", start)]


def test_meta_cpu_kernel_registers_the_cpu_kernel_at_meta():
    files = generate(RELU)
    assert 'm.impl("relu", &native::RealOnly<&native::relu_cpu, krelu_name>::call);' in _meta_block(
        files["RegisterOps.cpp"])
    assert "relu_cpu" not in files["MetaFunctions.h"]


def test_an_explicit_meta_kernel_is_declared_apart_and_registered():
    files = generate(EMBEDDING)
    assert "Tensor embedding_meta(const Tensor& weight, const Tensor& indices);" in files["MetaFunctions.h"]
    assert "embedding_meta" not in files["NativeFunctions.h"]
    assert "embedding_cpu" in files["NativeFunctions.h"]
    assert "&native::RealOnly<&native::embedding_meta" in _meta_block(files["RegisterOps.cpp"])


def test_an_entry_without_meta_has_no_meta_registration():
    files = generate(RELU.replace("  meta: cpu_kernel\n", ""))
    assert "KILN_LIBRARY_IMPL(kiln, Meta, m)" not in files["RegisterOps.cpp"]


def test_the_dynamic_output_shape_tag_gets_a_bit_in_the_op_table():
    files = generate(RELU.replace("  meta: cpu_kernel\n", "").replace("[pointwise]", "[dynamic_output_shape]"))
    assert "inline constexpr uint32_t kDynamicOutputShape = 1u << 8;" in files["OpTable.h"]


def test_meta_must_name_cpu_kernel():
    assert "meta must be 'cpu_kernel'" in error_of(RELU.replace("meta: cpu_kernel", "meta: relu_meta"))


def test_meta_cpu_kernel_needs_a_cpu_kernel_and_no_meta_one():
    composite = RELU.replace("CPU: relu_cpu", "CompositeImplicit: relu")
    assert "meta: cpu_kernel needs a CPU kernel" in error_of(composite)
    both = RELU.replace("    CPU: relu_cpu\n", "    CPU: relu_cpu\n    Meta: relu_meta\n")
    assert "meta: cpu_kernel needs a CPU kernel under dispatch: and no Meta one" in error_of(both)


def test_a_dynamic_output_shape_op_may_have_no_meta_kernel():
    tagged = RELU.replace("[pointwise]", "[dynamic_output_shape]")
    assert "tagged dynamic_output_shape" in error_of(tagged)
    explicit = EMBEDDING + "  tags: [dynamic_output_shape]\n"
    assert "so it can have no meta kernel" in error_of(explicit)
