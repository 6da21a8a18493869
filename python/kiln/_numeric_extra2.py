"""Random samplers and segment_reduce over kiln's ops, as torch has them: poisson,
binomial, Tensor.cauchy_ / geometric_ / log_normal_ (kiln has exponential_ already; from kiln's uniform and normal
streams, so a kiln.Generator or kiln.manual_seed makes them reproducible; the values
are not torch's stream), and segment_reduce (sum / mean / max / min / prod over
lengths or offsets, with torch's gradient formulas).

Note [Vectorized rejection sampling]: torch draws each Poisson / binomial sample with a
scalar loop (Knuth's product of uniforms or binomial inversion by geometric waiting times
for small means, Hormann's transformed rejection PTRS / BTRS otherwise). kiln runs the
same algorithms over all still-pending elements at once: each round draws one set of
uniforms for the pending elements and retires those that finish, so the number of rounds
is the longest single chain (a few dozen for the inversion methods, a handful for the
rejection ones)."""

from __future__ import annotations

import math

from kiln import _C
from kiln._numeric_extra import _format_double, _no_derivative, _scalar_name, _type_word


def _kiln():
    import kiln

    return kiln


def _uniform(count, generator):
    """count float64 uniforms in [0, 1) from generator (or the default generator)."""
    kiln = _kiln()
    return kiln.empty(count, dtype=kiln.float64).uniform_(generator=generator)


# --- poisson -----------------------------------------------------------------------------------------------


def _poisson_knuth(rates, generator):
    """Poisson samples for rates in (0, 10): the count of uniforms whose running product stays
    above exp(-rate)."""
    kiln = _kiln()
    limit = kiln.exp(-rates)
    product = kiln.ones_like(rates)
    count = kiln.zeros_like(rates)
    pending = kiln.arange(rates.shape[0])
    while pending.numel():
        product_p = product[pending] * _uniform(pending.numel(), generator)
        product[pending] = product_p
        going = product_p > limit[pending]
        pending = pending[going]
        count[pending] += 1
    return count


def _poisson_ptrs(rates, generator):
    """Poisson samples for rates >= 10 by Hormann's transformed rejection with squeeze (PTRS)."""
    kiln = _kiln()
    result = kiln.zeros_like(rates)
    pending = kiln.arange(rates.shape[0])
    while pending.numel():
        lam = rates[pending]
        root = kiln.sqrt(lam)
        b = 0.931 + 2.53 * root
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)
        u = _uniform(pending.numel(), generator) - 0.5
        v = _uniform(pending.numel(), generator)
        us = 0.5 - kiln.abs(u)
        k = kiln.floor((2 * a / us + b) * u + lam + 0.43)
        quick = (us >= 0.07) & (v <= v_r)
        excluded = (k < 0) | ((us < 0.013) & (v > us))
        log_accept = kiln.log(v) + kiln.log(inv_alpha) - kiln.log(a / (us * us) + b)
        target = -lam + k * kiln.log(lam) - kiln.lgamma(k + 1)
        accepted = quick | (~excluded & (log_accept <= target))
        result[pending[accepted]] = k[accepted]
        pending = pending[~accepted]
    return result


def _poisson_values(rates, generator):
    kiln = _kiln()
    flat = rates.reshape(-1).to(kiln.float64)
    result = kiln.zeros_like(flat)
    small = ((flat > 0) & (flat < 10)).nonzero().reshape(-1)
    large = (flat >= 10).nonzero().reshape(-1)
    if small.numel():
        result[small] = _poisson_knuth(flat[small], generator)
    if large.numel():
        result[large] = _poisson_ptrs(flat[large], generator)
    return result.reshape(rates.shape).to(rates.dtype)


def _zero_gradient_function():
    from kiln.autograd import Function

    class PoissonBackward(Function):
        @staticmethod
        def forward(ctx, rates, sample):
            return sample.clone()

        @staticmethod
        def backward(ctx, grad):
            return _kiln().zeros_like(grad), None

    return PoissonBackward


