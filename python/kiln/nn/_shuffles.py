"""The rearranging ops of torch.nn.functional that kiln composes from views:
pixel_shuffle, pixel_unshuffle, channel_shuffle (reshape and permute;
native_channel_shuffle is channel_shuffle). Re-exported by kiln.nn.functional.

Imports: kiln._arguments (the declared-signature check), nothing else from kiln (only the tensor's own
methods)."""

from __future__ import annotations

from kiln._arguments import checked_signature


@checked_signature("pixel_shuffle(Tensor input, int upscale_factor)")
def pixel_shuffle(input, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if upscale_factor <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {upscale_factor}")
    c, h, w = input.shape[-3:]
    r = upscale_factor
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    batch = list(input.shape[:-3])
    oc = c // (r * r)
    x = input.reshape(batch + [oc, r, r, h, w])
    n = len(batch)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(batch + [oc, h * r, w * r])

@checked_signature("pixel_unshuffle(Tensor input, int downscale_factor)")
def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if downscale_factor <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {downscale_factor}")
    c, h, w = input.shape[-3:]
    r = downscale_factor
    if h % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w}"
                           f" is not divisible by {r}")
    batch = list(input.shape[:-3])
    n = len(batch)
    x = input.reshape(batch + [c, h // r, r, w // r, r])
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(batch + [c * r * r, h // r, w // r])

@checked_signature("channel_shuffle(Tensor input, int groups)")
def channel_shuffle(input, groups: int):
    """(N, g k, *) with the channels regrouped as (k, g): a transpose of the group dims."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    c = input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    shape = list(input.shape)
    x = input.reshape([shape[0], groups, c // groups] + shape[2:]).transpose(1, 2)
    return x.reshape(shape)

@checked_signature("native_channel_shuffle(Tensor input, int groups)")
def native_channel_shuffle(input, groups: int):
    """F.native_channel_shuffle / torch.native_channel_shuffle: channel_shuffle's values."""
    return channel_shuffle(input, groups)
