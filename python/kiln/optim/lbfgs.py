"""L-BFGS with torch's signature, checks, state keys (func_evals, n_iter, d,
t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al) and
iteration: the two-loop recursion over a limited history, a fixed step
``lr`` or the strong-Wolfe line search (``line_search_fn="strong_wolfe"``,
cubic interpolation, bracketing then zoom). Scalars the iteration derives
from dot products stay 0-dim tensors of the parameters' dtype, as in torch,
so float32 runs round the same way. One parameter group only, as torch;
complex parameters count as pairs of reals."""

from __future__ import annotations

from kiln import _C
from kiln.autograd import grad_mode
from kiln.optim._common import check_lr, real, to_scalar
from kiln.optim.optimizer import Optimizer

__all__ = ["LBFGS"]


def _num(x) -> float:
    """A 0-dim tensor or a number as a Python float (for ``alpha=`` arguments)."""
    return x.item() if isinstance(x, _C.TensorBase) else float(x)


def _sqrt_scalar(x):
    return x.sqrt() if isinstance(x, _C.TensorBase) else x ** 0.5


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    bounds (default: the interval between x1 and x2); the midpoint when the
    cubic has no real minimizer."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if not disc >= 0:
        return (lo + hi) / 2.0
    d2 = _sqrt_scalar(disc)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """One trial of the line search: step t, loss f, flat gradient g, slope gtd."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along d from loss f / gradient g / slope gtd at t = 0 for a
    step meeting the strong Wolfe conditions. ``evaluate(t)`` returns the
    loss and flat gradient at x + t d. Returns (f, g, t, evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)
    f_new, g_new = evaluate(t)
    evals = 1
    new = _Point(t, f_new, g_new, g_new.dot(d))
    prev = start
    done = False
    ls_iter = 0
    # Phase 1: grow the step until the minimum is bracketed (or the conditions hold).
    while ls_iter < max_ls:
        if new.f > (f + c1 * new.t * gtd) or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        min_step = new.t + 0.01 * (new.t - prev.t)
        max_step = new.t * 10
        t_next = _cubic_minimizer(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds=(min_step, max_step))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        f_new, g_new = evaluate(t_next)
        evals += 1
        new = _Point(t_next, f_new, g_new, g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        # Out of evaluations: the zoom below does not run, so no slopes are needed.
        bracket = [_Point(0, f, start.g, None), _Point(new.t, new.f, new.g, None)]
    # Phase 2: zoom into the bracket.
    insufficient = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:
        a, b = bracket[0], bracket[1]
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = _cubic_minimizer(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        t_max, t_min = max(a.t, b.t), min(a.t, b.t)
        eps = 0.1 * (t_max - t_min)
        if min(t_max - t, t - t_min) < eps:
            # Too close to an end: move eps inside, unless the last trial was already close.
            if insufficient or t >= t_max or t <= t_min:
                t = t_max - eps if abs(t - t_max) < abs(t - t_min) else t_min + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket[low].f:
            bracket[high] = _Point(t, f_new, g_new.clone(), gtd_new)
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = _Point(t, f_new, g_new.clone(), gtd_new)
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # -- the parameters as one flat vector ---------------------------------------------------
    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)
        return self._numel_cache

    def _flat_grad(self):
        pieces = [real(_C._functions.zeros((p.numel(),), dtype=p.dtype) if p.grad is None else p.grad).reshape(-1)
                  for p in self._params]
        return _C._functions.cat(pieces, 0)

    def _move(self, step, direction) -> None:
        """params += step * direction (direction flat)."""
        offset = 0
        alpha = _num(step)
        for p in self._params:
            p = real(p)
            n = p.numel()
            p.add_(direction[offset:offset + n].reshape(tuple(p.shape)), alpha=alpha)
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _evaluate_at(self, closure, saved, t, d):
        """Loss and flat gradient at saved + t d, then the parameters put back to saved."""
        self._move(t, d)
        loss = float(closure())
        flat_grad = self._flat_grad()
        for p, value in zip(self._params, saved):
            p.copy_(value)
        return loss, flat_grad

    # -- the step -------------------------------------------------------------------------
    def step(self, closure):  # type: ignore[override]
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")
        with grad_mode.set_grad_enabled(False):
            return self._run(closure)

    def _run(self, closure):
        def grad_closure():
            with grad_mode.set_grad_enabled(True):
                return closure()

        group = self.param_groups[0]
        lr = to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = grad_closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(_num(t))
                ys = y.dot(s)
                if ys > 1e-10:  # curvature condition: keep the pair
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(ys.reciprocal())
                    H_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = self._two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, flat_grad.abs().sum().reciprocal()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                saved = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    lambda step: self._evaluate_at(grad_closure, saved, step, d), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._move(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._move(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(grad_closure())
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(_num(t)).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
        """The L-BFGS direction -H g from the stored (s, y) pairs."""
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-_num(al[i]))
        r = q.mul(H_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=_num(al[i] - be_i))
        return r