def poisson(input, generator=None):
    """torch.poisson: a Poisson sample of each rate in ``input`` (a float tensor, rates >= 0),
    in input's dtype. Its gradient is zero, as torch's. See Note [Vectorized rejection sampling]."""
    kiln = _kiln()
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_scalar_name(input.dtype)}'")
    with kiln.no_grad():
        if input.numel() and bool(((input < 0) | kiln.isnan(input)).any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        sample = _poisson_values(input, generator)
    if _C.is_grad_enabled() and input.requires_grad:
        return _zero_gradient_function().apply(input, sample)
    return sample


# --- binomial -------------------------------------------------------------------------------------------


def _binomial_inversion(count, prob, generator):
    """Binomial samples for count * prob < 10 (prob <= 1/2): how many geometric waiting times
    fit in count trials."""
    kiln = _kiln()
    log_q = kiln.log1p(-prob)
    total = kiln.zeros_like(count)
    successes = kiln.zeros_like(count)
    pending = kiln.arange(count.shape[0])
    while pending.numel():
        wait = kiln.ceil(kiln.log(_uniform(pending.numel(), generator)) / log_q[pending])
        total_p = total[pending] + wait
        total[pending] = total_p
        going = total_p <= count[pending]
        pending = pending[going]
        successes[pending] += 1
    return successes


def _stirling_tail(k):
    """log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2], by lgamma for k < 10 and the
    asymptotic series beyond."""
    kiln = _kiln()
    exact = kiln.lgamma(k + 1) - ((k + 0.5) * kiln.log(k + 1) - (k + 1) + 0.5 * math.log(2 * math.pi))
    inv = 1 / (k + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 * inv * inv) * inv * inv) * inv
    return kiln.where(k < 10, exact, series)


def _binomial_btrs(count, prob, generator):
    """Binomial samples for count * prob >= 10 (prob <= 1/2) by Hormann's BTRS rejection."""
    kiln = _kiln()
    result = kiln.zeros_like(count)
    pending = kiln.arange(count.shape[0])
    while pending.numel():
        n, p = count[pending], prob[pending]
        spread = kiln.sqrt(n * p * (1 - p))
        b = 1.15 + 2.53 * spread
        a = -0.0873 + 0.0248 * b + 0.01 * p
        c = n * p + 0.5
        v_r = 0.92 - 4.2 / b
        r = p / (1 - p)
        alpha = (2.83 + 5.1 / b) * spread
        m = kiln.floor((n + 1) * p)
        u = _uniform(pending.numel(), generator) - 0.5
        v = _uniform(pending.numel(), generator)
        us = 0.5 - kiln.abs(u)
        k = kiln.floor((2 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= n)
        quick = inside & (us >= 0.07) & (v <= v_r)
        kk = k.clamp(0, None)
        nk = (n - kk).clamp(0, None)
        log_v = kiln.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * kiln.log((m + 1) / (r * (n - m + 1))) + (n + 1) * kiln.log((n - m + 1) / (nk + 1))
                 + (kk + 0.5) * kiln.log(r * (nk + 1) / (kk + 1)) + _stirling_tail(m) + _stirling_tail(n - m)
                 - _stirling_tail(kk) - _stirling_tail(nk))
        accepted = quick | (inside & (log_v <= bound))
        result[pending[accepted]] = k[accepted]
        pending = pending[~accepted]
    return result


