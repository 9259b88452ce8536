"""matmul_wg_bf16 (sm_90a warpgroup MMA) beside matmul_tcx_bf16 and torch.

    python3 tools/gpubench/wg_products.py wg=kernels/build/forward/sm_90a.ptx:4

An argument is NAME=PTX:STAGES, a build of kernels/src/forward.cu for
sm_90a and its FW_WG_STAGES (4 as landed; other builds, made with -D
overrides of a local copy, compare variants); the first also supplies
tc_split_x/matmul_tcx. Checks every build against a float64 reference
(awkward shapes, bias and accumulate, splits of in, both 16-bit types; each
split run twice for its bytes, and cnt back at zero), then times the
Llama-3.2-1B products at batched-decode rows (WG_ROWS, default 32,16,64)
over copies of the weights larger than the L2 (CUDA-graph replays, median
of 5): the pair wg_split_x + matmul_wg for 1 to 16 splits of in, the pair
tc_split_x + matmul_tcx, and torch's bf16 matmul; WG_DETAIL=1 adds each
kernel alone. One JSON line per check and per case, a table last (the
step's products: 16 layers and the LM head, each at its best split).
"""
import json
import math
import os
import sys

import cupy as cp
import torch

from graph_timing import graph_us
from launch_args import cdiv, ptr, u32, wg_rows

DEV = torch.device("cuda")
def _variant(arg):
    """NAME=PATH:STAGES (forward.cu's FW_WG_STAGES of that build)."""
    name, rest = arg.split("=", 1)
    path, stages = rest.rsplit(":", 1)
    return name, Variant(cp.RawModule(path=path), int(stages))


class Variant:
    def __init__(self, mod, stages):
        self.mod, self.stages = mod, stages
        self.ready = set()

    def get_function(self, name):
        return self.mod.get_function(name)

    def smem(self, rows):
        return 1024 + self.stages * (128 + 2 * wg_rows(rows)) * 128


VARIANTS = [_variant(a) for a in sys.argv[1:]]
BASE = VARIANTS[0][1]
failed = []


def wg_image(rows, k):
    """An f32 tensor large enough for wg_split_x's image (64-wide stages of
    128 N bytes, N = 2R)."""
    return torch.empty(cdiv(k, 64) * 64 * wg_rows(rows), device=DEV)


def wg_split(mod, xs, x, rows, k, s):
    n = cdiv(k, 64) * 8 * wg_rows(rows)
    mod.get_function("wg_split_x_" + s)((cdiv(n, 256),), (256,), (ptr(xs), ptr(x), u32(rows), u32(k)))


def wg_ks(k, splits):
    return max(64, cdiv(cdiv(k, splits), 64) * 64)


def wg_mm(mod, y, xs, w, b, ws, cnt, rows, k, n, acc, ks, s):
    grid = cdiv(n, 128) * cdiv(k, ks)
    f = mod.get_function("matmul_wg_" + s)
    smem = mod.smem(rows)
    if (s, smem) not in mod.ready:
        f.max_dynamic_shared_size_bytes = smem
        mod.ready.add((s, smem))
    f((grid,), (256,), (ptr(y), ptr(xs), ptr(w), ptr(b), ptr(ws), ptr(cnt), u32(rows), u32(k), u32(n), u32(acc),
                        u32(ks)), shared_mem=smem)


def tcx(y, x, w, rows, k, n, xs):
    BASE.get_function("tc_split_x_bf16")((cdiv(cdiv(rows, 16) * cdiv(k, 32) * 64, 256),), (256,),
                                         (ptr(xs), ptr(x), u32(rows), u32(k)))
    grid = cdiv(n, 8 if n <= 2048 else 16 if n < 16384 else 64) * cdiv(rows, 32)
    BASE.get_function("matmul_tcx_bf16")((grid,), (256,), (ptr(y), ptr(xs), ptr(w), ptr(None), u32(rows), u32(k),
                                                           u32(n), u32(0)))


def report(name, got, ref, tol):
    got, ref = got.double(), ref.double()
    err = ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    ok = bool(err <= tol) and not math.isnan(err)
    if not ok:
        failed.append(name)
    print(json.dumps({"check": name, "max_rel_err": float(f"{err:.3g}"), "tol": tol, "ok": ok}), flush=True)
    return ok


