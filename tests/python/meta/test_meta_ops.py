"""Every op of eager/ops/*.yaml on meta tensors: the sizes, strides and dtype of the
CPU result, no data touched (DESIGN.md decision 10; Note [Meta kernels],
tools/opgen/README.md). Samples come from each op's schema (helpers/meta_cases.py).

`NO_META_YET` lists the ops that have no meta implementation: no Meta kernel in
the yaml (`meta: cpu_kernel` or `dispatch: Meta:`), or a composite whose parts do
not all have one, or a sample whose meta run still fails. The test keeps the list
exact, so it shrinks as meta kernels are added and nothing falls off it silently.
Ops tagged dynamic_output_shape have no meta implementation by design and are
listed apart (`DYNAMIC_OUTPUT_SHAPE`).
"""

from __future__ import annotations

import functools

import pytest

from meta_cases import has_meta_route, load_yaml_ops, run_op

OPS = load_yaml_ops()

# Ops with no meta implementation yet (see the module docstring), by full name.
NO_META_YET: tuple[str, ...] = ()

# Ops whose CPU kernel refuses every sample meta_cases builds, so the sweep cannot compare them.
NO_SAMPLE: tuple[str, ...] = (
    # the start / high / split points are tensors whose values the op reads: on meta they have none
    "narrow.Tensor", "randint_like.Tensor", "randint_like.Tensor_generator", "tensor_split.tensor_indices_or_sections",
)


@functools.cache
def outcomes() -> dict:
    return {op.full_name: run_op(op) for op in OPS}


def _dynamic(op) -> bool:
    return "dynamic_output_shape" in op.tags


META_OPS = [op for op in OPS if has_meta_route(op) and not _dynamic(op) and op.full_name not in NO_META_YET
            and op.full_name not in NO_SAMPLE]


@pytest.mark.parametrize("op", META_OPS, ids=[op.full_name for op in META_OPS])
def test_meta_result_has_the_cpu_results_sizes_strides_and_dtype(op):
    outcome = outcomes()[op.full_name]
    assert outcome.status == "ok", f"{op.full_name} ({outcome.layout}): {outcome.status}: {outcome.detail}"


def test_the_list_of_ops_without_meta_is_exact():
    missing = sorted(name for name, o in outcomes().items()
                     if o.status in ("meta_error", "mismatch") and not _dynamic(_op(name)))
    missing += sorted(op.full_name for op in OPS if not has_meta_route(op) and not _dynamic(op)
                      and outcomes()[op.full_name].status == "no_sample")
    assert sorted(set(missing)) == sorted(NO_META_YET)


def test_the_list_of_ops_without_a_sample_is_exact():
    no_sample = sorted(name for name, o in outcomes().items()
                       if o.status == "no_sample" and has_meta_route(_op(name)) and not _dynamic(_op(name)))
    assert no_sample == sorted(NO_SAMPLE)


def test_ops_tagged_dynamic_output_shape_have_no_meta_kernel():
    for op in OPS:
        if _dynamic(op):
            assert op.meta_kernel is None, op.full_name
            o = outcomes()[op.full_name]
            assert o.status in ("meta_error", "no_sample"), op.full_name
            if o.status == "meta_error":
                assert o.detail.startswith("NotImplementedError") and "dynamic_output_shape" in o.detail, o.detail


def test_meta_coverage_count(capsys):
    """Reports ops with meta / ops total (the figure issue 23 asks for)."""
    with_meta = sum(1 for o in outcomes().values() if o.status == "ok")
    with capsys.disabled():
        print(f"\nmeta: {with_meta} of {len(OPS)} ops run on meta and match the CPU result; "
              f"{len(NO_META_YET)} have no meta yet, {len(NO_SAMPLE)} have no sample, "
              f"{sum(1 for op in OPS if _dynamic(op))} are dynamic_output_shape")
    assert with_meta + len(NO_META_YET) + len(NO_SAMPLE) + sum(1 for op in OPS if _dynamic(op)) == len(OPS)


def _op(name):
    return next(op for op in OPS if op.full_name == name)
