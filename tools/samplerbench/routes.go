package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

// routeParams are the parameters -routes times for each filter combination
// (a typical chat setting per filter).
func routeParams(f sampling.Filters) sampling.Params {
	p := sampling.Params{Temperature: 0.8, TopP: 1}
	if f&sampling.FilterTopK != 0 {
		p.TopK = 40
	}
	if f&sampling.FilterTopP != 0 {
		p.TopP = 0.95
	}
	if f&sampling.FilterMinP != 0 {
		p.MinP = 0.05
	}
	return p
}

// routeShapes are -routes' default shapes: decode batch sizes over the
// vocabularies of common models.
var routeShapes = [][2]int{
	{1, 32000}, {1, 128256}, {1, 151936}, {1, 262144},
	{8, 32000}, {8, 128256}, {8, 151936},
	{64, 32000}, {64, 128256}, {64, 151936},
}

// routeLine is one -routes measurement: the end-to-end cost of one decode
// step's sampling (Sample, then the tokens read back to the host) through
// the rejection kernel and through the argpartition fallback.
type routeLine struct {
	Impl       string  `json:"impl"`
	Op         string  `json:"op"`
	Filters    string  `json:"filters"`
	B          int     `json:"B"`
	V          int     `json:"V"`
	KernelUS   float64 `json:"kernel_us"`
	FallbackUS float64 `json:"fallback_us"`
	Speedup    float64 `json:"kernel_speedup"`
}

// routes times both routes for every filter combination and shape, then
// prints the Policy the measurement implies (the largest V at which the
// kernel won at every measured B) as a last line.
func routes(ctx context.Context, dev *runtime.Device, s *runtime.Stream, shapes [][2]int, impl string, w io.Writer) error {
	maxN, maxB := 0, 0
	for _, sh := range shapes {
		maxN, maxB = max(maxN, sh[0]*sh[1]), max(maxB, sh[0])
	}
	in, err := dev.Alloc(4 * maxN)
	if err != nil {
		return err
	}
	defer in.Free()
	if err := runtime.Upload(in, gaussian(maxN, 1)); err != nil {
		return err
	}
	tokens, err := dev.Alloc(4 * maxB)
	if err != nil {
		return err
	}
	defer tokens.Free()
	kernel := sampling.NewSampler(dev, sampling.WithPolicy(sampling.KernelEverywhere()))
	fallback := sampling.NewSampler(dev, sampling.WithPolicy(sampling.FallbackEverywhere()))
	enc := json.NewEncoder(w)
	// wins[f][V] is false once the fallback beat the kernel at some B.
	wins := map[sampling.Filters]map[int]bool{}
	for _, f := range sampling.FilterSets {
		wins[f] = map[int]bool{}
		params := []sampling.Params{routeParams(f)}
		for _, sh := range shapes {
			B, V := sh[0], sh[1]
			l := sampling.Logits{Buf: in, B: B, V: V}
			k, err := stepCost(ctx, s, kernel, l, params, tokens, sampling.RouteRejection)
			if err != nil {
				return fmt.Errorf("%s B=%d V=%d kernel: %w", f, B, V, err)
			}
			fb, err := stepCost(ctx, s, fallback, l, params, tokens, sampling.RouteArgpartition)
			if err != nil {
				return fmt.Errorf("%s B=%d V=%d fallback: %w", f, B, V, err)
			}
			won, seen := wins[f][V]
			wins[f][V] = (won || !seen) && k < fb
			if err := enc.Encode(routeLine{impl, "route", f.String(), B, V, round2(k), round2(fb), round2(fb / k)}); err != nil {
				return err
			}
		}
	}
	policy := map[string]int{}
	for _, f := range sampling.FilterSets {
		var vs []int
		for V := range wins[f] {
			vs = append(vs, V)
		}
		slices.Sort(vs)
		best := 0
		for _, V := range vs { // the largest V below which the kernel always won
			if !wins[f][V] {
				break
			}
			best = V
		}
		if best == vs[len(vs)-1] {
			best = -1 // won at every measured V: route everywhere
		}
		policy[f.String()] = best
	}
	return enc.Encode(map[string]any{"impl": impl, "op": "route-policy", "max_vocab": policy, "note": "-1: the kernel won at every measured shape"})
}

// stepCost is the median wall-clock cost of one sampling step as a decode
// loop pays it: Sample, an event, its wait, and the 4·B token bytes read
// back. It checks each call took the route it expects.
func stepCost(ctx context.Context, s *runtime.Stream, sm *sampling.Sampler, l sampling.Logits, params []sampling.Params, tokens *runtime.Buffer, want sampling.Route) (float64, error) {
	host := make([]uint32, l.B)
	const warm, n = 3, 25
	var us []float64
	for i := range warm + n {
		t0 := time.Now()
		d, err := sm.Sample(ctx, s, l, params, sampling.Key{uint32(i), 9}, tokens)
		if err != nil {
			return 0, err
		}
		if d.Route != want {
			return 0, fmt.Errorf("routed to %s, want %s", d.Route, want)
		}
		ev, err := s.Record()
		if err != nil {
			return 0, err
		}
		if err := ev.Wait(ctx); err != nil {
			return 0, err
		}
		if err := runtime.Download(tokens, host); err != nil {
			return 0, err
		}
		if i >= warm {
			us = append(us, float64(time.Since(t0).Nanoseconds())/1000)
		}
	}
	slices.Sort(us)
	return us[len(us)/2], nil
}
