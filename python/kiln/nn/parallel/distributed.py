"""kiln.nn.parallel.DistributedDataParallel: data-parallel training over a
kiln.distributed process group, as torch's DDP.

At construction the module's parameters and buffers are broadcast from rank 0,
so every rank starts from the same weights. During backward, each parameter's
post-accumulate-grad hook copies its gradient into a bucket; a bucket whose
gradients are all in is all-reduced (averaged) asynchronously while backward
goes on, and a final callback of the backward waits for the buckets and writes
the averaged gradients back into ``.grad``. See Note [DDP buckets].
"""

from __future__ import annotations

from contextlib import contextmanager

from kiln import _C
from kiln.distributed import ReduceOp, all_reduce, broadcast
from kiln.distributed._grad_bucket import GradBucket
from kiln.distributed._process_group import resolve_group
from kiln.futures import Future
from kiln.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_MIB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
# With the default bucket_cap_mb, torch's first bucket is small, so communication starts early in backward;
# a bucket_cap_mb the caller gives caps the first bucket too.
_FIRST_BUCKET_BYTES = 1 * _MIB

# Note [DDP buckets]
# ------------------
# Parameters are bucketed in reverse registration order (backward usually
# produces the last layer's gradients first), each bucket one dtype and at most
# bucket_cap_mb (the first 1 MiB). Every rank launches bucket all-reduces in
# bucket order, whatever order its hooks fire in: bucket k starts once it is
# full and buckets 0..k-1 have started. Collectives then match across ranks
# even when backward visits parameters in different orders. The all-reduces
# run on the process group's worker thread (Gloo: Note [One worker thread per
# process group]) or its stream (NCCL, for a module on one GPU: Note [NCCL
# streams and work]; the bucket copies queued on the caller's stream come
# first) while the autograd engine keeps going: that is the overlap. With
# find_unused_parameters, a parameter that got no gradient this backward
# counts as zero, the buckets still missing one are launched by the final
# callback, and a small all-reduce of "used" flags decides which unused
# parameters get a .grad (those some other rank used). Without it, a missing
# gradient leaves the reduction unfinished and the next forward raises
# torch's error.
#
# A communication hook (register_comm_hook) replaces the averaging all-reduce:
# each bucket, launched in the same order, goes to hook(state, GradBucket) with
# its raw (unaveraged) gradients, and the Future it returns is waited on by the
# final callback, whose value is written back as the bucket's reduced gradients.


class _Bucket:
    """Parameters whose gradients are all-reduced together, and their flat buffer."""

    def __init__(self, params: list) -> None:
        self.params = params
        self.offsets = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        # Every slice is written (a gradient, or zeros for an unused parameter) before the bucket's all-reduce.
        self.buffer = params[0].detach().new_empty((total,))

    def slice_of(self, i: int):
        start = self.offsets[i]
        return self.buffer[start:start + self.params[i].numel()]


def _buckets_of(params: list, cap_bytes: int, first_cap_bytes: int) -> list[_Bucket]:
    buckets: list[_Bucket] = []
    open_by_dtype: dict = {}
    for p in reversed(params):
        nbytes = p.numel() * p.element_size()
        current = open_by_dtype.get(p.dtype)
        limit = first_cap_bytes if buckets and current is buckets[0] else cap_bytes
        if current is None or current[1] + nbytes > limit:
            current = [[], 0]
            open_by_dtype[p.dtype] = current
            buckets.append(current)
        current[0].append(p)
        current[1] += nbytes
    return [_Bucket(members) for members, _ in buckets]


