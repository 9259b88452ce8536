"""Stream-launched Gumbel kernels, plain against early start, in one run.

    python3 tools/gpubench/early_start.py [PTX ...]   (default: the shipped sm_90 PTX)

runtime.LaunchConfig.EarlyStart launches a kernel with programmatic stream
serialization (cuLaunchKernelEx, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_-
SERIALIZATION): the next Gumbel launch is scheduled while the one ahead is
still running, and its kernel waits (griddepcontrol.wait) before touching
memory. This harness calls the driver through ctypes, as hipgo does through
purego, for every PTX file given:

1. dependency check: a plain CuPy kernel overwrites the logits, an early
   Gumbel launch follows, and its tokens must be those of the new logits
   (a plain launch of the same kernel on the same logits is the reference);
2. timing: K back-to-back launches between CUDA events, median of 5 blocks,
   plain and early alternated twice per shape; "%BW" is bytes read over the
   copy bandwidth measured in the same run.

A PTX without griddepcontrol.wait must not be launched early (its timing
would be right and its reads racy); the dependency check is there to catch
that. Prints one JSON line per result.
"""
import ctypes
import json
import sys

import cupy as cp

cu = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        raise SystemExit(f"{what}: CUresult {r}")


class Attr(ctypes.Structure):  # CUlaunchAttribute
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("gx", ctypes.c_uint32), ("gy", ctypes.c_uint32), ("gz", ctypes.c_uint32),
                ("bx", ctypes.c_uint32), ("by", ctypes.c_uint32), ("bz", ctypes.c_uint32),
                ("shmem", ctypes.c_uint32), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("nattrs", ctypes.c_uint32)]


assert ctypes.sizeof(Attr) == 72 and ctypes.sizeof(Config) == 56
PROGRAMMATIC_STREAM_SERIALIZATION = 6
THREADS = 512  # sampling.GumbelThreads
SHAPES = [(1, 32000), (8, 262144), (64, 262144), (256, 128256), (512, 32000), (512, 151936), (512, 262144)]


def load(path):
    data = open(path, "rb").read() + b"\0"
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data)), "cuModuleLoadData " + path)
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gumbel_max_f32"), "cuModuleGetFunction")
    return fn


def main():
    paths = sys.argv[1:] or ["kernels/build/sampling/sm_90.ptx"]
    cp.cuda.Device(0).use()
    cp.zeros(1)  # the primary context, current for ctypes' calls
    cus = cp.cuda.Device(0).attributes["MultiProcessorCount"]

    def splits(B, V):  # sampling.GumbelSplits
        return max(1, min(((V + 3) // 4 + 1023) // 1024, (2 * cus) // B, 1024))

    stream = cp.cuda.Stream(non_blocking=True)
    maxn = max(b * v for b, v in SHAPES)
    rng = cp.random.default_rng(1)
    inputs = [rng.standard_normal(maxn, dtype=cp.float32) * 5 for _ in range(2)]
    logits = cp.empty(maxn, dtype=cp.float32)
    part_v, part_i = cp.empty(512 * 1024, dtype=cp.float32), cp.empty(512 * 1024, dtype=cp.uint32)
    tokens, status = cp.empty(512, dtype=cp.uint32), cp.empty(512, dtype=cp.uint32)
    arrivals = cp.zeros(512, dtype=cp.uint32)

    def launcher(fn, early, x, B, V, key0):
        S = splits(B, V)
        vals = [ctypes.c_uint64(x.data.ptr), ctypes.c_uint32(B), ctypes.c_uint32(V), ctypes.c_uint32(V),
                ctypes.c_float(1.0), ctypes.c_uint32(key0), ctypes.c_uint32(7), ctypes.c_uint32(S),
                ctypes.c_uint64(part_v.data.ptr), ctypes.c_uint64(part_i.data.ptr),
                ctypes.c_uint64(arrivals.data.ptr), ctypes.c_uint64(tokens.data.ptr), ctypes.c_uint64(status.data.ptr)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
        attr = Attr(id=PROGRAMMATIC_STREAM_SERIALIZATION, value=b"\x01" + b"\0" * 63)
        cfg = Config(B * S, 1, 1, THREADS, 1, 1, 0, stream.ptr, ctypes.pointer(attr), 1 if early else 0)

        def launch():
            check(cu.cuLaunchKernelEx(ctypes.byref(cfg), fn, params, None), "cuLaunchKernelEx")
        launch.keep = (vals, params, attr, cfg)  # alive as long as the closure
        return launch

    best = 0.0
    big = cp.empty(1 << 28, dtype=cp.float32)
    dst = cp.empty_like(big)
    with stream:
        dst[:] = big
        for _ in range(5):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(stream)
            dst[:] = big
            b.record(stream)
            b.synchronize()
            best = max(best, 2 * big.nbytes / (cp.cuda.get_elapsed_time(a, b) * 1e-3) / 1e12)
    del big, dst
    copy_bw = best
    print(json.dumps({"copy_TBps": round(copy_bw, 3)}), flush=True)

    for path in paths:
        fn = load(path)
        name = path.rsplit("/", 1)[-1]
        with stream:
            for B, V in [(64, 262144), (512, 32000), (1, 32000)]:
                want = []
                for j in range(2):
                    logits[: B * V] = inputs[j][: B * V]
                    launcher(fn, False, logits, B, V, 5)()
                    stream.synchronize()
                    want.append(tokens[:B].get())
                wrong = 0
                for it in range(20):
                    logits[: B * V] = inputs[it % 2][: B * V]  # a plain kernel writes the logits
                    launcher(fn, True, logits, B, V, 5)()
                    wrong += int((tokens[:B].get() != want[it % 2]).sum())
                print(json.dumps({"file": name, "dependency_check": f"{B}x{V}", "rows_wrong": wrong}), flush=True)
        for B, V in SHAPES:
            floor_us = 4 * B * V / (copy_bw * 1e6)
            k = 400 if B * V < (1 << 24) else 100
            row = {"file": name, "B": B, "V": V}
            for label, early in [("plain", False), ("early", True), ("plain2", False), ("early2", True)]:
                ls = [launcher(fn, early, inputs[i], B, V, i) for i in range(2)]
                for i in range(3):
                    ls[i % 2]()
                stream.synchronize()
                blocks = []
                for _ in range(5):
                    a, b = cp.cuda.Event(), cp.cuda.Event()
                    a.record(stream)
                    for i in range(k):
                        ls[i % 2]()
                    b.record(stream)
                    b.synchronize()
                    blocks.append(cp.cuda.get_elapsed_time(a, b) * 1000 / k)
                us = sorted(blocks)[2]
                row[label + "_us"] = round(us, 2)
                row[label + "_pct_bw"] = round(100 * floor_us / us, 1)
            print(json.dumps(row), flush=True)
    print(json.dumps({"arrivals_left_nonzero": int((arrivals != 0).sum())}), flush=True)


if __name__ == "__main__":
    main()