def _binomial_values(count, prob, generator):
    kiln = _kiln()
    shape = count.shape
    n = count.reshape(-1).to(kiln.float64)
    p = prob.reshape(-1).to(kiln.float64)
    flip = p > 0.5
    q = kiln.where(flip, 1 - p, p)
    result = kiln.zeros_like(n)
    live = (n > 0) & (p > 0) & (p < 1)
    small = (live & (n * q < 10)).nonzero().reshape(-1)
    large = (live & (n * q >= 10)).nonzero().reshape(-1)
    if small.numel():
        result[small] = _binomial_inversion(n[small], q[small], generator)
    if large.numel():
        result[large] = _binomial_btrs(n[large], q[large], generator)
    result = kiln.where(live & flip, n - result, result)
    result = kiln.where((n > 0) & (p >= 1), n, result)
    result = kiln.where(kiln.isnan(n) | kiln.isnan(p), kiln.full_like(n, math.nan), result)
    return result.reshape(shape).to(count.dtype)


def binomial(count, prob, generator=None):
    """torch.binomial: a Binomial(count, prob) sample per element (count and prob float tensors of
    one dtype, float32 or float64, broadcast together); count <= 0 or prob <= 0 give 0, prob >= 1
    gives count. Not differentiable (backward raises, as torch). See Note [Vectorized rejection
    sampling]."""
    kiln = _kiln()
    for tensor, label in ((count, "count"), (prob, "prob")):
        if not tensor.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {label}, got: "
                             f"{_scalar_name(tensor.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {_scalar_name(prob.dtype)} but expected {_scalar_name(count.dtype)}")
    if count.dtype not in (kiln.float32, kiln.float64):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for '{_scalar_name(count.dtype)}'")
    with kiln.no_grad():
        n, p = kiln.broadcast_tensors(count, prob)
        sample = _binomial_values(n, p, generator)
    return _no_derivative(["binomial"], [sample], [count, prob])[0]


# --- in-place samplers ---------------------------------------------------------------------------------


def _fill_from(self, values):
    """self with values written in (kiln's in-place checks apply); returns self."""
    self.copy_(values)
    return self


def _continuous_only(self, distribution):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_type_word(self.dtype)}")


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Tensor.cauchy_: fills self with Cauchy(median, sigma) samples, median + sigma * tan(pi (u - 1/2))."""
    kiln = _kiln()
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_format_double(sigma)}")
    _continuous_only(self, "Cauchy")
    with kiln.no_grad():
        u = _uniform(self.numel(), generator).reshape(self.shape)
        values = median + sigma * kiln.tan(math.pi * (u - 0.5))
    return _fill_from(self, values)


def geometric_(self, p, *, generator=None):
    """Tensor.geometric_: fills self with Geometric(p) samples on {1, 2, ...} (trials up to the first
    success), ceil(log(u) / log(1 - p)); integer tensors wrap values beyond their range."""
    kiln = _kiln()
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_format_double(p)}")
    if self.dtype == kiln.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    with kiln.no_grad():
        u = 1 - _uniform(self.numel(), generator).reshape(self.shape)
        values = kiln.ceil(kiln.log(u) / math.log1p(-p)).clamp(1, None)
        if not self.dtype.is_floating_point:
            values = values.clamp(None, 2.0 ** 62).to(kiln.int64)
    return _fill_from(self, values)


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Tensor.log_normal_: fills self with exp(N(mean, std^2)) samples."""
    kiln = _kiln()
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_format_double(std)}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{_scalar_name(self.dtype)}'")
    with kiln.no_grad():
        normal = kiln.empty(self.shape, dtype=kiln.float64).normal_(generator=generator)
        values = kiln.exp(normal * std + mean)
    return _fill_from(self, values)


# --- segment_reduce ----------------------------------------------------------------------------------------

_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min", "prod": "prod"}
_DIM_CHECK = ("Expected data.dim() >= {}.dim() to be true, but got false.  (Could this error message be improved?  "
              "If so, please report an enhancement request to PyTorch.)")


