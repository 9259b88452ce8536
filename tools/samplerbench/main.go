// Command samplerbench times hipgo's sampler kernels on the present GPU and
// prints one JSON object per line, for tools/gpubench/sampler_table.py to
// put beside PyTorch's (torch_samplers.py, same GPU, same call):
//
//	{"impl":"hipgo","op":"gumbel","B":64,"V":128256,"us":12.3}
//
// With -routes it measures what the router's Policy is decided by instead:
// per filter combination and shape, a decode step's sampling end to end
// through the kernel and through the CPU fallback (routes.go).
//
// Every op is timed the same way as the PyTorch baselines: K back-to-back
// calls over rotating inputs between two GPU timing events
// (runtime.Stream.TimeGPU, as CUDA events for PyTorch), median of 5 blocks:
// the cost per call on the device, gaps between launches included. Before
// 2026-11-29 it used the host's wall clock around the block and a
// Synchronize, which also counted the host's wake-up latency. Logits are
// N(0, 5^2), the distribution torch_samplers.py draws.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

var (
	shapesB = []int{1, 8, 64, 256, 512}
	shapesV = []int{32000, 128256, 151936, 262144}
)

const sigma = 5

type op struct {
	name   string
	params sampling.Params
}

var ops = []op{
	{"gumbel", sampling.Params{Temperature: 1, TopP: 1}},
	{"rejection_top_p", sampling.Params{Temperature: 1, TopP: 0.9}},
	{"rejection_topk_top_p", sampling.Params{Temperature: 1, TopK: 40, TopP: 0.9}},
	{"rejection_min_p", sampling.Params{Temperature: 1, TopP: 1, MinP: 0.05}},
}

var (
	onlyOps    = flag.String("ops", "", "comma-separated ops to run (default: all)")
	onlyShapes = flag.String("shapes", "", "comma-separated BxV shapes to run instead of the grid above, e.g. 512x131072")
	cpuProfile = flag.String("cpuprofile", "", "write a Go CPU profile of the run to this file")
	routesMode = flag.Bool("routes", false, "instead of the kernel timings, time one decode step's sampling end to end (Sample and the tokens read back) through the rejection kernel and through the argpartition fallback, for every filter combination, and print the Policy that implies")
	callbacks  = flag.Bool("callbacks", true, "land events with host callbacks (the default device); false opens the device with runtime.WithoutCallbacks, a diagnostic whose lines say impl \"hipgo-nocallbacks\"")
)

func main() {
	flag.Parse()
	stop, err := startProfile(*cpuProfile)
	if err == nil {
		err = run()
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "samplerbench:", err)
		os.Exit(1)
	}
}

// startProfile starts a CPU profile into path ("" for none) and returns
// the function that ends it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "samplerbench: cpu profile:", err)
		}
	}, nil
}

func run() error {
	ctx := context.Background()
	impl := "hipgo"
	var opts []runtime.Option
	if !*callbacks {
		impl = "hipgo-nocallbacks"
		opts = append(opts, runtime.WithoutCallbacks())
	}
	dev, err := runtime.Open(ctx, opts...)
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	shapes, err := parseShapes(*onlyShapes)
	if err != nil {
		return err
	}
	if *routesMode {
		if *onlyShapes == "" {
			shapes = routeShapes
		}
		return routes(ctx, dev, s, shapes, impl, os.Stdout)
	}
	maxN, maxB := 0, 0
	for _, sh := range shapes {
		maxN, maxB = max(maxN, sh[0]*sh[1]), max(maxB, sh[0])
	}
	// Two rotating inputs of the largest shape; smaller shapes use a prefix.
	const R = 2
	var inputs [R]*runtime.Buffer
	for i := range inputs {
		if inputs[i], err = dev.Alloc(4 * maxN); err != nil {
			return err
		}
		if err := runtime.Upload(inputs[i], gaussian(maxN, uint64(i+1))); err != nil {
			return err
		}
	}
	sm := sampling.NewSampler(dev)
	out := sampling.Outputs{}
	for _, b := range []**runtime.Buffer{&out.Tokens, &out.Status, &out.Rounds} {
		if *b, err = dev.Alloc(4 * maxB); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, sh := range shapes {
		B, V := sh[0], sh[1]
		k := 200
		if B*V >= 1<<24 {
			k = 50
		}
		for _, o := range ops {
			if *onlyOps != "" && !slices.Contains(strings.Split(*onlyOps, ","), o.name) {
				continue
			}
			call := func(i int) error {
				l := sampling.Logits{Buf: inputs[i%R], B: B, V: V}
				key := sampling.Key{uint32(i), 7}
				if o.name == "gumbel" {
					return sm.GumbelMax(s, l, o.params.Temperature, key, out)
				}
				return sm.Rejection(s, l, []sampling.Params{o.params}, key, sampling.MaxRounds, out)
			}
			us, err := timed(ctx, s, call, k)
			if err != nil {
				return fmt.Errorf("%s B=%d V=%d: %w", o.name, B, V, err)
			}
			if err := enc.Encode(map[string]any{"impl": impl, "op": o.name, "B": B, "V": V, "us": round2(us)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func timed(ctx context.Context, s *runtime.Stream, call func(int) error, k int) (float64, error) {
	for i := 0; i < 3; i++ {
		if err := call(i); err != nil {
			return 0, err
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		return 0, err
	}
	// Each block of k back-to-back calls is timed on the GPU's clock
	// (Stream.TimeGPU: timing events around the block), as
	// tools/gpubench/torch_samplers.py times PyTorch with CUDA events: the
	// per-call cost with launch gaps included, without host wake-up latency.
	var blocks []float64
	for b := 0; b < 5; b++ {
		d, err := s.TimeGPU(ctx, func() error {
			for i := 0; i < k; i++ {
				if err := call(i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		blocks = append(blocks, float64(d.Nanoseconds())/1000/float64(k))
	}
	slices.Sort(blocks)
	return blocks[len(blocks)/2], nil
}

// gaussian fills n float32 N(0, sigma^2) values, in parallel.
func gaussian(n int, seed uint64) []float32 {
	out := make([]float32, n)
	workers := goruntime.GOMAXPROCS(0)
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min(n, (w+1)*chunk)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := lo; i < hi; i++ {
				out[i] = float32(rng.NormFloat64() * sigma)
			}
		}()
	}
	wg.Wait()
	return out
}

// parseShapes reads "BxV,BxV"; empty means the grid shapesB × shapesV.
func parseShapes(spec string) ([][2]int, error) {
	var out [][2]int
	if spec == "" {
		for _, B := range shapesB {
			for _, V := range shapesV {
				out = append(out, [2]int{B, V})
			}
		}
		return out, nil
	}
	for _, f := range strings.Split(spec, ",") {
		var B, V int
		if n, err := fmt.Sscanf(f, "%dx%d", &B, &V); err != nil || n != 2 || B < 1 || V < 1 {
			return nil, fmt.Errorf("shape %q: want BxV with B, V >= 1", f)
		}
		out = append(out, [2]int{B, V})
	}
	return out, nil
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
