"""Check and time the forward kernels (kernels/src/forward.cu) on one GPU.

    python3 tools/gpubench/forward_kernels.py [kernels/build/forward/sm_90.ptx]

Loads the PTX with CuPy, runs every kernel on random data and compares it
with a PyTorch reference computed in float64 from the same inputs (one JSON
line per check: "check", "max_rel_err" (max |kernel - ref| / max |ref|),
"tol" and "ok"), then times matmul at decode shapes of SmolLM2-135M and
Llama-3-8B with bf16 weights, rows 1 (batch-1 decode), 8 and 32 (batched
decode) and 512 (prefill), one JSON line per case: microseconds per call
from CUDA-graph replays, the weight-read floor = bytes / the copy bandwidth
measured in this run, the percentage of that floor reached, TFLOP/s, and
torch's bf16 F.linear on the same shape, graph-replayed too; then
attention_f32 at Llama-3-8B decode and prefill shapes against the K/V read
floor and torch's scaled_dot_product_attention. Before those, matmul_tc_bf16
(tensor cores) against torch.matmul in bf16 and the SIMT matmul_bf16 at
the Llama-3.2-1B shapes (tc_timings; FK_SKIP_TC=1 skips it).

Launch shapes follow the comments in forward.cu (FW_*_THREADS, grid rules).
FK_CASES=name,... narrows the timed cases; FK_SKIP_CHECKS=1 skips the checks;
FK_TC_ROWS=16,32 narrows tc_timings' row counts; FK_SKIP_ATTENTION=1 skips
the attention timings.
Exits 1 if any check fails.
"""
import json
import math
import os
import sys

import cupy as cp
import numpy as np
import torch

from graph_timing import graph_us

PTX = sys.argv[1] if len(sys.argv) > 1 else "kernels/build/forward/sm_90.ptx"
DEV = torch.device("cuda")
mod = cp.RawModule(path=PTX)
failed = []


def maxntid(path):
    """Each kernel's block size: its .maxntid (forward.cu's FW_*_THREADS,
    the only block size its kernels run with)."""
    out, name = {}, None
    for line in open(path):
        if ".entry " in line:
            name = line.split(".entry ")[1].split("(")[0].strip()
        elif ".maxntid" in line and name:
            out[name] = int(line.split(".maxntid")[1].split(",")[0])
            name = None
    return out


THREADS = maxntid(PTX)
ATTP_ROWS = 16  # FW_ATTP_ROWS: attention_prefill_f32's query tokens per block


def u32(v):
    return np.uint32(v)


def f32(v):
    return np.float32(v)


def ptr(t):
    """A tensor's device pointer as the kernel's 8-byte pointer argument
    (0 for None: an absent optional argument)."""
    return np.uint64(0 if t is None else t.data_ptr())


def u32t(values):
    """A device tensor of u32 values (held as int32 bits: torch has no uint32)."""
    return torch.from_numpy(np.array(values, dtype=np.uint64).astype(np.uint32).view(np.int32)).to(DEV)


def launch(name, grid, *args):
    mod.get_function(name)((int(grid),), (THREADS[name],), args)


def cdiv(a, b):
    return (a + b - 1) // b


def mm_grid(rows, out):
    return cdiv(out, 64) * cdiv(rows, 64) if rows >= 64 else cdiv(out, 8) * cdiv(rows, 8)


def tc_grid(rows, out):
    """matmul_tc_W's grid: below 64 rows 32-row x 16-output tiles (out < 16384)
    or 32 x 64; 128 x 64 from 64 rows."""
    if rows >= 64:
        return cdiv(out, 64) * cdiv(rows, 128)
    return cdiv(out, 16 if out < 16384 else 64) * cdiv(rows, 32)


def tcx_grid(rows, out):
    """matmul_tcx_W's grid: 32-row tiles of 8 (out <= 2048), 16 (below
    16384) or 64 outputs."""
    return cdiv(out, 8 if out <= 2048 else 16 if out < 16384 else 64) * cdiv(rows, 32)