def _segment_offsets(data, axis, lengths, offsets, unsafe):
    """The (B, G + 1) int64 segment offsets (B: the flattened dims before axis) from lengths or
    offsets (offsets win when both are given), with torch's checks."""
    kiln = _kiln()
    given, label = (offsets, "offsets") if offsets is not None else (lengths, "lengths")
    if data.dim() < given.dim():
        raise RuntimeError(_DIM_CHECK.format(label + "_value"))
    if axis != given.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {label} but got {axis}.")
    if tuple(given.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected {label} of shape {list(data.shape[:axis])} + [*] for data of "
                           f"shape {list(data.shape)} and axis {axis}, but got {list(given.shape)}")
    if given.dtype not in (kiln.int32, kiln.int64):
        kernel = "_segment_reduce_lengths_cpu_kernel1" if label == "lengths" else "_segment_reduce_offsets_cpu_kernel1"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_name(given.dtype)}'")
    batch = 1
    for size in given.shape[:-1]:
        batch *= size
    given = given.to(kiln.int64).reshape(batch, given.shape[-1])
    if label == "offsets":
        return given
    if not unsafe:
        if given.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        if int(given.min()) < 0:
            raise RuntimeError("lengths contains negative value!")
        if not bool((given.sum(-1) == data.shape[axis]).all()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
    return kiln.cat([kiln.zeros(given.shape[0], 1, dtype=kiln.int64), given.cumsum(-1)], -1)


def _segment_ids(offsets, size):
    """Each position along the axis's segment (B, size); positions in no segment get G."""
    kiln = _kiln()
    groups = offsets.shape[1] - 1
    position = kiln.arange(size, dtype=kiln.int64).expand(offsets.shape[0], size).contiguous()
    starts, ends = offsets[:, :-1].contiguous(), offsets[:, 1:]
    segment = kiln.searchsorted(starts, position, right=True) - 1
    clipped = segment.clamp(0, max(groups - 1, 0))
    inside = (segment >= 0) & (position < ends.gather(1, clipped)) if groups else kiln.zeros_like(position).bool()
    return kiln.where(inside, clipped, kiln.full_like(clipped, groups))


def _segment_forward(data3, ids3, groups, reduce, initial):
    """The (B, G, R) reduction of data3 (B, S, R) over segment ids ids3 (B, S, R; G: no segment)."""
    kiln = _kiln()
    shape = (data3.shape[0], groups + 1, data3.shape[2])
    if reduce in ("sum", "mean"):
        total = kiln.full(shape, 0 if initial is None else initial, dtype=data3.dtype).scatter_add(1, ids3, data3)
        if reduce == "sum":
            return total[:, :groups]
        count = kiln.zeros(shape, dtype=data3.dtype).scatter_add(1, ids3, kiln.ones_like(data3))[:, :groups]
        mean = total[:, :groups] / count
        if initial is None:
            return mean
        return kiln.where(count == 0, kiln.full_like(mean, initial), mean)
    identity = {"prod": 1.0, "max": -math.inf, "min": math.inf}[reduce]
    start = kiln.full(shape, identity if initial is None else initial, dtype=data3.dtype)
    op = {"prod": "prod", "max": "amax", "min": "amin"}[reduce]
    return start.scatter_reduce(1, ids3, data3, op, include_self=True)[:, :groups]


def _segment_backward(grad, data3, ids3, result, reduce, initial):
    """torch's _segment_reduce_backward on the (B, S, R) data: the gradient of each element."""
    kiln = _kiln()
    pad = kiln.zeros(grad.shape[0], 1, grad.shape[2], dtype=grad.dtype)
    per_element = kiln.cat([grad, pad], 1).gather(1, ids3)
    in_segment = ids3 < grad.shape[1]
    if reduce == "sum":
        return per_element
    shape = (grad.shape[0], grad.shape[1] + 1, grad.shape[2])
    counts = kiln.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, kiln.ones_like(data3))
    if reduce == "mean":
        return per_element / counts.gather(1, ids3)
    output = kiln.cat([result, kiln.zeros_like(pad)], 1).gather(1, ids3)
    if reduce in ("max", "min"):
        hit = (kiln.isnan(data3) | (data3 == output)) & in_segment
        picked = kiln.where(hit, per_element, kiln.zeros_like(per_element))
        ties = kiln.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, hit.to(grad.dtype)).gather(1, ids3)
        # torch divides among ties only where the gradient is positive.
        return kiln.where((ties >= 2) & (picked > 0), picked / ties, picked)
    special = kiln.isnan(data3) | (data3 == 0)
    zeros = kiln.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, (data3 == 0).to(grad.dtype)).gather(1, ids3)
    nans = kiln.zeros(shape, dtype=grad.dtype).scatter_add(1, ids3, kiln.isnan(data3).to(grad.dtype)).gather(1, ids3)
    others = kiln.where(special, kiln.ones_like(data3), data3)
    start = kiln.full(shape, 1.0 if initial is None else initial, dtype=grad.dtype)
    rest = start.scatter_reduce(1, ids3, others, "prod", include_self=True).gather(1, ids3)
    zeros_left = zeros - (data3 == 0).to(grad.dtype)
    nans_left = nans - kiln.isnan(data3).to(grad.dtype)
    rest = rest * kiln.where(zeros_left > 0, kiln.zeros_like(rest), kiln.ones_like(rest))
    rest = rest * kiln.where(nans_left > 0, kiln.full_like(rest, math.nan), kiln.ones_like(rest))
    general = per_element * output / data3
    return kiln.where(in_segment, kiln.where(special, per_element * rest, general), kiln.zeros_like(general))


