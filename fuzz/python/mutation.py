"""Byte-level mutations of fuzz inputs, the same kinds fuzz/driver/FuzzDriver.cpp applies
(bit flips, random bytes, insertions, erasures, truncation, duplicated and spliced
ranges), plus zip-aware ones for checkpoints: a record's bytes mutated and the archive
rewritten with valid CRCs, so the mutation reaches the unpickler and the storage reader
instead of stopping at the CRC check. Seeded: a run reproduces."""

from __future__ import annotations

import io
import random
import zipfile


def mutate_bytes(data: bytes, corpus: list[bytes], rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        kind = rng.randrange(7)
        if kind == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif kind == 1 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif kind == 2:
            out[at:at] = bytes([rng.randrange(256)]) * rng.randint(1, 4)
        elif kind == 3:
            del out[at:at + rng.randint(1, 16)]
        elif kind == 4:
            del out[at:]
        elif kind == 5 and out:
            start = rng.randrange(len(out))
            out[at:at] = out[start:start + rng.randint(1, 32)]
        elif kind == 6:
            other = rng.choice(corpus)
            if other:
                start = rng.randrange(len(other))
                out[at:at] = other[start:start + rng.randint(1, 64)]
    return bytes(out)


# Pickle opcodes and values that steer an unpickler somewhere interesting.
PICKLE_TOKENS = [b"\x80\x02", b"c", b"(", b"t", b")", b"R", b"b", b"s", b"u", b"e", b"a", b"q\x00", b"h\x00", b"Q",
                 b"J\xff\xff\xff\x7f", b"J\x00\x00\x00\x80", b"\x8a\x08" + b"\xff" * 8, b"K\x00", b"M\xff\xff",
                 b"N", b"\x88", b"\x89", b"X\xff\xff\xff\x7f", b"ctorch._utils\n_rebuild_tensor_v2\n",
                 b"ctorch\nFloatStorage\n", b"ccollections\nOrderedDict\n", b"cbuiltins\neval\n", b"."]


def mutate_checkpoint(data: bytes, corpus: list[bytes], rng: random.Random) -> bytes:
    """Half the time raw bytes; otherwise one record of the zip, rewritten consistently."""
    if rng.random() < 0.5:
        return mutate_bytes(data, corpus, rng)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            records = [(info.filename, zf.read(info)) for info in zf.infolist()]
    except Exception:  # not a zip (a safetensors seed, or already broken): raw bytes
        return mutate_bytes(data, corpus, rng)
    if not records:
        return mutate_bytes(data, corpus, rng)
    index = rng.randrange(len(records))
    name, payload = records[index]
    if name.endswith(".pkl") and rng.random() < 0.5:
        at = rng.randint(0, len(payload))
        token = rng.choice(PICKLE_TOKENS)
        payload = payload[:at] + token + payload[at + (len(token) if rng.random() < 0.5 else 0):]
    else:
        payload = mutate_bytes(payload, corpus, rng)
    records[index] = (name, payload)
    if rng.random() < 0.1:
        del records[rng.randrange(len(records))]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for record_name, record in records:
            zf.writestr(record_name, record)
    return buf.getvalue()
