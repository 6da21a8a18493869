

def test_default_backend_compiles_fused_kernels_per_size_for_one_graph():
    # One capture, one set of guards; the runtime's kernels are compiled per set of input sizes
    # (Note [Fused kernels for symbolic graphs] in kiln/compiler/_specialize.py).
    from kiln.compiler._specialize import SpecializingRunner

    def f(x):
        B, C = x.shape
        return ((x * 2 + 1).relu().view(B, 2, C // 2) * 3).sum(-1)

    compiled = kiln.compile(f, dynamic=True)
    for n in (4, 6, 9, 6):
        x = _randn(n, 8)
        _assert_close(compiled(x), f(x))
    assert compiled.num_captures == 1
    runner = compiled.symbolic_entries[0].entry.program.runner
    assert isinstance(runner, SpecializingRunner) and not runner.failed
    assert len(runner.compiled) == 3
    assert all(g.kernel_count >= 1 for g in runner.compiled.values())