def _segment_function():
    from kiln.autograd import Function

    class SegmentReduceBackward(Function):
        @staticmethod
        def forward(ctx, data3, ids3, groups, reduce, initial):
            result = _segment_forward(data3, ids3, groups, reduce, initial)
            ctx.save_for_backward(data3, ids3, result)
            ctx.reduce, ctx.initial = reduce, initial
            return result

        @staticmethod
        def backward(ctx, grad):
            data3, ids3, result = ctx.saved_tensors
            return _segment_backward(grad, data3, ids3, result, ctx.reduce, ctx.initial), None, None, None, None

    return SegmentReduceBackward


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """torch.segment_reduce: reduces (``sum``, ``mean``, ``max``/``amax``, ``min``/``amin``,
    ``prod``) consecutive segments of ``data`` along ``axis``, the segments given by ``lengths``
    or ``offsets`` (shaped as data's dims before axis plus one segment dim); empty segments give
    ``initial`` or the reduction's identity (mean: nan). ``initial`` also joins every segment.
    Differentiable in data with torch's formulas (ties share a max/min gradient)."""
    kiln = _kiln()
    if data.dim() == 0 and axis not in (0, -1):
        raise IndexError(f"Dimension specified as {axis} but tensor has no dimensions")
    n = max(data.dim(), 1)
    if not -n <= axis < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {axis})")
    axis %= n
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = _REDUCTIONS[reduce]
    with kiln.no_grad():
        segment_offsets = _segment_offsets(data, axis, lengths, offsets, unsafe)
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{_scalar_name(data.dtype)}'")
    size, groups = data.shape[axis], segment_offsets.shape[1] - 1
    rest = 1
    for s in data.shape[axis + 1:]:
        rest *= s
    data3 = data.reshape(segment_offsets.shape[0], size, rest)
    with kiln.no_grad():
        ids3 = _segment_ids(segment_offsets, size).unsqueeze(-1).expand(data3.shape).contiguous()
    result = _segment_function().apply(data3, ids3, groups, reduce, initial)
    return result.reshape(tuple(data.shape[:axis]) + (groups,) + tuple(data.shape[axis + 1:]))


FUNCTIONS = {"poisson": poisson, "binomial": binomial, "segment_reduce": segment_reduce}
METHODS = {"cauchy_": cauchy_, "geometric_": geometric_, "log_normal_": log_normal_}
