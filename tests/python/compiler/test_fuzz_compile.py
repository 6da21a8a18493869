"""The "default" backend against eager on random programs (issue 24, Tests):
random DAGs of pointwise ops (from the kernel math table), broadcasts, views
(transpose, slicing, reshape, expand, permute), dtype casts, reductions
(sum/mean/amax) and matmul, over random shapes (0- and 1-size dims
included), dtypes and non-contiguous inputs (transposed, sliced, offset,
expanded), with special values (+-0, +-inf, NaN, subnormals) mixed in.

Each program is built line by line from its seed, keeping a line only when
eager runs it, so every program is valid. It is compiled with
kiln.compile(backend="default") and replayed: the outputs must equal eager's
bit for bit (NaN equal to NaN; the sign of zero compared), and so must the
gradients of float32/float64 programs (a second compiled function, its inputs
requiring grad, backward through the replay). A failure prints a
self-contained reproducer: the program text, which builds its inputs too.

CI runs NUM_PROGRAMS programs; KILN_LONG_TESTS=1 runs LONG_PROGRAMS.
KILN_FUZZ_SEED=N runs only program N."""

import os
import random
import re
import textwrap

import numpy as np
import pytest

import kiln

LONG = os.environ.get("KILN_LONG_TESTS") == "1"
NUM_PROGRAMS = 3000 if LONG else 200
SEEDS = [int(os.environ["KILN_FUZZ_SEED"])] if "KILN_FUZZ_SEED" in os.environ else range(NUM_PROGRAMS)
# The text every program starts with: it builds the inputs, so a printed program runs on its own.
PRELUDE = '''\
import numpy as np
import kiln
import kiln.nn.functional as F

SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -3e-39, 1e30]


def make(seed, shape, dtype, layout, special):
    """A tensor of `shape` and `dtype` whose storage is laid out as `layout` says."""
    rng = np.random.default_rng(seed)
    stored = list(shape)
    if layout == "sliced" and stored:
        stored[-1] *= 2
    if layout == "offset" and stored:
        stored[0] += 1
    if layout == "expanded":
        stored = [1 if i % 2 == 0 else s for i, s in enumerate(stored)]
    if layout == "transposed" and len(stored) >= 2:
        stored[-1], stored[-2] = stored[-2], stored[-1]
    if dtype.is_floating_point:
        v = rng.standard_normal(stored) * rng.choice([0.5, 3.0, 20.0])
        if special:
            pick = rng.random(stored) < 0.15
            v = np.where(pick, rng.choice(SPECIAL, size=stored), v)
    elif dtype == kiln.bool:
        v = rng.random(stored) < 0.5
    else:
        v = rng.integers(-20, 20, size=stored) if dtype != kiln.uint8 else rng.integers(0, 40, size=stored)
    t = kiln.tensor(np.asarray(v, dtype=np.float64 if dtype.is_floating_point else np.int64)).to(dtype)
    if layout == "sliced" and stored:
        t = t[..., ::2]
    if layout == "offset" and stored:
        t = t[1:]
    if layout == "expanded" and stored:
        t = t.expand(*shape)
    if layout == "transposed" and len(stored) >= 2:
        t = t.transpose(-1, -2)
    return t
'''

FLOAT_DTYPES = ["kiln.float32", "kiln.float32", "kiln.float32", "kiln.float64", "kiln.float16", "kiln.bfloat16"]
INT_DTYPES = ["kiln.int32", "kiln.int64", "kiln.int16", "kiln.uint8"]

