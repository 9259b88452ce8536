"""Time PTX builds of the rejection kernel against each other on one GPU.

    python3 tools/gpubench/rejection_variants.py B V T,K,P,MINP A.ptx [B.ptx ...]

For one shape and one parameter row (temperature, top-k, top-p, min-p, the
kernel's params layout), each build's rejection_f32 is launched 20 times
back to back between CUDA events over two rotating N(0, 5^2) inputs, twice
per build in alternation; the block size is the kernel's .maxntid. Every
build's tokens for the same key are compared with the first build's
("mismatch_FILE": rows that differ; builds with another thread count reduce
in another order, so their draws may differ). Prints the registers and local
memory each build took, then one JSON line with the times in microseconds
and the mean rounds per row.
"""
import json
import sys

import cupy as cp
import numpy as np


def block_threads(path):
    text = open(path).read()
    i = text.find(".entry rejection_f32(")
    j = text.find(".maxntid", i)
    return int(text[j + len(".maxntid"):].split(",")[0])


def main():
    B, V = int(sys.argv[1]), int(sys.argv[2])
    params_row = [float(v) for v in sys.argv[3].split(",")]
    paths = sys.argv[4:]
    rng = cp.random.default_rng(1)
    xs = [rng.standard_normal(B * V, dtype=cp.float32) * 5 for _ in range(2)]
    params = cp.asarray(np.tile(np.array(params_row, np.float32), B))
    tokens, ok, rounds = (cp.empty(B, dtype=cp.uint32) for _ in range(3))
    u32 = np.uint32
    kernels = [cp.RawModule(path=p).get_function("rejection_f32") for p in paths]
    threads = [block_threads(p) for p in paths]
    for p, k, nt in zip(paths, kernels, threads):
        print(json.dumps({"file": p.rsplit("/", 1)[-1], "threads": nt, "regs": k.num_regs, "local_bytes": k.local_size_bytes}))
    ref = None
    row = {"B": B, "V": V, "params": params_row}
    for rep in range(2):
        for p, k, nt in zip(paths, kernels, threads):
            def launch(i, k=k, nt=nt):
                k((B,), (nt,), (xs[i % 2], u32(B), u32(V), u32(V), params, u32(i), u32(7), u32(32), tokens, ok, rounds))
            launch(5)
            cp.cuda.Device().synchronize()
            got = tokens.get()
            if ref is None:
                ref = got
            elif not np.array_equal(ref, got):
                row["mismatch_" + p.rsplit("/", 1)[-1]] = int((ref != got).sum())
            for i in range(3):
                launch(i)
            cp.cuda.Device().synchronize()
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for i in range(20):
                launch(i)
            b.record()
            b.synchronize()
            row[p.rsplit("/", 1)[-1] + ("" if rep == 0 else "#2")] = round(cp.cuda.get_elapsed_time(a, b) * 1000 / 20, 1)
    row["mean_rounds"] = float(rounds.get().mean())
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