def checks(vname, mod, full):
    WT = {"bf16": torch.bfloat16, "f16": torch.float16}
    rows_list = [1, 5, 16, 17, 32, 33, 48, 64] if full else [32, 17]
    shapes = [(200, 96), (384, 512), (1000, 2048), (136, 8192)] if full else [(384, 512), (1000, 2048)]
    for s in (["bf16", "f16"] if full else ["bf16"]):
        for rows in [r for r in rows_list if mod.smem(r) <= 232448]:
            for n, k in shapes:
                x = torch.randn(rows, k, device=DEV)
                w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).to(WT[s])
                b = torch.randn(n, device=DEV)
                ref = x.double() @ w.double().T
                xs = wg_image(rows, k)
                wg_split(mod, xs, x, rows, k, s)
                for splits in sorted({1, 3, cdiv(k, 64)}):
                    ks = wg_ks(k, splits)
                    S = cdiv(k, ks)
                    ws = torch.full((S * rows * n,), float("nan"), device=DEV)
                    cnt = torch.zeros(cdiv(n, 128), dtype=torch.int32, device=DEV)
                    y0 = torch.randn(rows, n, device=DEV)
                    y = y0.clone()
                    wg_mm(mod, y, xs, w, b, ws, cnt, rows, k, n, 1, ks, s)
                    y2 = y0.clone()
                    wg_mm(mod, y2, xs, w, b, ws, cnt, rows, k, n, 1, ks, s)
                    torch.cuda.synchronize()
                    tol = 2e-5 * max(1.0, math.sqrt(k / 2048))
                    name = f"{vname}/matmul_wg_{s}/{rows}x{k}x{n}/S{S}"
                    report(name + "/bias+acc", y, ref + b.double() + y0.double(), tol)
                    if not torch.equal(y, y2) or int(cnt.abs().sum()) != 0:
                        failed.append(name + "/rerun")
                        print(json.dumps({"check": name + "/rerun", "ok": False, "same": torch.equal(y, y2),
                                          "cnt": int(cnt.abs().sum())}), flush=True)
                    yn = torch.full((rows, n), float("nan"), device=DEV)
                    wg_mm(mod, yn, xs, w, None, ws, cnt, rows, k, n, 0, ks, s)
                    torch.cuda.synchronize()
                    report(name, yn, ref, tol)


def copy_bw():
    n = 1 << 28
    a, b = torch.empty(n, device=DEV), torch.empty(n, device=DEV)
    return 2 * n * 4 / graph_us(lambda: b.copy_(a), reps=10) / 1e6


SHAPES = [("qkv", 3072, 2048), ("o", 2048, 2048), ("gate_up", 16384, 2048), ("down", 2048, 8192),
          ("lm_head", 128256, 2048)]


