"""A tour of kiln's tensor core: tensors, views, numpy and DLPack interop, the caching
allocator, and what LLVM sees of this machine."""

import numpy as np

import kiln

print("== kiln", kiln.__version__, "==")
kiln.show_config()

print("\n-- creating tensors --")
x = kiln.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print("x =", x)
print("x.shape =", x.shape, " x.stride() =", x.stride(), " x.dtype =", x.dtype)
print("arange:", kiln.arange(0, 10, 2))
print("linspace:", kiln.linspace(0, 1, steps=5, dtype=kiln.float64))
print("full:", kiln.full((2, 2), 7))
print("bool:", kiln.tensor([True, False, True]))
print("bfloat16:", kiln.ones(3, dtype=kiln.bfloat16))

print("\n-- views share storage --")
xt = x.transpose(0, 1)
print("x.T =", xt, " contiguous:", xt.is_contiguous(), " stride:", xt.stride())
row = x[1]
row.numpy()[:] = -1  # write through a view...
print("after writing row 1 through a numpy view of it, x =", x)

print("\n-- numpy and DLPack, zero copy --")
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = kiln.from_numpy(a)
a[0, 0] = 42
print("from_numpy sees the write:", t[0, 0].item() == 42.0)
print("numpy() shares memory:", np.shares_memory(t.numpy(), a))
try:
    import torch  # optional: torch is the oracle in the tests, not a kiln dependency

    tt = torch.from_dlpack(t)
    print("kiln -> torch via DLPack shares memory:", tt.data_ptr() == t.data_ptr())
except ImportError:
    pass

print("\n-- the caching allocator --")
kiln.empty_cache()
before = kiln.memory_stats()["num_device_alloc"]
for _ in range(10):
    big = kiln.empty(16 * 1024 * 1024)  # 64 MiB
    del big
stats = kiln.memory_stats()
print(f"10 x 64 MiB alloc/free -> {stats['num_device_alloc'] - before} OS allocation(s); "
      f"reserved {stats['reserved_bytes.all.current'] / 2**20:.0f} MiB")
