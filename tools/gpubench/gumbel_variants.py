"""Time PTX builds of the Gumbel-max kernels against each other on one GPU.

    python3 tools/gpubench/gumbel_variants.py BASE.ptx [VARIANT.ptx ...]

Each PTX file holds gumbel_max_f32 (one launch: the row's last block
merges), or gumbel_max_partial_f32 and gumbel_max_merge (the two-launch
design before it), or all three; the block size comes from the kernel's
.maxntid. For every shape, every file and every split rule in
POLICIES, the launches are captured R times in a CUDA graph and the graph is
replayed between CUDA events (median of 5 replays), so Python's launch cost
is not measured. Modes: gumbel (partial + merge), partial (alone), greedy
(inv_temp = 0: the same loads and reductions without Philox or logs), fused
and fused_greedy (the one launch). Every variant's tokens are checked
against the first file's for the same key (a different token is printed as
an error: a variant may change speed, not the draw, except at near-ties of
the NVPTX hardware log), and the arrival counters must end at 0. Prints one
JSON line per timing and the copy bandwidth measured in the same run.

GV_SHAPES=BxV,..., GV_POLICIES=name,... and GV_MODES=mode,... narrow a run.
"""
import json
import os
import sys

import cupy as cp
import numpy as np

SHAPES = [(1, 32000), (8, 128256), (64, 262144), (256, 128256), (512, 32000), (512, 262144)]
THREADS = 256
CUS = 132