# Pointwise templates over a float value {a} (and {b} broadcastable with it).
# copysign and signbit read their operand through nan_to_num: the sign of a NaN is free (eager's own
# sqrt gives +NaN in its vector body, SLEEF's, and -NaN in its scalar tail, the x86 default NaN).
# Not here: add/sub with alpha, addcmul and lerp. Their eager loops (cpu_kernel_vec) round `x + a * y`
# once (fused multiply-add) or twice depending on where an element falls in its row: GCC contracts the
# scalar lambda in some of its vectorised copies only (addcmul of a [4] row is unfused, of a [3] or [9] row
# fused, for the same element). No compiled choice can match both; the table test checks them on whole
# vectors (test_pointwise_math.py), where eager is consistent.
FLOAT_UNARY = [
    "kiln.sin({a})", "kiln.cos({a})", "kiln.exp({a})", "kiln.tanh({a})", "kiln.sigmoid({a})", "kiln.relu({a})",
    "F.gelu({a})", "F.gelu({a}, approximate='tanh')", "F.silu({a})", "F.leaky_relu({a}, 0.1)", "F.elu({a})",
    "F.selu({a})", "F.celu({a}, 0.5)", "F.softplus({a})", "F.softplus({a}, 2.0, 3.0)", "F.hardswish({a})",
    "F.hardsigmoid({a})", "F.mish({a})", "F.hardtanh({a})", "F.relu6({a})", "F.threshold({a}, 0.1, -1.0)",
    "kiln.erf({a})", "kiln.erfc({a})", "kiln.log({a})", "kiln.log1p({a}.abs())", "kiln.expm1({a})",
    "kiln.rsqrt({a})", "kiln.sqrt({a}.abs())", "kiln.reciprocal({a})", "kiln.floor({a})", "kiln.ceil({a})",
    "kiln.round({a})", "kiln.round({a}, decimals=1)", "kiln.trunc({a})", "kiln.frac({a})", "kiln.sign({a})",
    "kiln.clamp({a}, -0.5, 0.5)", "kiln.clamp({a}, min=0.1)", "kiln.clamp({a}, max=-0.2)",
    "kiln.nan_to_num({a})", "kiln.nan_to_num({a}, nan=0.5, posinf=2.0)", "{a} ** 2", "{a} ** 3",
    "{a} ** 0.5", "{a} ** -1", "{a} ** 1.7", "kiln.square({a})", "kiln.abs({a})", "-{a}", "{a} * 0.5 + 1",
    "2 - {a}", "{a} / 3", "kiln.atan({a})", "kiln.asinh({a})", "kiln.sinh({a})", "kiln.cosh({a})",
    "kiln.exp2({a})", "kiln.logit({a}.sigmoid())", "kiln.deg2rad({a})", "kiln.sigmoid({a}) * (1 - {a})",
]
FLOAT_BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "kiln.maximum({a}, {b})", "kiln.minimum({a}, {b})", "kiln.fmax({a}, {b})", "kiln.fmin({a}, {b})",
    "kiln.where({a} > {b}, {a}, {b})", "kiln.where({a} > 0, {a}, 0.5)", "kiln.atan2({a}, {b})",
    "kiln.hypot({a}, {b})", "kiln.copysign({a}, kiln.nan_to_num({b}))", "kiln.fmod({a}, {b})", "kiln.remainder({a}, {b})",
    "kiln.floor_divide({a}, {b})", "kiln.div({a}, {b}, rounding_mode='trunc')", "kiln.pow({a}.abs(), {b})",
    "kiln.addcdiv({a}, {b}, {a}, value=2)", "{a}.masked_fill({a} > {b}, 0.0)", "kiln.clamp({a}, {b}, {b} + 1)",
    "kiln.heaviside({a}, {b})", "kiln.xlogy({a}, {b})",
]
PREDICATES = [
    "{a} > {b}", "{a} <= 0.5", "{a} == {b}", "{a} != {b}", "kiln.isnan({a})", "kiln.isinf({a})", "kiln.isfinite({a})",
    "kiln.signbit(kiln.nan_to_num({a}))", "kiln.logical_and({a} > 0, {b} < 0)", "kiln.logical_not({a})",
]
INT_OPS = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "-{a}", "kiln.abs({a})", "kiln.maximum({a}, {b})", "{a} & {b}",
    "{a} | {b}", "{a} ^ {b}", "~{a}", "{a} << 2", "{a} >> 1", "kiln.bitwise_left_shift({a}, {b})",
    "kiln.clamp({a}, -5, 5)", "kiln.where({a} > {b}, {a}, {b})", "{a} // 3", "{a} % 3", "kiln.sign({a})",
    "kiln.square({a})", "{a} * 2 + 1", "{a} / 4", "{a}.float()", "{a} > 0",
]
BOOL_OPS = [
    "kiln.where({c}, {a}, {b})", "{a}.masked_fill({c}, -1.5)", "{c}.to({dtype})", "kiln.logical_or({c}, {c2})",
    "{c} & {c2}", "~{c}", "kiln.logical_xor({c}, {c2})",
]
CASTS = [
    "{a}.to(kiln.float64)", "{a}.to(kiln.float32)", "{a}.to(kiln.float16)", "{a}.to(kiln.bfloat16)",
    "kiln.nan_to_num({a}).clamp(-100, 100).to(kiln.int32)", "{a}.to(kiln.bool)",
]
VIEWS = [
    "{a}.transpose(0, 1)", "{a}.t()", "{a}[::2]", "{a}[1:]", "{a}[..., :1]", "{a}.reshape(-1)", "{a}.unsqueeze(0)",
    "{a}.unsqueeze(-1).expand(*{a}.shape, 2)", "{a}.permute(2, 0, 1)", "{a}.flip(0)", "{a}.contiguous()",
    "{a}.narrow(-1, 0, 1)", "{a}.transpose(-1, -2).contiguous().transpose(-1, -2)", "{a}.view(-1)",
]
REDUCTIONS = [
    "{a}.sum()", "{a}.sum(dim={d})", "{a}.sum(dim={d}, keepdim=True)", "{a}.mean(dim={d})",
    "{a}.mean(dim={d}, keepdim=True)", "{a}.amax(dim={d})", "{a}.amax(dim={d}, keepdim=True)",
]
MATMULS = ["{a} @ {a}.transpose(-1, -2)", "{a} @ {b}", "{a}.transpose(-1, -2) @ {b}"]


