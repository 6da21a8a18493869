"""torch.stft and torch.istft, composed from kiln.fft and tensor ops (so differentiable):
frames are a strided unfold of the (centre-padded) signal times the window, transformed
along the frame; istft inverts each frame, windows it again and overlap-adds the frames
with F.fold's col2im op, dividing by the summed squared window (torch's "window envelope")."""

from __future__ import annotations

import warnings

from kiln import _C, fft
from kiln._arguments import check_positional_call, checked_signature
from kiln._padding import pad as _pad

_F = _C._functions


def _fold_frames(columns, length, n_fft, hop_length):
    """Overlap-adds [*, n_fft, frames] columns into a [*, 1, 1, length] signal: F.fold with
    output_size (1, length), kernel_size (1, n_fft) and stride (1, hop_length), on its col2im op."""
    return _F.col2im(columns, (1, length), (1, n_fft), (1, 1), (0, 0), (1, hop_length))


def _window_of(window, n_fft, win_length, like):
    win_length = n_fft if win_length is None else int(win_length)
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is None:
        window = _F.ones([win_length], dtype=like.dtype if not like.dtype.is_complex else
                         (_C.float64 if like.dtype is _C.complex128 else _C.float32))
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _F.cat([_F.zeros([left], dtype=window.dtype), window,
                         _F.zeros([n_fft - win_length - left], dtype=window.dtype)], 0)
    return window


# torch.stft's overloads as its argument parser lists them when none takes a call, with the kinds of the
# nine arguments torch.stft (Python) passes on positionally once it has padded a centred signal itself:
# they bind to the second overload's parameters, or (a str where onesided goes) to the first's.
_STFT_OVERLOADS = (
    ('(Tensor input, int n_fft, int hop_length = None, int win_length = None, Tensor window = None, bool center = '
     'True, str pad_mode = "reflect", bool normalized = False, bool onesided = None, bool return_complex = None, '
     'bool align_to_window = None)', ("Tensor", "int", "int?", "int?", "Tensor?", "bool", "str", "bool", "bool?")),
    ('(Tensor input, int n_fft, int hop_length = None, int win_length = None, Tensor window = None, bool normalized '
     '= False, bool onesided = None, bool return_complex = None, bool align_to_window = None)',
     ("Tensor", "int", "int?", "int?", "Tensor?", "bool", "bool?", "bool?", "bool?")),
)


def _pad_centred(input, n_fft, pad_mode):
    """The signal padded by n_fft // 2 on both ends, as torch.stft pads it (through a 3-D view)."""
    signal_dim = input.dim()
    pad = int(n_fft // 2)
    input = _pad(input.view([1] * (3 - signal_dim) + list(input.shape)), [pad, pad], pad_mode)
    return input.view(input.shape[-signal_dim:])


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """torch.stft: the short-time Fourier transform of a 1-D or batched 2-D signal,
    [batch?, n_fft // 2 + 1 (onesided) or n_fft, frames]. Its steps and their refusals are torch.stft's:
    the centre padding (F.pad's, and Python's own TypeError for an n_fft that does not halve), then the
    op's argument parser on the nine arguments it is given (Note [Declared signatures of Python-level ops])."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center and isinstance(input, _C.TensorBase):
        input = _pad_centred(input, n_fft, pad_mode)
    overload = check_positional_call("stft", (input, n_fft, hop_length, win_length, window, normalized, onesided,
                                              return_complex, align_to_window), _STFT_OVERLOADS)
    if overload == 0:  # the arguments bound to the centring overload's parameters, as in torch
        center, pad_mode, normalized, onesided, return_complex, align_to_window = (
            normalized, onesided, return_complex, align_to_window, None, None)
        if center:
            input = _pad_centred(input, n_fft, pad_mode)
    if return_complex is None:
        if not (input.dtype.is_complex or (window is not None and window.dtype.is_complex)):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    n_fft = int(n_fft)
    hop_length = n_fft // 4 if hop_length is None else int(hop_length)
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        # torch's text says "<" though it allows n_fft == length
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as kiln.hann_window or kiln.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=kiln.ones(n_fft, device=<device>)`.")
    full_window = _window_of(window, n_fft, win_length, input)
    if align_to_window:  # frames start where the (shorter) window starts: the signal shifted by its centring pad
        win = n_fft if win_length is None else int(win_length)
        left = (n_fft - win) // 2
        x = _pad(x, [left, n_fft - win - left])
    frames = x.unfold(-1, n_fft, hop_length) * full_window  # [batch, frames, n_fft]
    complex_input = input.dtype.is_complex or full_window.dtype.is_complex
    if onesided is None:
        onesided = not complex_input
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = fft.rfft(frames, dim=-1, norm=norm) if onesided else fft.fft(frames, dim=-1, norm=norm)
    result = spectrum.transpose(1, 2)
    if not batched:
        result = result.squeeze(0)
    if return_complex:
        return result
    warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                  "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                  "still call torch.view_as_real on the complex output to recover the old return format.")
    return _F.view_as_real(result.contiguous())


@checked_signature("istft(Tensor input, int n_fft, int? hop_length, int? win_length, Tensor? window, bool center, "
                   "bool normalized, bool? onesided, int? length, bool return_complex)")
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the inverse of stft by windowed overlap-add, [batch?, samples]."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}")
    n_fft = int(n_fft)
    hop_length = n_fft // 4 if hop_length is None else int(hop_length)
    batched = input.dim() == 3
    spectrum = input if batched else input.unsqueeze(0)  # [batch, freq, frames]
    n_freq, n_frames = spectrum.shape[1], spectrum.shape[2]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {n_freq}")
    real_dtype = _C.float64 if input.dtype is _C.complex128 else _C.float32
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same "
                      "window used by stft to make the inversion lossless.To suppress this warning and use a "
                      "rectangular window, explicitly set `window=kiln.ones(n_fft, device=<device>)`.")
    full_window = _window_of(window if window is not None else None, n_fft, win_length,
                             _F.zeros([1], dtype=real_dtype))
    norm = "ortho" if normalized else "backward"
    bins = spectrum.transpose(1, 2)  # [batch, frames, freq]
    if onesided:
        frames = fft.irfft(bins, n=n_fft, dim=-1, norm=norm)
    else:
        frames = fft.ifft(bins, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = _F.view_as_real(frames).select(-1, 0)
    frames = frames * full_window  # [batch, frames, n_fft]
    expected = n_fft + hop_length * (n_frames - 1)
    y = _fold_frames(frames.transpose(1, 2), expected, n_fft, hop_length).reshape(frames.shape[0], expected)
    squared = (full_window * full_window).reshape(1, n_fft, 1).expand(1, n_fft, n_frames)
    envelope = _fold_frames(squared, expected, n_fft, hop_length).reshape(expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    elif center:
        end = expected - n_fft // 2
    else:
        end = expected
    stop = min(end, expected)
    y, envelope = y[:, start:stop], envelope[start:stop]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        # torch prints its check's result, (min < 1e-11) == 1, not the minimum
        raise RuntimeError("istft(...): window overlap add min: 1")
    y = y / envelope
    if end > expected:
        y = _F.cat([y, _F.zeros([y.shape[0], end - expected], dtype=y.dtype)], 1)
    return y if batched else y.squeeze(0)