def _single_device(module, device_ids, output_device):
    """The one device of ``module``'s parameters (CPU, or one GPU: the NCCL group's); device_ids and
    output_device may name that GPU (an index or a device), as torch's single-device modules take them.
    None when the parameters are on several devices and neither argument is given."""
    devices = {p.device for p in module.parameters()}
    device = next(iter(devices)) if len(devices) == 1 else None
    if device_ids is None and output_device is None:
        return device

    def names_device(d) -> bool:
        index = d.index if hasattr(d, "index") else d
        return device is not None and device.type == "cuda" and index == device.index

    ids_ok = device_ids is None or (len(device_ids) == 1 and names_device(device_ids[0]))
    output_ok = output_device is None or names_device(output_device)
    if device is None or not ids_ok or not output_ok:
        raise ValueError(
            "DistributedDataParallel device_ids and output_device arguments only work with single-device/"
            f"multiple-device GPU modules or CPU modules, but got device_ids {device_ids}, output_device "
            f"{output_device}, and module parameters {devices}.")
    return device


def _broadcast_coalesced(tensors: list, group) -> None:
    """Every rank's tensors become rank 0's of the group: one broadcast per dtype of a flat copy."""
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    for same in by_dtype.values():
        flat = same[0].detach().new_empty((sum(t.numel() for t in same),))
        start = 0
        for t in same:
            flat[start:start + t.numel()].copy_(t.detach().reshape(-1))
            start += t.numel()
        broadcast(flat, src=group._ranks[0], group=group)
        start = 0
        for t in same:
            t.detach().copy_(flat[start:start + t.numel()].view(t.shape))
            start += t.numel()


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel on kiln.distributed: CPU modules over Gloo, a module on
    one GPU over NCCL (device_ids=[its index] or None)."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool = True,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None, skip_all_reduce_unused_params: bool = False, bucket_cap_mb_list=None,
                 batched_grad_copy: bool = False, forward_sync_buffers=None) -> None:
        super().__init__()
        group = resolve_group(process_group)  # ValueError before init_process_group, as torch's
        if group is None:
            raise ValueError("DistributedDataParallel: this process is not a member of process_group")
        params = []
        seen = set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        device = _single_device(module, device_ids, output_device)
        if mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel: mixed_precision and device_mesh are not supported "
                                      "by kiln")
        self.module = module
        on_gpu = device is not None and device.type == "cuda"
        self.device_ids = [device.index] if on_gpu else None
        self.output_device = device.index if on_gpu else None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MIB)
        object.__setattr__(self, "process_group", group)
        object.__setattr__(self, "_params", params)
        if init_sync:
            _broadcast_coalesced(params + list(module.buffers()), group)
        first_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        object.__setattr__(self, "_buckets", _buckets_of(params, self.bucket_bytes_cap, first_cap))
        place = {}
        for b, bucket in enumerate(self._buckets):
            for i, p in enumerate(bucket.params):
                place[id(p)] = (b, i)
        object.__setattr__(self, "_place", place)
        object.__setattr__(self, "_hooks", [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params])
        object.__setattr__(self, "_comm_hook", None)
        self._reset_reduction()
        object.__setattr__(self, "_unfinished", None)

    # --- the reducer -------------------------------------------------------------
    def _reset_reduction(self) -> None:
        object.__setattr__(self, "_in_backward", False)
        object.__setattr__(self, "_missing", [len(b.params) for b in self._buckets])
        object.__setattr__(self, "_ready", [[False] * len(b.params) for b in self._buckets])
        object.__setattr__(self, "_next_bucket", 0)
        object.__setattr__(self, "_works", [])

    def _grad_ready(self, param) -> None:
        if not self.require_backward_grad_sync:
            return
        if not self._in_backward:
            self._reset_reduction()
            object.__setattr__(self, "_in_backward", True)
            _C._queue_backward_callback(self._finish_reduction)
        b, i = self._place[id(param)]
        if self._ready[b][i]:
            return
        bucket = self._buckets[b]
        target = bucket.slice_of(i)
        grad = param.grad
        if grad.data_ptr() != target.data_ptr():
            target.copy_(grad.detach().reshape(-1))
        self._ready[b][i] = True
        self._missing[b] -= 1
        self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        while self._next_bucket < len(self._buckets) and self._missing[self._next_bucket] == 0:
            index = self._next_bucket
            bucket = self._buckets[index]
            if self._comm_hook is None:
                self._works.append(all_reduce(bucket.buffer, op=ReduceOp.AVG, group=self.process_group,
                                              async_op=True))
            else:
                state, hook = self._comm_hook
                grad_bucket = GradBucket(index, bucket.buffer, bucket.params, bucket.offsets,
                                         index == len(self._buckets) - 1)
                future = hook(state, grad_bucket)
                if not isinstance(future, Future):
                    raise RuntimeError(f"DistributedDataParallel: a communication hook must return a "
                                       f"kiln.futures.Future, got {type(future).__name__}")
                self._works.append((bucket, future))
            object.__setattr__(self, "_next_bucket", index + 1)

    def _finish_reduction(self) -> None:
        used = None
        if self._next_bucket < len(self._buckets):
            if not self.find_unused_parameters:
                missing = [self._param_name(b.params[i]) for b, flags in zip(self._buckets, self._ready)
                           for i, ok in enumerate(flags) if not ok]
                object.__setattr__(self, "_unfinished", missing)
                self._wait_for_buckets()
                object.__setattr__(self, "_in_backward", False)
                return
            for b, bucket in enumerate(self._buckets):
                for i, ok in enumerate(self._ready[b]):
                    if not ok:
                        bucket.slice_of(i).zero_()
                        self._missing[b] -= 1
            self._launch_ready_buckets()
        if self.find_unused_parameters:
            flags = [float(ok) for flags in self._ready for ok in flags]
            used = self._buckets[0].buffer.new_tensor(flags)
            all_reduce(used, op=ReduceOp.MAX, group=self.process_group)
            used = used.tolist()  # one copy to the host (the flags may be on a GPU)
        self._wait_for_buckets()
        k = 0
        for bucket in self._buckets:
            for i, p in enumerate(bucket.params):
                globally_used = used is None or used[k] > 0
                k += 1
                if not globally_used:
                    continue
                averaged = bucket.slice_of(i).view(p.shape)
                if self.gradient_as_bucket_view:
                    p.grad = averaged
                elif p.grad is None:
                    p.grad = averaged.clone()
                elif p.grad.data_ptr() != averaged.data_ptr():
                    p.grad.detach().copy_(averaged)
        object.__setattr__(self, "_in_backward", False)

    def _wait_for_buckets(self) -> None:
        """Waits for every launched bucket; a hook's result becomes the bucket's reduced gradients."""
        for work in self._works:
            if not isinstance(work, tuple):
                work.wait()
                continue
            bucket, future = work
            reduced = future.wait()
            if isinstance(reduced, (list, tuple)):
                reduced = reduced[0]
            if reduced.numel() != bucket.buffer.numel():
                raise RuntimeError(f"DistributedDataParallel: the communication hook's result has {reduced.numel()} "
                                   f"elements; the bucket has {bucket.buffer.numel()}")
            if reduced.data_ptr() != bucket.buffer.data_ptr():
                bucket.buffer.copy_(reduced.detach().reshape(-1))

    def _param_name(self, param) -> str:
        for name, p in self.module.named_parameters():
            if p is param:
                return name
        return "?"

    # --- the module --------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._unfinished is not None:
            names = ", ".join(self._unfinished)
            object.__setattr__(self, "_unfinished", None)
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`kiln.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                f"participate in calculating loss. Parameters which did not receive grad for rank "
                f"{self.process_group.rank()}: {names}")
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                _broadcast_coalesced(buffers, self.process_group)
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Gradients accumulate locally (no all-reduce) inside the block; the first backward after it syncs."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook) -> None:
        """Reduces each gradient bucket with ``hook(state, bucket)`` instead of the averaging all-reduce.

        ``bucket`` is a kiln.distributed.GradBucket; the hook returns a kiln.futures.Future of the
        reduced buffer (kiln.distributed.algorithms.ddp_comm_hooks.default_hooks has torch's). It can be
        registered once, before training."""
        if not callable(hook):
            raise TypeError(f"Communication hook must be callable, got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        object.__setattr__(self, "_comm_hook", (state, hook))

    def _set_static_graph(self) -> None:
        self.static_graph = True
