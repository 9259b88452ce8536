"""matmul_wgs_bf16 (matmul_wg warp-specialized) beside matmul_wg_bf16, the
tcx pair and torch, from the shipped sm_90a PTX.

    python3 tools/gpubench/wgs_products.py [kernels/build/forward/sm_90a.ptx]

Checks first, at 1 to 64 rows, awkward shapes and splits of in, bias and
accumulate: matmul_wgs against float64 (matmul_wg's tolerance), the same
bytes of y as matmul_wg, the same bytes when run twice, and cnt back at
zero; each at ring depths 2, 4 and the most that fits (the kernel takes
its depth from the launch's dynamic shared memory). Then times the
Llama-3.2-1B products at WGS_ROWS (default 32,64) over copies of the
weights larger than the L2 (CUDA-graph replays, median of 5): matmul_wgs
at depths 4 and 8 (or the most that fits) for 1 to 8 splits of in,
matmul_wg (depth 4), matmul_tcx alone, and torch's bf16 matmul. One JSON
line per check failure and per case; exit status 1 if a check failed.
"""
import json
import math
import os
import sys

import cupy as cp
import torch

from graph_timing import graph_us
from launch_args import ColdWeights, cdiv, ptr, u32, wg_rows as R

DEV = torch.device("cuda")
PTX = sys.argv[1] if len(sys.argv) > 1 else "kernels/build/forward/sm_90a.ptx"
M = cp.RawModule(path=PTX)
MAX_SHARED = 232448
def stage_bytes(rows):
    return (128 + 2 * R(rows)) * 128


