"""Check and time the quantized forward kernels (kernels/src/qforward.cu) on one GPU.

    python3 tools/gpubench/qforward_kernels.py [kernels/build/qforward/sm_90.ptx]
    python3 tools/gpubench/qforward_kernels.py --self-test   # host only

Loads the PTX with CuPy and, for Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K:
random blocks (random quants, moderate float16 factors) are dequantized
here on the host in float32 with numpy, following ggml's dequantize_row_*
(an implementation independent of the Go one, checked bit-exact against
gguf-py's gguf.quants.dequantize: --self-test, no GPU needed), and the
references are PyTorch float64 products over those weights. Checks, one JSON line each
("check", "max_rel_err" = max |kernel - ref| / max |ref|, "tol", "ok"):
embed_Q must equal the dequantized rows exactly (tol 0); matvec1_Q, matvec_Q
and matmul_Q (each at every shape, bias and accumulate) must be within 1e-5 of
the float64 product over the dequantized weights. Then the product the
backend launches (matvec1_Q for one row, matvec_Q below 64) is timed at the decode shapes of
Llama-3.2-1B, SmolLM2-135M (in = 576 or 1536: the 32-element formats only;
K-quant rows need a multiple of 256) and Llama-3-8B (one JSON line per case
and variant: us per call from CUDA-graph replays over copies of the weights
that pass the L2, the copy floor = bytes moved (weight blocks + x + y) /
the copy bandwidth measured in this run, and the percentage of that floor
reached).

QF_CASES=name,... narrows the timed cases, QF_TYPES=q4_0,... the formats,
QF_ROWS=1,8,... the row counts, QF_VARIANTS=label=path.ptx,... times other
builds side by side, QF_SKIP_CHECKS=1 skips the checks. Exits 1 if any
check fails.
"""
import json
import math
import os
import sys

import numpy as np

if __name__ == "__main__" and sys.argv[1:2] != ["--self-test"]:
    import cupy as cp
    import torch
    from graph_timing import graph_us

    PTX = sys.argv[1] if len(sys.argv) > 1 else "kernels/build/qforward/sm_90.ptx"
    DEV = torch.device("cuda")
    mod = cp.RawModule(path=PTX)

failed = []