def timings(bw):
    table = []
    for rows in [int(r) for r in os.environ.get("WG_ROWS", "32,16,64").split(",")]:
        tot = {}
        for name, n, k in SHAPES:
            copies = max(2, math.ceil(160e6 / (n * k * 2)))
            ws_ = [(torch.randn(n, k, device=DEV) / math.sqrt(k)).bfloat16() for _ in range(copies)]
            x = torch.randn(rows, k, device=DEV)
            y = torch.empty(rows, n, device=DEV)
            xs_t = torch.empty(cdiv(rows, 16) * cdiv(k, 32) * 512, device=DEV)
            xs_w = wg_image(rows, k)
            part = torch.empty(16 * rows * n, device=DEV)
            cnt = torch.zeros(cdiv(n, 128), dtype=torch.int32, device=DEV)
            turn = [0]
            reps = copies * (1 if n > 100000 else max(1, 50 // copies))

            def nxt():
                i = turn[0] % copies
                turn[0] += 1
                return ws_[i]

            def ext():
                return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

            def run_tcx():
                with ext():
                    tcx(y, x, nxt(), rows, k, n, xs_t)

            line = {"case": f"llama3.2-1b/{name}", "rows": rows, "out": n, "in": k}
            line["tcx_us"] = round(graph_us(run_tcx, reps), 2)
            xb = x.bfloat16()
            line["torch_us"] = round(graph_us(lambda: torch.matmul(xb, nxt().T), reps), 2)
            line["floor_us"] = round(n * k * 2 / (bw * 1e6), 2)
            ref = x.double() @ ws_[0].double().T
            if os.environ.get("WG_DETAIL") == "1":
                with ext():
                    tcx(y, x, ws_[0], rows, k, n, xs_t)

                def run_tcx_alone():
                    i = turn[0] % copies
                    turn[0] += 1
                    grid = cdiv(n, 8 if n <= 2048 else 16 if n < 16384 else 64) * cdiv(rows, 32)
                    with ext():
                        BASE.get_function("matmul_tcx_bf16")((grid,), (256,), (ptr(y), ptr(xs_t), ptr(ws_[i]), ptr(None),
                                                                               u32(rows), u32(k), u32(n), u32(0)))

                line["tcx_alone_us"] = round(graph_us(run_tcx_alone, reps), 2)
                for vname, mod in VARIANTS:
                    if mod.smem(rows) > 232448:
                        continue
                    with ext():
                        wg_split(mod, xs_w, x, rows, k, "bf16")
                    for splits in (1, 2, 4, 8):
                        ks = wg_ks(k, splits)
                        if cdiv(k, ks) != splits:
                            continue

                        def run_alone():
                            with ext():
                                wg_mm(mod, y, xs_w, nxt(), None, part, cnt, rows, k, n, 0, ks, "bf16")

                        line[f"{vname}_alone_S{splits}_us"] = round(graph_us(run_alone, reps), 2)
                    # the ring's carveout preferred by both kernels (no
                    # reconfiguration between them)
                    try:
                        for fn in ("wg_split_x_bf16", "matmul_wg_bf16"):
                            mod.get_function(fn).preferred_shared_memory_carveout = 100
                        best = min((k2 for k2 in line if k2.startswith(vname + "_alone_S")), key=lambda k2: line[k2])
                        ks = wg_ks(k, int(best.split("_S")[1].split("_")[0]))

                        def run_co():
                            with ext():
                                wg_split(mod, xs_w, x, rows, k, "bf16")
                                wg_mm(mod, y, xs_w, nxt(), None, part, cnt, rows, k, n, 0, ks, "bf16")

                        line[f"{vname}_pair_carveout_us"] = round(graph_us(run_co, reps), 2)
                        for fn in ("wg_split_x_bf16", "matmul_wg_bf16"):
                            mod.get_function(fn).preferred_shared_memory_carveout = -1
                    except Exception as e:
                        line[f"{vname}_carveout_error"] = repr(e)
            for vname, mod in VARIANTS:
                if mod.smem(rows) > 232448:
                    continue
                best = None
                for splits in (1, 2, 4, 8, 16):
                    ks = wg_ks(k, splits)
                    if cdiv(k, ks) != splits:
                        continue

                    def run_wg():
                        with ext():
                            wg_split(mod, xs_w, x, rows, k, "bf16")
                            wg_mm(mod, y, xs_w, nxt(), None, part, cnt, rows, k, n, 0, ks, "bf16")

                    us = graph_us(run_wg, reps)
                    line[f"{vname}_S{splits}_us"] = round(us, 2)
                    if best is None or us < best[0]:
                        best = (us, splits)
                turn[0] = 0
                with ext():
                    wg_split(mod, xs_w, x, rows, k, "bf16")
                    wg_mm(mod, y, xs_w, nxt(), None, part, cnt, rows, k, n, 0, wg_ks(k, best[1]), "bf16")
                torch.cuda.synchronize()
                line[f"{vname}_err"] = float(f"{((y.double() - ref).abs().max() / ref.abs().max()).item():.2g}")
                line[f"{vname}_best"] = [round(best[0], 2), best[1]]
                tot[vname] = tot.get(vname, 0) + best[0] * (1 if name == "lm_head" else 16)
            tot["tcx"] = tot.get("tcx", 0) + line["tcx_us"] * (1 if name == "lm_head" else 16)
            tot["torch"] = tot.get("torch", 0) + line["torch_us"] * (1 if name == "lm_head" else 16)
            tot["floor"] = tot.get("floor", 0) + line["floor_us"] * (1 if name == "lm_head" else 16)
            print(json.dumps(line), flush=True)
            del ws_
        print(json.dumps({"case": "llama3.2-1b/step_products", "rows": rows, **{k_: round(v, 1) for k_, v in tot.items()}}),
              flush=True)
        table.append((rows, tot))
    print("rows | " + " | ".join(f"{k_} us" for k_ in table[0][1]))
    for rows, tot in table:
        print(f"{rows} | " + " | ".join(f"{v:.0f}" for v in tot.values()))


if __name__ == "__main__":
    print(json.dumps({"device": torch.cuda.get_device_name(), "variants": [v for v, _ in VARIANTS]}), flush=True)
    for i, (vname, mod) in enumerate(VARIANTS):
        try:
            checks(vname, mod, full=(i == 0 or os.environ.get("WG_FULL") == "1"))
        except Exception as e:  # a variant that fails to load or faults: say so, go on
            failed.append(vname)
            print(json.dumps({"check": vname, "error": repr(e)}), flush=True)
            if "illegal" in repr(e).lower():
                break
    bad = {f.split("/")[0] for f in failed}
    VARIANTS[:] = [(v, m) for v, m in VARIANTS if v not in bad]
    if VARIANTS:
        bw = copy_bw()
        print(json.dumps({"copy_TBps": round(bw, 3)}), flush=True)
        timings(bw)
    print(json.dumps({"failed": failed}), flush=True)
    sys.exit(1 if failed else 0)
