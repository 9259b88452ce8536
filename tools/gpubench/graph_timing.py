"""CUDA-graph timing shared by the kernel benchmarks in this folder
(forward_kernels.py, qforward_kernels.py, wg_products.py): a graph of many
calls replayed, so launch gaps do not count."""
import torch


def graph_us(fn, reps=50):
    """Median over 5 replays of a CUDA graph of reps calls, in us per call."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / reps)
    return sorted(times)[2]