def random_shape(rng):
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3])
    sizes = [1, 1, 2, 3, 4, 5, 7, 8, 9, 17] + ([0] if rng.random() < 0.15 else [])
    return tuple(rng.choice(sizes) for _ in range(rank))


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape` to `shape`: some dims 1, some leading dims dropped."""
    s = [1 if rng.random() < 0.3 else d for d in shape]
    drop = rng.randint(0, len(s)) if s and rng.random() < 0.3 else 0
    return tuple(s[drop:])


def make_program(seed):
    """(text, input names, float program?): the program's source, which builds its inputs and defines f."""
    rng = random.Random(seed)
    family = rng.choice(["float"] * 8 + ["int"] * 2)
    dtype = rng.choice(FLOAT_DTYPES if family == "float" else INT_DTYPES)
    shape = random_shape(rng)
    special = family == "float" and rng.random() < 0.4
    lines = [PRELUDE, ""]
    names = []
    for i in range(rng.choice([1, 2, 2, 3])):
        s = shape if i == 0 or rng.random() < 0.5 else broadcast_partner(rng, shape)
        layout = rng.choice(["contiguous", "contiguous", "transposed", "sliced", "offset", "expanded"])
        lines.append(f"x{i} = make({seed * 7 + i}, {tuple(s)}, {dtype}, {layout!r}, {special})")
        names.append(f"x{i}")
    env = {}
    exec("\n".join(lines), env)
    values = {n: env[n] for n in names}
    body = []
    for step in range(rng.randint(2, 9)):
        for _attempt in range(20):
            expr = random_expression(rng, values, dtype)
            if expr is None:
                continue
            name = f"t{step}"
            try:
                with kiln.no_grad():
                    result = eval(expr, env, dict(values))
            except Exception:  # eager refuses it (dtype, shape, integer division by zero): try another line
                continue
            if not isinstance(result, kiln.Tensor) or result.numel() > 4096:
                continue
            values[name] = result
            body.append(f"    {name} = {expr}")
            break
    computed = [n for n in values if n.startswith("t")]
    if not computed:
        body.append(f"    t0 = {names[0]} * 2")
        computed = ["t0"]
    # The values no later line reads (the last one always), up to three: dead lines would test nothing.
    unread = [n for i, n in enumerate(computed)
              if not any(re.search(rf"\b{n}\b", line.split("=", 1)[1]) for line in body[i + 1:])]
    outputs = unread[-3:]
    body.append(f"    return {', '.join(outputs)},")
    lines.append("")
    lines.append(f"def f({', '.join(names)}):")
    lines.extend(body)
    return "\n".join(lines) + "\n", names, family == "float" and dtype in ("kiln.float32", "kiln.float64")


def random_expression(rng, values, dtype):
    """One line's expression over the values so far, or None when the pick does not apply."""
    name_list = list(values)
    a = rng.choice(name_list[-3:] if rng.random() < 0.6 else name_list)
    ta = values[a]
    partners = [n for n in name_list if n != a] or [a]
    b = rng.choice(partners)
    kind = rng.random()
    d = rng.randrange(-1, ta.dim()) if ta.dim() else None
    if kind < 0.07:
        template = rng.choice(VIEWS)
    elif kind < 0.13:
        template = rng.choice(CASTS)
    elif kind < 0.19:
        if d is None:
            return None
        template = rng.choice(REDUCTIONS)
    elif kind < 0.23:
        template = rng.choice(MATMULS)
    elif ta.dtype == kiln.bool:
        template = rng.choice(BOOL_OPS)
    elif not ta.dtype.is_floating_point:
        template = rng.choice(INT_OPS)
    elif kind < 0.33:
        template = rng.choice(PREDICATES)
    elif kind < 0.6:
        template = rng.choice(FLOAT_BINARY)
    else:
        template = rng.choice(FLOAT_UNARY)
    bools = [n for n in name_list if values[n].dtype == kiln.bool] or [a]
    return template.format(a=a, b=b, c=rng.choice(bools), c2=rng.choice(bools), d=d, dtype=dtype)


def same_bits(got, want):
    """Equal values (NaN equal to NaN) with equal signs of zero; float16/bfloat16 compared in float32."""
    if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
        return False
    if got.dtype in (kiln.float16, kiln.bfloat16):
        got, want = got.float(), want.float()
    g, w = got.numpy(), want.numpy()
    if g.dtype.kind != "f":
        return bool(np.array_equal(g, w))
    return bool(np.all(((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))))


def fail(seed, text, names, what):
    call = ", ".join(names)
    pytest.fail(f"fuzz program {seed}: {what}\n--- reproducer (python) ---\n{text}\n"
                f"with kiln.no_grad():\n    want = f({call})\n    compiled = kiln.compile(f, backend='default')\n"
                f"    compiled({call})\n    got = compiled({call})\n"
                f"--- or: KILN_FUZZ_SEED={seed} pytest {__file__} ---", pytrace=False)


def inputs_of(env, names, requires_grad):
    out = []
    for n in names:
        t = env[n]
        if requires_grad:
            t = t.detach().requires_grad_(True)
        out.append(t)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_compiled_program_equals_eager(seed):
    text, names, differentiable = make_program(seed)
    env = {}
    exec(text, env)
    f = env["f"]
    args = inputs_of(env, names, False)
    with kiln.no_grad():
        want = f(*args)
        compiled = kiln.compile(f, backend="default")
        compiled(*args)  # capture
        got = compiled(*args)  # replay
    for i, (g, w) in enumerate(zip(got, want)):
        if not same_bits(g, w):
            fail(seed, text, names, f"output {i} differs from eager:\ngot  {g}\nwant {w}")
    if not differentiable:
        return
    grad_args = inputs_of(env, names, True)
    outs = f(*grad_args)
    pairs = [(o, kiln.ones_like(o)) for o in outs if o.requires_grad]
    if not pairs:
        return
    try:
        want_grads = kiln.autograd.grad([o for o, _ in pairs], grad_args, [c for _, c in pairs], allow_unused=True)
    except (NotImplementedError, RuntimeError):  # eager has no gradient here (heaviside, pow of a bool exponent)
        return
    compiled = kiln.compile(f, backend="default")
    compiled(*grad_args)  # capture (forward and backward)
    outs = compiled(*grad_args)
    pairs = [(o, kiln.ones_like(o)) for o in outs if o.requires_grad]
    got_grads = kiln.autograd.grad([o for o, _ in pairs], grad_args, [c for _, c in pairs], allow_unused=True)
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        if (g is None) != (w is None) or (g is not None and not same_bits(g, w)):
            fail(seed, text, names, f"gradient of x{i} differs from eager:\ngot  {g}\nwant {w}")


def test_a_program_text_is_self_contained():
    """The printed reproducer runs on its own: it builds its inputs and defines f."""
    text, names, _ = make_program(3)
    env = {}
    exec(textwrap.dedent(text), env)
    assert callable(env["f"]) and all(n in env for n in names)


def test_an_output_view_the_passes_removed_keeps_the_input_a_leaf():
    """Found by the fuzzer (program 83): x.reshape(-1) of a 1-D x is removed by simplify_algebra, and the
    compiled graph returned the input tensor itself as that output, so the joint capture set the output's
    autograd history on the leaf x (its gradient was lost: 1 instead of 53). It returns a fresh view now
    (Note [An output the passes turned into an input], runtime/CompiledGraph.h)."""
    def f(x0, x1):
        return kiln.fmod(x1, x0), x0.reshape(-1)

    x0 = kiln.tensor([0.3361], dtype=kiln.float64, requires_grad=True)
    x1 = kiln.tensor([-17.7124], dtype=kiln.float64, requires_grad=True)
    compiled = kiln.compile(f, backend="default")
    compiled(x0, x1)
    outs = compiled(x0, x1)
    assert outs[1] is not x0 and x0.is_leaf and x0.grad_fn is None
    ones = [kiln.ones(1, dtype=kiln.float64)] * 2
    got = kiln.autograd.grad(list(outs), [x0, x1], ones)
    want = kiln.autograd.grad(list(f(x0, x1)), [x0, x1], ones)
    for g, w in zip(got, want):
        assert same_bits(g, w), (g, w)