def splits_for(B, V, blocks_per_cu, min_groups):
    groups = (V + 3) // 4
    by_v = (groups + min_groups - 1) // min_groups
    if blocks_per_cu < 0:  # whole waves: at most -blocks_per_cu blocks per CU in all
        return max(1, min(by_v, (-blocks_per_cu * CUS) // B, 1024))
    by_b = (blocks_per_cu * CUS + B - 1) // B
    return max(1, min(by_v, by_b, 1024))


# (name, blocks per CU in 256-thread units (negative: at most that many, in
# whole waves), minimum groups per block in 256-thread units). "hipgo" is
# sampling.GumbelSplits for the shipped 512-thread kernel; "cur" was the rule
# of the two-launch kernel before it.
POLICIES = [("hipgo", -4, 512), ("cur", 8, 512), ("b16", 16, 512), ("b20", 20, 512), ("b32", 32, 512), ("b48", 48, 256), ("w4", -4, 512), ("w5", -5, 512), ("w6", -6, 512), ("w8", -8, 512), ("w10", -10, 512), ("w12", -12, 512), ("w15", -15, 512)]
# GV_SHAPES="512x262144,1x32000" and GV_POLICIES="cur,b32" narrow a run (e.g. under ncu).
if os.environ.get("GV_SHAPES"):
    SHAPES = [tuple(int(n) for n in s.split("x")) for s in os.environ["GV_SHAPES"].split(",")]
if os.environ.get("GV_POLICIES"):
    POLICIES = [p for p in POLICIES if p[0] in os.environ["GV_POLICIES"].split(",")]


def block_threads(path):
    """The Gumbel kernel's block size in a PTX file: its .maxntid (the
    kernel's launch bound, which is also the block size it reduces over)."""
    text = open(path).read()
    for name in ("gumbel_max_f32", "gumbel_max_partial_f32"):
        i = text.find(".entry " + name + "(")
        if i >= 0:
            j = text.find(".maxntid", i)
            return int(text[j + len(".maxntid"):].split(",")[0])
    raise SystemExit(f"{path}: no Gumbel kernel")


def timed(fn, reps):
    """Median over 5 replays of a CUDA graph holding reps calls of fn, in
    microseconds per call: the GPU's time, without Python's launch cost."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        fn(0)
        stream.synchronize()
        stream.begin_capture()
        for i in range(reps):
            fn(i)
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(5):
        start.record(stream)
        graph.launch(stream)
        stop.record(stream)
        stop.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, stop) * 1000 / reps)
    out.sort()
    return out[2]


def main():
    paths = sys.argv[1:]
    mods = [cp.RawModule(path=p) for p in paths]
    kern = []
    for m in mods:
        def fn(name, m=m):
            try:
                return m.get_function(name)
            except Exception:  # not in this build
                return None
        # A build has the one-launch gumbel_max_f32 (last block merges), the
        # older gumbel_max_partial_f32 + gumbel_max_merge pair, or both.
        kern.append((fn("gumbel_max_partial_f32"), fn("gumbel_max_merge"), fn("gumbel_max_f32")))
    maxn = max(b * v for b, v in SHAPES)
    rng = cp.random.default_rng(1)
    inputs = [(rng.standard_normal(maxn, dtype=cp.float32) * 5) for _ in range(2)]
    big = cp.empty(1 << 28, dtype=cp.float32)
    dst = cp.empty_like(big)
    dst[:] = big
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(10):
        dst[:] = big
    stop.record()
    stop.synchronize()
    copy_us = cp.cuda.get_elapsed_time(start, stop) * 100  # per copy: ms * 1000 / 10
    copy_bw = 2 * big.nbytes / copy_us / 1e6  # TB/s, read + write
    print(json.dumps({"copy_TBps": round(copy_bw, 3)}), flush=True)
    part_v = cp.empty(512 * 1024, dtype=cp.float32)
    part_i = cp.empty(512 * 1024, dtype=cp.uint32)
    tokens = cp.empty(512, dtype=cp.uint32)
    status = cp.empty(512, dtype=cp.uint32)
    arrivals = cp.zeros(512, dtype=cp.uint32)
    u32, f32 = np.uint32, np.float32
    for B, V in SHAPES:
        floor_us = 4 * B * V / (copy_bw * 1e6)
        reps = 200 if B * V < (1 << 24) else 50
        for pname, bpc, mg in POLICIES:
            ref = None
            for path, (part, merge, fused) in zip(paths, kern):
                # Split counts scale with the build's block size, so a CU
                # holds the same threads under every policy.
                threads = block_threads(path)
                S = splits_for(B, V, bpc * THREADS // threads, mg * threads // THREADS)
                modes = [(1.0, "gumbel"), (0.0, "greedy"), (1.0, "partial")] if part is not None else []
                if fused is not None:
                    modes += [(1.0, "fused"), (0.0, "fused_greedy")]
                if os.environ.get("GV_MODES"):  # e.g. GV_MODES=gumbel,fused
                    modes = [m for m in modes if m[1] in os.environ["GV_MODES"].split(",")]
                for inv_temp, mode in modes:
                    def launch(i=0, part=part, merge=merge, fused=fused, inv_temp=inv_temp, mode=mode):
                        x = inputs[i % 2]
                        if mode.startswith("fused"):
                            fused((B * S,), (threads,), (x, u32(B), u32(V), u32(V), f32(inv_temp), u32(i), u32(7), u32(S), part_v, part_i, arrivals, tokens, status))
                            return
                        part((B * S,), (threads,), (x, u32(B), u32(V), u32(V), f32(inv_temp), u32(i), u32(7), u32(S), part_v, part_i))
                        if mode != "partial":  # partial: the first launch alone, to see the merge's share
                            merge((B,), (256,), (part_v, part_i, u32(B), u32(V), u32(S), tokens, status))
                    tokens.fill(0xFFFFFFFF)
                    launch(3)
                    cp.cuda.Device().synchronize()
                    got = tokens[:B].get()
                    if mode in ("gumbel", "fused"):
                        if ref is None:
                            ref = got
                        elif not np.array_equal(ref, got):
                            print(json.dumps({"error": "tokens differ from base", "file": path, "mode": mode, "B": B, "V": V, "splits": S, "rows": int((ref != got).sum())}), flush=True)
                    us = timed(launch, reps)
                    print(json.dumps({"file": path.rsplit("/", 1)[-1], "mode": mode, "B": B, "V": V, "policy": pname, "splits": S,
                                      "us": round(us, 2), "pct_copy_bw": round(100 * floor_us / us, 1)}), flush=True)
    # Every fused launch must leave its arrival counters at 0 for the next.
    print(json.dumps({"arrivals_left_nonzero": int((arrivals != 0).sum())}), flush=True)


if __name__ == "__main__":
    main()