def depth_max(rows):
    return min(8, (MAX_SHARED - 1024) // stage_bytes(rows))


def ext():
    return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


limit = {}  # kernel: the dynamic shared memory its attribute allows now (only ever raised)


def mm(kernel, depth, y, xs, w, b, ws, cnt, rows, k, n, acc, ks):
    """kernel: "wg" (256 threads, ring of 4) or "wgs" (384 threads, depth)."""
    f = M.get_function(f"matmul_{kernel}_bf16")
    smem = 1024 + (4 if kernel == "wg" else depth) * stage_bytes(rows)
    if smem > limit.get(kernel, 48 * 1024):
        f.max_dynamic_shared_size_bytes = smem
        limit[kernel] = smem
    f((cdiv(n, 128) * cdiv(k, ks),), (256 if kernel == "wg" else 384,),
      (ptr(y), ptr(xs), ptr(w), ptr(b), ptr(ws), ptr(cnt), u32(rows), u32(k), u32(n), u32(acc), u32(ks)),
      shared_mem=smem)


def split(xs, x, rows, k):
    M.get_function("wg_split_x_bf16")((cdiv(cdiv(k, 64) * 8 * R(rows), 256),), (256,),
                                      (ptr(xs), ptr(x), u32(rows), u32(k)))


def image(rows, k):
    return torch.empty(cdiv(k, 64) * 64 * R(rows), device=DEV)


failed = []


def checks():
    for rows in [1, 17, 32, 48, 64]:
        for n, k in [(200, 96), (1000, 2048), (136, 8192)]:
            x = torch.randn(rows, k, device=DEV)
            w = (torch.randn(n, k, device=DEV) / math.sqrt(k)).bfloat16()
            b = torch.randn(n, device=DEV)
            xs = image(rows, k)
            with ext():
                split(xs, x, rows, k)
            ref = x.double() @ w.double().T
            for splits in sorted({1, 3, cdiv(k, 64)}):
                ks = max(64, cdiv(cdiv(k, splits), 64) * 64)
                ws = torch.full((cdiv(k, ks) * rows * n,), float("nan"), device=DEV)
                cnt = torch.zeros(cdiv(n, 128), dtype=torch.int32, device=DEV)
                y0 = torch.randn(rows, n, device=DEV)
                yw = y0.clone()
                with ext():
                    mm("wg", 4, yw, xs, w, b, ws, cnt, rows, k, n, 1, ks)
                for depth in sorted({2, 4, depth_max(rows)}):
                    y, y2 = y0.clone(), y0.clone()
                    with ext():
                        mm("wgs", depth, y, xs, w, b, ws, cnt, rows, k, n, 1, ks)
                        mm("wgs", depth, y2, xs, w, b, ws, cnt, rows, k, n, 1, ks)
                    torch.cuda.synchronize()
                    want = ref + b.double() + y0.double()
                    err = ((y.double() - want).abs().max() / want.abs().max()).item()
                    ok = (err <= 2e-5 * max(1, math.sqrt(k / 2048)) and torch.equal(y, y2) and torch.equal(y, yw)
                          and int(cnt.abs().sum()) == 0)
                    if not ok:
                        failed.append(f"wgs/{rows}x{k}x{n}/ks{ks}/depth{depth}")
                        print(json.dumps({"check": failed[-1], "max_rel_err": err, "rerun_same": torch.equal(y, y2),
                                          "wg_same": torch.equal(y, yw), "cnt": int(cnt.abs().sum())}), flush=True)
    print(json.dumps({"checks_failed": failed}), flush=True)


SHAPES = [("qkv", 3072, 2048), ("o", 2048, 2048), ("gate_up", 16384, 2048), ("down", 2048, 8192),
          ("lm_head", 128256, 2048)]


def timings():
    for rows in [int(r) for r in os.environ.get("WGS_ROWS", "32,64").split(",")]:
        for name, n, k in SHAPES:
            cold = ColdWeights(n, k, DEV)
            x = torch.randn(rows, k, device=DEV)
            y = torch.empty(rows, n, device=DEV)
            xs = image(rows, k)
            xt = torch.empty(cdiv(rows, 16) * cdiv(k, 32) * 512, device=DEV)
            with ext():
                split(xs, x, rows, k)
                M.get_function("tc_split_x_bf16")((cdiv(cdiv(rows, 16) * cdiv(k, 32) * 64, 256),), (256,),
                                                  (ptr(xt), ptr(x), u32(rows), u32(k)))
            part = torch.empty(16 * rows * n, device=DEV)
            cnt = torch.zeros(4096, dtype=torch.int32, device=DEV)
            nxt, reps = cold.next, cold.reps
            line = {"case": f"llama3.2-1b/{name}", "rows": rows, "out": n, "in": k}
            xb = x.bfloat16()
            line["torch_us"] = round(graph_us(lambda: torch.matmul(xb, nxt().T), reps), 2)

            def run_tcx():
                g = cdiv(n, 8 if n <= 2048 else 16 if n < 16384 else 64) * cdiv(rows, 32)
                with ext():
                    M.get_function("matmul_tcx_bf16")((g,), (256,), (ptr(y), ptr(xt), ptr(nxt()), ptr(None),
                                                                     u32(rows), u32(k), u32(n), u32(0)))

            line["tcx_alone_us"] = round(graph_us(run_tcx, reps), 2)
            for kernel, depth in (("wg", 4), ("wgs", 4), ("wgs", depth_max(rows))):
                for splits in (1, 2, 4, 8):
                    ks = max(64, cdiv(cdiv(k, splits), 64) * 64)
                    if cdiv(k, ks) != splits or (n > 100000 and splits > 1):
                        continue

                    def run():
                        with ext():
                            mm(kernel, depth, y, xs, nxt(), None, part, cnt, rows, k, n, 0, ks)

                    line[f"{kernel}{depth}_S{splits}_us"] = round(graph_us(run, reps), 2)
            print(json.dumps(line), flush=True)
            del cold


if __name__ == "__main__":
    print(json.dumps({"device": torch.cuda.get_device_name(), "ptx": PTX}), flush=True)
    checks()
    timings()
    sys.exit(1 if failed else 0)