# name: (block elements, block bytes)
TYPES = {"q4_0": (32, 18), "q4_1": (32, 20), "q8_0": (32, 34), "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210)}


def u32(v):
    return np.uint32(v)


def ptr(t):
    return np.uint64(0 if t is None else t.data_ptr())


def u32t(values):
    return torch.from_numpy(np.array(values, dtype=np.uint64).astype(np.uint32).view(np.int32)).to(DEV)


def cdiv(a, b):
    return (a + b - 1) // b


# The products' kernels and grids (kernels/src/qforward.cu): both compute
# the same for any rows; the backend launches matvec below 64 rows.
PRODUCTS = {"matvec1": lambda rows, out: cdiv(out, 8) * rows,
            "matvec": lambda rows, out: cdiv(out, 8) * cdiv(rows, 8),
            "matmul": lambda rows, out: cdiv(out, 64) * cdiv(rows, 64)}


def product(rows):
    return "matvec1" if rows == 1 else "matvec" if rows < 64 else "matmul"


def report(name, got, ref, tol):
    got = got.double().cpu()
    ref = ref.double().cpu()
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    ok = bool(err <= tol) and not math.isnan(err)
    if not ok:
        failed.append(name)
    print(json.dumps({"check": name, "max_rel_err": float(f"{err:.3g}"), "tol": tol, "ok": ok}), flush=True)


def set_f16(blocks, off, scale, rng):
    """Writes float16 factors of about scale (0.5x to 1.5x) at byte off of every block."""
    n = blocks.shape[0]
    v = (scale * (0.5 + rng.random(n))).astype(np.float16)
    blocks[:, off:off + 2] = v.view(np.uint8).reshape(n, 2)


def rand_blocks(typ, rows, cols, seed):
    """rows x cols weights of typ as a [rows, cols/elems, bytes] uint8 array."""
    elems, nbytes = TYPES[typ]
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, (rows * (cols // elems), nbytes), dtype=np.uint8)
    if typ == "q4_0":
        set_f16(b, 0, 0.04, rng)
    elif typ == "q8_0":
        set_f16(b, 0, 0.003, rng)
    elif typ == "q4_1":
        set_f16(b, 0, 0.04, rng)
        set_f16(b, 2, -0.3, rng)
    elif typ == "q4_k":
        set_f16(b, 0, 0.0005, rng)
        set_f16(b, 2, 0.004, rng)
    elif typ == "q5_k":
        set_f16(b, 0, 0.00025, rng)
        set_f16(b, 2, 0.004, rng)
    elif typ == "q6_k":
        set_f16(b, 208, 0.00005, rng)
    return b.reshape(rows, cols // elems, nbytes)


def f16_at(b, off):
    return np.ascontiguousarray(b[..., off:off + 2]).view(np.float16)[..., 0].astype(np.float32)


def scale_min_k4(s):
    """ggml's get_scale_min_k4 for sub-blocks 0..7 of [..., 12] scale bytes."""
    s = s.astype(np.int32)
    sc = np.empty(s.shape[:-1] + (8,), dtype=np.int32)
    m = np.empty_like(sc)
    for j in range(8):
        if j < 4:
            sc[..., j] = s[..., j] & 63
            m[..., j] = s[..., j + 4] & 63
        else:
            sc[..., j] = (s[..., j + 4] & 0xF) | ((s[..., j - 4] >> 6) << 4)
            m[..., j] = (s[..., j + 4] >> 4) | ((s[..., j] >> 6) << 4)
    return sc.astype(np.float32), m.astype(np.float32)


def dequant(typ, b):
    """float32 weights [rows, cols] of blocks [rows, nb, bytes], with ggml's
    float32 operations in its order (numpy: one rounding per operation)."""
    rows = b.shape[0]
    f = np.float32
    if typ == "q4_0":
        d = f16_at(b, 0)[..., None]
        qs = b[..., 2:18].astype(np.int32)
        w = d * (np.concatenate([qs & 15, qs >> 4], -1) - 8).astype(f)
    elif typ == "q4_1":
        d, m = f16_at(b, 0)[..., None], f16_at(b, 2)[..., None]
        qs = b[..., 4:20].astype(np.int32)
        w = d * np.concatenate([qs & 15, qs >> 4], -1).astype(f) + m
    elif typ == "q8_0":
        d = f16_at(b, 0)[..., None]
        w = np.ascontiguousarray(b[..., 2:34]).view(np.int8).astype(f) * d
    elif typ in ("q4_k", "q5_k"):
        d, dmin = f16_at(b, 0)[..., None], f16_at(b, 2)[..., None]
        sc, m = scale_min_k4(b[..., 4:16])
        d1, m1 = d * sc, dmin * m  # [rows, nb, 8]
        qs = (b[..., 16:144] if typ == "q4_k" else b[..., 48:176]).astype(np.int32)
        qh = b[..., 16:48].astype(np.int32) if typ == "q5_k" else None
        parts = []
        for j in range(8):
            q = qs[..., 32 * (j // 2):32 * (j // 2) + 32]
            q = (q & 15) if j % 2 == 0 else (q >> 4)
            if qh is not None:
                q = q | (((qh >> j) & 1) << 4)
            parts.append(d1[..., j:j + 1] * q.astype(f) - m1[..., j:j + 1])
        w = np.concatenate(parts, -1)
    elif typ == "q6_k":
        ql, qh = b[..., 0:128].astype(np.int32), b[..., 128:192].astype(np.int32)
        sc = np.ascontiguousarray(b[..., 192:208]).view(np.int8).astype(f)
        d = f16_at(b, 208)[..., None]
        out = []
        for h in range(2):
            lo, hi = ql[..., 64 * h:64 * h + 64], qh[..., 32 * h:32 * h + 32]
            for k in range(4):
                lb = lo[..., 32 * (k & 1):32 * (k & 1) + 32]
                q = ((lb & 15) if k < 2 else (lb >> 4)) | (((hi >> (2 * k)) & 3) << 4)
                s = np.repeat(sc[..., 8 * h + 2 * k:8 * h + 2 * k + 2], 16, axis=-1)
                out.append(d * s * (q - 32).astype(f))
        w = np.concatenate(out, -1)
    return w.reshape(rows, -1).astype(f)


def checks():
    torch.manual_seed(1)
    sync = torch.cuda.synchronize
    for typ, (elems, _) in TYPES.items():
        # embed: 7 rows, hidden = 3 blocks (K) or 19 blocks (32-element formats)
        vocab, hidden = 7, elems * (3 if elems == 256 else 19)
        blk = rand_blocks(typ, vocab, hidden, 10)
        table = torch.from_numpy(blk.reshape(-1).copy()).to(DEV)
        ref_rows = torch.from_numpy(dequant(typ, blk))
        toks = [0, 6, 3, 7, 2**31, 3]
        out = torch.full((len(toks), hidden), float("nan"), device=DEV)
        mod.get_function("embed_" + typ)((len(toks),), (256,), (ptr(out), ptr(table), ptr(u32t(toks)), u32(len(toks)), u32(hidden), u32(vocab)))
        sync()
        ref = torch.zeros(len(toks), hidden)
        for i, t in enumerate(toks):
            if t < vocab:
                ref[i] = ref_rows[t]
        report(f"embed_{typ}", out, ref, 0.0)
        # matmul: matvec (rows < 64) and tiled paths, odd outs
        for rows, blocks, n in ((1, 16, 1000), (1, 9, 301), (4, 3, 960), (33, 6, 576), (64, 2, 577), (200, 4, 300)):
            k = blocks * elems
            blk = rand_blocks(typ, n, k, 11 + rows)
            w = torch.from_numpy(blk.reshape(-1).copy()).to(DEV)
            wd = torch.from_numpy(dequant(typ, blk)).double()
            x = torch.randn(rows, k, device=DEV)
            b = torch.randn(n, device=DEV)
            y0 = torch.randn(rows, n, device=DEV)
            for kind, grid in PRODUCTS.items():
                f = mod.get_function(f"{kind}_{typ}")
                y = y0.clone()
                f((grid(rows, n),), (256,), (ptr(y), ptr(x), ptr(w), ptr(b), u32(rows), u32(k), u32(n), u32(1)))
                sync()
                ref = x.double().cpu() @ wd.T + b.double().cpu() + y0.double().cpu()
                report(f"{kind}_{typ}/{rows}x{k}x{n}/bias+acc", y, ref, 1e-5)
                y = torch.full((rows, n), float("nan"), device=DEV)
                f((grid(rows, n),), (256,), (ptr(y), ptr(x), ptr(w), ptr(None), u32(rows), u32(k), u32(n), u32(0)))
                sync()
                report(f"{kind}_{typ}/{rows}x{k}x{n}", y, x.double().cpu() @ wd.T, 1e-5)


def copy_bw():
    n = 1 << 28  # 1 GiB of f32
    a = torch.empty(n, device=DEV)
    b = torch.empty(n, device=DEV)
    us = graph_us(lambda: b.copy_(a), reps=10)
    return 2 * a.numel() * 4 / us / 1e6  # TB/s, read + write


CASES = [
    ("llama3.2-1b/qkv", 3072, 2048), ("llama3.2-1b/o", 2048, 2048), ("llama3.2-1b/gate_up", 16384, 2048),
    ("llama3.2-1b/down", 2048, 8192), ("llama3.2-1b/lm_head", 128256, 2048),
    ("smollm2-135m/qkv", 960, 576), ("smollm2-135m/gate_up", 3072, 576), ("smollm2-135m/down", 576, 1536),
    ("smollm2-135m/lm_head", 49152, 576),
    ("llama3-8b/qkv", 6144, 4096), ("llama3-8b/o", 4096, 4096), ("llama3-8b/gate_up", 28672, 4096),
    ("llama3-8b/down", 4096, 14336), ("llama3-8b/lm_head", 128256, 4096),
]


def variants():
    """The modules to time: QF_VARIANTS="label=path.ptx,..." (default: the
    checked PTX alone, "main"). A module without matvec_Q (a build from
    before the split) runs its matmul_Q at every row count."""
    spec = os.environ.get("QF_VARIANTS")
    if not spec:
        return [("main", mod)]
    return [(lbl, cp.RawModule(path=path)) for lbl, path in (v.split("=", 1) for v in spec.split(","))]


def kernel(m, rows, typ):
    """The product the backend launches for rows, in module m; in a module
    from before matvec1_Q, matvec_Q for one row too (and in one from before
    matvec_Q, matmul_Q at every row count)."""
    kinds = [product(rows)] + (["matvec"] if rows == 1 else [])
    for kind in kinds:
        try:
            return m.get_function(f"{kind}_{typ}"), PRODUCTS[kind]
        except Exception:
            pass
    return m.get_function(f"matmul_{typ}"), (lambda r, o: PRODUCTS["matvec" if r < 64 else "matmul"](r, o))


def timings():
    bw = copy_bw()
    print(json.dumps({"copy_TBps": round(bw, 3)}), flush=True)
    want = os.environ.get("QF_CASES")
    types = os.environ.get("QF_TYPES", ",".join(TYPES)).split(",")
    rows_list = [int(r) for r in os.environ.get("QF_ROWS", "1,8").split(",")]
    mods = variants()
    for name, n, k in CASES:
        if want and name not in want.split(","):
            continue
        for typ in types:
            elems, nbytes = TYPES[typ]
            if k % elems:
                continue
            nb = n * (k // elems)
            # Copies of the weights that together pass the L2 (50-60 MB on
            # an H100/H200), used in turn, so every call reads its weights
            # from memory. Random blocks with moderate factors: only the
            # speed matters here.
            copies = max(1, cdiv(256 << 20, nb * nbytes))
            ws = []
            for _ in range(copies):
                w = torch.randint(0, 256, (nb, nbytes), dtype=torch.uint8, device=DEV)
                off = 208 if typ == "q6_k" else 0
                w[:, off:off + 2] = torch.full((nb,), 0.001, dtype=torch.float16, device=DEV).view(torch.uint8).view(nb, 2)
                if typ in ("q4_1", "q4_k", "q5_k"):
                    w[:, 2:4] = torch.full((nb,), 0.001, dtype=torch.float16, device=DEV).view(torch.uint8).view(nb, 2)
                ws.append(w)
            for rows in rows_list:
                x = torch.randn(rows, k, device=DEV)
                y = torch.empty(rows, n, device=DEV)
                bytes_ = nb * nbytes + rows * k * 4 + rows * n * 4
                floor = bytes_ / (bw * 1e6)
                for label, m in mods:
                    fn, grid = kernel(m, rows, typ)
                    turn = [0]

                    def ours():
                        w = ws[turn[0] % copies]
                        turn[0] += 1
                        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                            fn((grid(rows, n),), (256,), (ptr(y), ptr(x), ptr(w), ptr(None), u32(rows), u32(k), u32(n), u32(0)))

                    us = graph_us(ours, reps=max(50, 2 * copies))
                    print(json.dumps({"variant": label, "case": name, "type": typ, "rows": rows, "out": n, "in": k,
                                      "us": round(us, 2), "floor_us": round(floor, 2), "pct_floor": round(100 * floor / us, 1),
                                      "GBps": round(bytes_ / us / 1e3, 1)}), flush=True)
            del ws
            torch.cuda.empty_cache()


def self_test():
    """The numpy dequantization against gguf-py's, bit for bit (no GPU)."""
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize
    qt = {"q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q8_0": Q.Q8_0, "q4_k": Q.Q4_K, "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}
    for typ, (elems, _) in TYPES.items():
        blk = rand_blocks(typ, 5, 3 * elems, 3)
        want = dequantize(blk.reshape(5, -1), qt[typ]).astype(np.float32)
        got = dequant(typ, blk)
        same = bool(np.array_equal(got.view(np.uint32), want.view(np.uint32)))
        print(json.dumps({"self_test": typ, "bit_identical_to_gguf_py": same}))
        if not same:
            failed.append(typ)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-test"]:
        self_test()
    if not os.environ.get("QF_SKIP_CHECKS"):
        checks()
    timings()
    if failed:
        print(json.dumps({"failed": failed}), flush=True)
        sys.exit(1)