def tcx_split(x, rows, k, s):
    """tc_split_x_<s> of x into a new buffer (16-row tiles of 32-wide
    chunks, 2 KB each); returns it."""
    xs = torch.empty(cdiv(rows, 16) * cdiv(k, 32) * 512, device=DEV)
    launch("tc_split_x_" + s, cdiv(cdiv(rows, 16) * cdiv(k, 32) * 64, 256), ptr(xs), ptr(x), u32(rows), u32(k))
    return xs


def report(name, got, ref, tol):
    got = got.double().cpu()
    ref = ref.double().cpu()
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    ok = bool(err <= tol) and not math.isnan(err)
    if not ok:
        failed.append(name)
    print(json.dumps({"check": name, "max_rel_err": float(f"{err:.3g}"), "tol": tol, "ok": ok}), flush=True)


WDT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def checks():
    torch.manual_seed(1)
    sync = torch.cuda.synchronize
    # embed
    for s, dt in WDT.items():
        vocab, hidden = 1000, 577
        table = torch.randn(vocab, hidden, device=DEV).to(dt)
        tokens = u32t([0, 999, 5, 1000, 2**31, 17])
        out = torch.full((6, hidden), float("nan"), device=DEV)
        launch("embed_" + s, 6, ptr(out), ptr(table), ptr(tokens), u32(6), u32(hidden), u32(vocab))
        sync()
        ref = torch.zeros(6, hidden, dtype=torch.float64)
        for i, t in enumerate([0, 999, 5, 1000, 2**31, 17]):
            if t < vocab:
                ref[i] = table[t].double().cpu()
        report(f"embed_{s}", out, ref, 0.0)
    # rmsnorm
    for s, dt in WDT.items():
        for dim in (576, 4096, 1001):
            x = torch.randn(5, dim, device=DEV) * 3
            w = torch.randn(dim, device=DEV).to(dt)
            out = torch.empty_like(x)
            launch("rmsnorm_" + s, 5, ptr(out), ptr(x), ptr(w), u32(5), u32(dim), f32(1e-5))
            sync()
            xd = x.double()
            ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-5) * w.double()
            report(f"rmsnorm_{s}/dim{dim}", out, ref, 2e-6)
    # matmul, both paths, bias, accumulate
    for s, dt in WDT.items():
        for rows, k, n in ((1, 4096, 1000), (1, 577, 301), (4, 576, 960), (33, 1536, 576), (64, 576, 577), (200, 1024, 300)):
            x = torch.randn(rows, k, device=DEV)
            w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).to(dt)
            b = torch.randn(n, device=DEV)
            y0 = torch.randn(rows, n, device=DEV)
            y = y0.clone()
            launch("matmul_" + s, mm_grid(rows, n), ptr(y), ptr(x), ptr(w), ptr(b), u32(rows), u32(k), u32(n), u32(1))
            sync()
            ref = x.double() @ w.double().T + b.double() + y0.double()
            report(f"matmul_{s}/{rows}x{k}x{n}/bias+acc", y, ref, 1e-5)
            y = torch.empty(rows, n, device=DEV)
            launch("matmul_" + s, mm_grid(rows, n), ptr(y), ptr(x), ptr(w), ptr(None), u32(rows), u32(k), u32(n), u32(0))
            sync()
            report(f"matmul_{s}/{rows}x{k}x{n}", y, x.double() @ w.double().T, 1e-5)
    # matmul_tc (tensor cores, hi/lo split activations): awkward shapes
    # (in not a multiple of 8: the scalar path; partial tiles), then the
    # Llama-3.2-1B shapes at batched-decode and prefill row counts. The
    # split keeps x to 2^-16 (bf16) / 2^-22 (f16) relative; the tensor
    # cores' own f32 accumulation is not IEEE-exact, hence 2e-5 of max|ref|
    # at in <= 2048. Both errors are sums over in terms of random sign, so
    # against max|ref| they grow as sqrt(in): the bound scales with it (the
    # first H200 run measured 2.0e-5 to 2.8e-5 at in 8192, and stayed
    # within 2e-5 at every in <= 2048).
    for s in ("bf16", "f16"):
        shapes = [(16, 77, 100), (33, 576, 577), (130, 1040, 300), (1, 64, 8)]
        shapes += [(r, k, n) for r in (16, 32, 64, 512, 513) for k, n in TC_SHAPES]
        for rows, k, n in shapes:
            x = torch.randn(rows, k, device=DEV)
            w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).to(WDT[s])
            b = torch.randn(n, device=DEV)
            y0 = torch.randn(rows, n, device=DEV)
            y = y0.clone()
            launch("matmul_tc_" + s, tc_grid(rows, n), ptr(y), ptr(x), ptr(w), ptr(b), u32(rows), u32(k), u32(n), u32(1))
            sync()
            ref = x.double() @ w.double().T
            tol = 2e-5 * max(1.0, math.sqrt(k / 2048))
            report(f"matmul_tc_{s}/{rows}x{k}x{n}/bias+acc", y, ref + b.double() + y0.double(), tol)
            y = torch.full((rows, n), float("nan"), device=DEV)
            launch("matmul_tc_" + s, tc_grid(rows, n), ptr(y), ptr(x), ptr(w), ptr(None), u32(rows), u32(k), u32(n), u32(0))
            sync()
            report(f"matmul_tc_{s}/{rows}x{k}x{n}", y, ref, tol)
    # tc_split_x + matmul_tcx (the backend's pair from 16 to 511 rows): the
    # same bound as matmul_tc, and below 64 rows matmul_tc's bytes exactly
    # (same slices, chunks and fragments), on all three output tiles.
    for s in ("bf16", "f16"):
        shapes = [(16, 77, 100), (33, 576, 577), (63, 80, 2056), (40, 64, 16392), (1, 64, 8)]
        shapes += [(r, k, n) for r in (16, 32) for k, n in TC_SHAPES]
        for rows, k, n in shapes:
            x = torch.randn(rows, k, device=DEV)
            w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).to(WDT[s])
            b = torch.randn(n, device=DEV)
            y0 = torch.randn(rows, n, device=DEV)
            y, yt = y0.clone(), y0.clone()
            xs = tcx_split(x, rows, k, s)
            launch("matmul_tcx_" + s, tcx_grid(rows, n), ptr(y), ptr(xs), ptr(w), ptr(b), u32(rows), u32(k), u32(n), u32(1))
            launch("matmul_tc_" + s, tc_grid(rows, n), ptr(yt), ptr(x), ptr(w), ptr(b), u32(rows), u32(k), u32(n), u32(1))
            sync()
            ref = x.double() @ w.double().T
            tol = 2e-5 * max(1.0, math.sqrt(k / 2048))
            report(f"matmul_tcx_{s}/{rows}x{k}x{n}/bias+acc", y, ref + b.double() + y0.double(), tol)
            same = bool(torch.equal(y, yt))
            if not same:
                failed.append(f"matmul_tcx_{s}/{rows}x{k}x{n}/bytes")
            print(json.dumps({"check": f"matmul_tcx_{s}/{rows}x{k}x{n}/bytes_of_matmul_tc", "ok": same}), flush=True)
    # rope (llama3-like base), positions up to 2^20
    for heads, hd in ((32, 128), (9, 64), (3, 10)):
        half = hd // 2
        inv = (1.0 / (500000.0 ** (torch.arange(0, half, device=DEV, dtype=torch.float64) * 2 / hd))).float()
        pos = torch.tensor([0, 1, 100, 8191, 131071, 131072, 1 << 20], device=DEV, dtype=torch.int32)
        T = pos.numel()
        stride = heads * hd + 7
        x = torch.randn(T, stride, device=DEV)
        x0 = x.clone()
        launch("rope_f32", T, ptr(x), ptr(pos), ptr(inv), u32(T), u32(heads), u32(hd), u32(stride))
        sync()
        ang = (inv[None, :] * pos[:, None].float()).double()  # float32 angle, as transformers
        c, sn = torch.cos(ang), torch.sin(ang)
        v = x0[:, : heads * hd].double().view(T, heads, hd)
        lo, hi = v[..., :half], v[..., half:]
        ref = torch.cat([lo * c[:, None] - hi * sn[:, None], hi * c[:, None] + lo * sn[:, None]], -1).view(T, -1)
        ref = torch.cat([ref, x0[:, heads * hd:].double()], -1)
        report(f"rope_f32/h{heads}/d{hd}", x, ref, 1e-6)
    # kv_store + attention over a scattered block table (decode and prefill)
    for H, KV, hd, ctx, nq in ((32, 8, 128, [300, 17, 1], [1, 1, 1]), (9, 3, 64, [130], [130]), (8, 8, 64, [40, 64], [40, 1]),
                               (8, 2, 48, [100, 37, 5], [60, 37, 1]), (32, 8, 64, [200], [200])):
        bs = 16
        kvd = KV * hd
        stride = (H + 2 * KV) * hd
        max_blocks = max(cdiv(n, bs) for n in ctx) + 1
        nseq = len(ctx)
        tables = torch.randperm(nseq * max_blocks, device=DEV).int().view(nseq, max_blocks)
        slots_total = nseq * max_blocks * bs
        kc = torch.zeros(slots_total, kvd, device=DEV)
        vc = torch.zeros(slots_total, kvd, device=DEV)
        # fill every position of every sequence through kv_store
        all_rows, keys, vals = [], {}, {}  # all_rows keeps every source alive until the sync
        for sq, n in enumerate(ctx):
            r = torch.randn(n, stride, device=DEV)
            sl = torch.tensor([int(tables[sq, j // bs]) * bs + j % bs for j in range(n)], device=DEV, dtype=torch.int32)
            launch("kv_store_f32", n, ptr(kc), ptr(vc), ptr(r), ptr(sl), u32(n), u32(kvd), u32(H * hd), u32(H * hd + kvd), u32(stride), u32(slots_total))
            keys[sq] = r[:, H * hd:H * hd + kvd].double().cpu()
            vals[sq] = r[:, H * hd + kvd:].double().cpu()
            all_rows.append(r)
        sync()
        tab = tables.cpu()
        ok_store = all(torch.equal(kc[int(tab[sq, j // bs]) * bs + j % bs].double().cpu(), keys[sq][j])
                       and torch.equal(vc[int(tab[sq, j // bs]) * bs + j % bs].double().cpu(), vals[sq][j])
                       for sq, n in enumerate(ctx) for j in range(n))
        print(json.dumps({"check": f"kv_store_f32/h{H}/kv{KV}", "ok": ok_store}), flush=True)
        if not ok_store:
            failed.append("kv_store_f32")
        qseq, qpos = [], []
        for sq, n in enumerate(ctx):
            for p in range(n - nq[sq], n):
                qseq.append(sq)
                qpos.append(p)
        T = len(qseq)
        qkv = torch.randn(T, stride, device=DEV)
        out = torch.empty(T, H * hd, device=DEV)
        scale = 1 / math.sqrt(hd)
        # Named, not temporaries: a freed tensor's memory may be handed to the
        # next allocation before the kernel runs.
        qs, qp, tb = u32t(qseq), u32t(qpos), tables.contiguous()
        launch("attention_f32", T * H, ptr(out), ptr(qkv), ptr(kc), ptr(vc), ptr(qs), ptr(qp), ptr(tb),
               u32(max_blocks), u32(bs), u32(T), u32(H), u32(KV), u32(hd), u32(stride), f32(scale))
        sync()
        ref = torch.empty(T, H * hd, dtype=torch.float64)
        qd = qkv.double().cpu()
        g = H // KV
        for i in range(T):
            sq, p = qseq[i], qpos[i]
            for h in range(H):
                kh = keys[sq][: p + 1, (h // g) * hd:(h // g + 1) * hd]
                vh = vals[sq][: p + 1, (h // g) * hd:(h // g + 1) * hd]
                a = torch.softmax(kh @ qd[i, h * hd:(h + 1) * hd] * scale, 0)
                ref[i, h * hd:(h + 1) * hd] = a @ vh
        report(f"attention_f32/h{H}/kv{KV}/d{hd}/T{T}", out, ref, 2e-6)
        # attention_prefill_f32: the same semantics, tiled (grid ceil(T/16) * heads)
        out2 = torch.full((T, H * hd), float("nan"), device=DEV)
        launch("attention_prefill_f32", cdiv(T, ATTP_ROWS) * H, ptr(out2), ptr(qkv), ptr(kc), ptr(vc), ptr(qs), ptr(qp), ptr(tb),
               u32(max_blocks), u32(bs), u32(T), u32(H), u32(KV), u32(hd), u32(stride), f32(scale))
        sync()
        report(f"attention_prefill_f32/h{H}/kv{KV}/d{hd}/T{T}", out2, ref, 2e-6)
    # silu_mul, add, copy_rows
    rows, inter = 3, 1537
    gu = torch.randn(rows, 2 * inter, device=DEV) * 4
    out = torch.empty(rows, inter, device=DEV)
    launch("silu_mul_f32", cdiv(rows * inter, 256), ptr(out), ptr(gu), u32(rows), u32(inter))
    sync()
    gd = gu.double()
    report("silu_mul_f32", out, torch.nn.functional.silu(gd[:, :inter]) * gd[:, inter:], 1e-6)
    y = torch.randn(10001, device=DEV)
    x = torch.randn(10001, device=DEV)
    ref = y.double() + x.double()
    launch("add_f32", cdiv(10001, 256), ptr(y), ptr(x), u32(10001))
    sync()
    report("add_f32", y, ref, 1e-7)
    src = torch.randn(7, 577, device=DEV)
    idx = torch.tensor([6, 0, 6, 3], device=DEV, dtype=torch.int32)
    dst = torch.empty(4, 577, device=DEV)
    launch("copy_rows_f32", 4, ptr(dst), ptr(src), ptr(idx), u32(4), u32(577))
    sync()
    report("copy_rows_f32", dst, src[idx.long()].double(), 0.0)


def copy_bw():
    n = 1 << 28  # 1 GiB of f32
    a = torch.empty(n, device=DEV)
    b = torch.empty(n, device=DEV)
    us = graph_us(lambda: b.copy_(a), reps=10)
    return 2 * a.numel() * 4 / us / 1e6  # TB/s, read + write


# (case, out, in): decode projections, q|k|v and gate|up fused as the backend does.
CASES = [
    ("smollm2-135m/qkv", 960, 576), ("smollm2-135m/o", 576, 576), ("smollm2-135m/gate_up", 3072, 576),
    ("smollm2-135m/down", 576, 1536), ("smollm2-135m/lm_head", 49152, 576),
    ("llama3-8b/qkv", 6144, 4096), ("llama3-8b/o", 4096, 4096), ("llama3-8b/gate_up", 28672, 4096),
    ("llama3-8b/up", 14336, 4096), ("llama3-8b/down", 4096, 14336), ("llama3-8b/lm_head", 128256, 4096),
]


# (in, out) of Llama-3.2-1B's matmuls per layer (q|k|v, o, gate|up, down).
TC_SHAPES = [(2048, 3072), (2048, 2048), (2048, 16384), (8192, 2048)]
TC_NAMES = ["qkv", "o", "gate_up", "down"]


def tc_timings(bw):
    """matmul_tc_bf16 against torch.matmul in bf16 and the SIMT matmul_bf16
    at the Llama-3.2-1B shapes, rows 16/32/64 (batched decode) and 512/513
    (prefill), one JSON line per case; below 512 rows also the backend's
    pair, tc_split_x_bf16 + matmul_tcx_bf16 ("tcx_us": both launches;
    "tcx_matmul_us": the product alone; "matmul_tc_us": matmul_tc_bf16). Each graph replay cycles through
    copies of the weights that together exceed the L2 (as in a decode step,
    where every product's weights come from DRAM). Then per row count the
    16 layers' matmul time and the tokens/s it alone would allow (prefill:
    rows tokens per pass; decode: rows sequences per step, plus the tied LM
    head, 128256 x 2048, at that row count; "tc" is what the backend runs:
    the pair below 512 rows, matmul_tc_bf16 from 512)."""
    tc, simt = mod.get_function("matmul_tc_bf16"), mod.get_function("matmul_bf16")
    split, tcx = mod.get_function("tc_split_x_bf16"), mod.get_function("matmul_tcx_bf16")
    shapes = list(zip(TC_NAMES, TC_SHAPES)) + [("lm_head", (2048, 128256))]
    for rows in [int(r) for r in os.environ.get("FK_TC_ROWS", "16,32,64,512,513").split(",")]:
        layer_us = {"tc": 0.0, "simt": 0.0, "torch": 0.0}
        lm = {}
        for name, (k, n) in shapes:
            copies = max(2, math.ceil(160e6 / (n * k * 2)))  # > the H200's 50 MB L2
            ws = [(torch.randn(n, k, device=DEV) / math.sqrt(k)).bfloat16() for _ in range(copies)]
            w = ws[0]
            x = torch.randn(rows, k, device=DEV)
            y = torch.empty(rows, n, device=DEV)
            xs = torch.empty(cdiv(rows, 16) * cdiv(k, 32) * 512, device=DEV)
            turn = [0]

            def run(fn, grid, xarg=None, pre=None):
                def go():
                    i = turn[0] % copies
                    turn[0] += 1
                    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                        if pre:
                            pre()
                        fn((grid,), (256,), (ptr(y), ptr(x if xarg is None else xarg), ptr(ws[i]), ptr(None),
                                             u32(rows), u32(k), u32(n), u32(0)))
                return go

            def do_split():
                split((cdiv(cdiv(rows, 16) * cdiv(k, 32) * 64, 256),), (256,), (ptr(xs), ptr(x), u32(rows), u32(k)))

            reps = copies * (1 if rows >= 512 or n > 100000 else max(1, 50 // copies))
            us_simt = graph_us(run(simt, mm_grid(rows, n)), reps)
            us = graph_us(run(tc, tc_grid(rows, n)), reps)
            extra = {}
            if rows < 512:
                extra["tcx_us"] = round(graph_us(run(tcx, tcx_grid(rows, n), xs, do_split), reps), 2)
                extra["tcx_matmul_us"] = round(graph_us(run(tcx, tcx_grid(rows, n), xs), reps), 2)
                extra["matmul_tc_us"] = round(us, 2)
                us = extra["tcx_us"]
            xb = x.bfloat16()

            def torch_mm():
                i = turn[0] % copies
                turn[0] += 1
                torch.matmul(xb, ws[i].T)

            tus = graph_us(torch_mm, reps)
            turn[0] = 0  # the next call reads ws[0]: the error below is the backend's kernels' on it
            if rows < 512:
                run(tcx, tcx_grid(rows, n), xs, do_split)()
            else:
                run(tc, tc_grid(rows, n))()
            torch.cuda.synchronize()
            ref = x.double() @ w.double().T
            err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
            bytes_ = n * k * 2 + rows * k * 4 + rows * n * 4
            floor = bytes_ / (bw * 1e6)
            print(json.dumps({"case": f"tc/llama3.2-1b/{name}", "rows": rows, "out": n, "in": k, "dtype": "bf16",
                              "tc_us": round(us, 2), "simt_us": round(us_simt, 2), "torch_bf16_us": round(tus, 2),
                              "floor_us": round(floor, 2), "pct_floor": round(100 * floor / us, 1),
                              "TFLOPs": round(2 * rows * n * k / us / 1e6, 2),
                              "torch_TFLOPs": round(2 * rows * n * k / tus / 1e6, 2),
                              "max_rel_err": float(f"{err:.2g}"), **extra}), flush=True)
            if name == "lm_head":
                lm = {"tc": us, "simt": us_simt, "torch": tus}
            else:
                layer_us["tc"] += us
                layer_us["simt"] += us_simt
                layer_us["torch"] += tus
        out = {"case": "tc/llama3.2-1b/summary", "rows": rows}
        for kind in ("tc", "simt", "torch"):
            step = 16 * layer_us[kind]
            out[f"{kind}_layers_us"] = round(step, 1)
            if rows >= 512:
                out[f"{kind}_prefill_tokps"] = round(rows / step * 1e6)
            else:
                out[f"{kind}_decode_tokps"] = round(rows / (step + lm[kind]) * 1e6)
        print(json.dumps(out), flush=True)


def timings():
    bw = copy_bw()
    print(json.dumps({"copy_TBps": round(bw, 3)}), flush=True)
    if not os.environ.get("FK_SKIP_TC"):
        tc_timings(bw)
    want = os.environ.get("FK_CASES")
    fn = mod.get_function("matmul_bf16")
    for name, n, k in CASES:
        if want and name not in want.split(","):
            continue
        w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).bfloat16()
        for rows in (1, 8, 32, 512):
            x = torch.randn(rows, k, device=DEV)
            y = torch.empty(rows, n, device=DEV)
            grid = mm_grid(rows, n)
            args = (ptr(y), ptr(x), ptr(w), ptr(None), u32(rows), u32(k), u32(n), u32(0))

            def ours():
                with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                    fn((grid,), (THREADS["matmul_bf16"],), args)

            reps = 5 if rows >= 512 else 50
            us = graph_us(ours, reps)
            xb = x.bfloat16()
            tus = graph_us(lambda: torch.nn.functional.linear(xb, w), reps)
            bytes_ = n * k * 2 + rows * k * 4 + rows * n * 4
            floor = bytes_ / (bw * 1e6)
            err = ((y.double() - x.double() @ w.double().T).abs().max() / (x.double() @ w.double().T).abs().max()).item()
            print(json.dumps({"case": name, "rows": rows, "out": n, "in": k, "dtype": "bf16", "us": round(us, 2),
                              "floor_us": round(floor, 2), "pct_floor": round(100 * floor / us, 1),
                              "GBps": round(bytes_ / us / 1e3, 1), "TFLOPs": round(2 * rows * n * k / us / 1e6, 2),
                              "torch_bf16_us": round(tus, 2), "max_rel_err": float(f"{err:.2g}")}), flush=True)
    if not os.environ.get("FK_SKIP_ATTENTION"):
        attention_timings(bw)


def attention_timings(bw):
    """attention_f32 at decode (B sequences, one query each, ctx cached
    keys) and prefill (T queries of one sequence) shapes of Llama-3-8B
    (32 heads, 8 KV heads, head_dim 128) and Llama-3.2-1B (head_dim 64),
    against the K/V read floor and torch's scaled_dot_product_attention on
    contiguous f32 K/V; at prefill shapes attention_prefill_f32 too
    ("prefill_us"; the GPU backend launches it for chunks of 16 tokens or
    more); at decode shapes attention_long_f32 too ("long_us"; the backend
    launches it on CUDA for at most 128 blocks over tables of 512 keys or
    more), checked against attention_f32's output ("long_max_rel_diff"),
    and attention_gqa_f32 ("gqa_us"; one block per kv head), which must
    write attention_long_f32's bytes ("gqa_equals_long"), and
    attention_bykey_f32 ("bykey_us"; a thread per key, one block per kv
    head), attention_bykey128_f32 ("bykey128_us"; the same in blocks of
    128) and attention_warps_f32 ("warps_us"; key groups with their own
    online softmax, the same grid), each checked against attention_f32's
    output ("bykey_max_rel_diff", "bykey128_max_rel_diff",
    "warps_max_rel_diff")."""
    bs = 16
    shapes = [("llama3-8b", 32, 8, 128, 1, 1024, 1), ("llama3-8b", 32, 8, 128, 1, 4096, 1),
              ("llama3-8b", 32, 8, 128, 32, 1024, 1), ("llama3-8b", 32, 8, 128, 1, 512, 512),
              ("llama3.2-1b", 32, 8, 64, 1, 512, 512)]
    shapes += [("llama3.2-1b", 32, 8, 64, B, ctx, 1) for B in (1, 4, 8, 32) for ctx in (16, 80, 144, 256, 512, 1024, 4096)]
    for model, H, KV, hd, B, ctx, T in shapes:
        kvd = KV * hd
        max_blocks = cdiv(ctx, bs)
        slots = B * max_blocks * bs
        kc = torch.randn(slots, kvd, device=DEV)
        vc = torch.randn(slots, kvd, device=DEV)
        tables = torch.randperm(B * max_blocks, device=DEV).int().view(B, max_blocks).contiguous()
        stride = (H + 2 * KV) * hd
        if T == 1:
            qseq, qpos = list(range(B)), [ctx - 1] * B
        else:
            qseq, qpos = [0] * T, list(range(ctx - T, ctx))
        n = len(qseq)
        qkv = torch.randn(n, stride, device=DEV)
        out = torch.empty(n, H * hd, device=DEV)
        qs, qp = u32t(qseq), u32t(qpos)
        fn = mod.get_function("attention_f32")
        args = (ptr(out), ptr(qkv), ptr(kc), ptr(vc), ptr(qs), ptr(qp), ptr(tables), u32(max_blocks), u32(bs),
                u32(n), u32(H), u32(KV), u32(hd), u32(stride), f32(1 / math.sqrt(hd)))

        def ours():
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                fn((n * H,), (THREADS["attention_f32"],), args)

        us = graph_us(ours, reps=20)

        def alt(name, blocks):
            """name's output on these inputs (out filled with NaN first) and
            its microseconds per call."""
            afn = mod.get_function(name)

            def go():
                with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                    afn((blocks,), (THREADS[name],), args)

            out.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            return out.clone(), graph_us(go, reps=20)

        def rel(a, b):
            return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()

        extra = {}
        if T > 1:
            _, pus = alt("attention_prefill_f32", cdiv(n, ATTP_ROWS) * H)
            extra = {"prefill_us": round(pus, 2), "prefill_speedup": round(us / pus, 1)}
        else:
            ref = out.clone()
            long_out, lus = alt("attention_long_f32", n * H)
            diff = rel(long_out, ref)
            extra = {"long_us": round(lus, 2), "long_speedup": round(us / lus, 2), "long_max_rel_diff": float(f"{diff:.2g}")}
            gqa_out, gus = alt("attention_gqa_f32", n * KV)
            same = bool(torch.equal(gqa_out, long_out))
            extra.update({"gqa_us": round(gus, 2), "gqa_speedup": round(us / gus, 2), "gqa_equals_long": same})
            for key, name in (("bykey", "attention_bykey_f32"), ("bykey128", "attention_bykey128_f32"),
                              ("warps", "attention_warps_f32")):
                bykey_out, bus = alt(name, n * KV)
                bdiff = rel(bykey_out, ref)
                if not bdiff <= 1e-5:  # each is within 2e-6 of max|v| of the CPU's attention on the host
                    failed.append(f"{name}/{model}/B{B}/ctx{ctx}")
                extra.update({f"{key}_us": round(bus, 2), f"{key}_speedup": round(us / bus, 2),
                              f"{key}_max_rel_diff": float(f"{bdiff:.2g}")})
        q = qkv[:, : H * hd].view(n, H, hd)
        if T == 1:
            qt = q.view(B, H, 1, hd)
            k = torch.randn(B, KV, ctx, hd, device=DEV)
            v = torch.randn(B, KV, ctx, hd, device=DEV)
            causal = False
        else:
            qt = q.view(1, T, H, hd).transpose(1, 2).contiguous()
            k = torch.randn(1, KV, ctx, hd, device=DEV)
            v = torch.randn(1, KV, ctx, hd, device=DEV)
            causal = True
        k = k.repeat_interleave(H // KV, 1)
        v = v.repeat_interleave(H // KV, 1)
        tus = graph_us(lambda: torch.nn.functional.scaled_dot_product_attention(qt, k, v, is_causal=causal), reps=20)
        bytes_ = B * ctx * kvd * 2 * 4
        floor = bytes_ / (bw * 1e6)
        print(json.dumps({"case": f"attention/{model}/B{B}/ctx{ctx}/T{T}", "us": round(us, 2), "floor_us": round(floor, 2),
                          "pct_floor": round(100 * floor / us, 1), "torch_sdpa_f32_us": round(tus, 2), **extra}), flush=True)


if __name__ == "__main__":
    if not os.environ.get("FK_SKIP_CHECKS"):
        checks()
    timings()
    if failed:
        print(json.dumps({"failed": failed}), flush=True)
        sys.exit(1)
