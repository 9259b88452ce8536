package model

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/modeltest"
)

var (
	smolOnce sync.Once
	smolFS   map[WeightFormat]*Model
)

// smol loads the SmolLM-135M-shaped random model once per benchmark binary.
func smol(b *testing.B, f WeightFormat) *Model {
	smolOnce.Do(func() {
		fsys := specFS(b, modeltest.SmolLM135M())
		smolFS = map[WeightFormat]*Model{}
		for _, wf := range []WeightFormat{WeightsAuto, WeightsF32} {
			m, err := LoadFS(fsys, WithoutTokenizer(), WithWeightFormat(wf))
			if err != nil {
				b.Fatal(err)
			}
			smolFS[wf] = m
		}
	})
	return smolFS[f]
}

// BenchmarkDecodeSmolLM135M measures single-token decode (tokens/s) after a
// 32-token prompt, with bf16 weights (as SmolLM ships) and widened to f32.
func BenchmarkDecodeSmolLM135M(b *testing.B) {
	for _, f := range []struct {
		name string
		wf   WeightFormat
	}{{"bf16", WeightsAuto}, {"f32", WeightsF32}} {
		b.Run(f.name, func(b *testing.B) {
			m := smol(b, f.wf)
			ctx := context.Background()
			s := m.NewSession()
			if _, err := s.Forward(ctx, testTokens(32, 49152), false); err != nil {
				b.Fatal(err)
			}
			tok := []uint32{42}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if s.Len() >= 1024 { // keep the context length comparable across b.N
					b.StopTimer()
					s = m.NewSession()
					if _, err := s.Forward(ctx, testTokens(32, 49152), false); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if _, err := s.Forward(ctx, tok, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkDecodeDemoShaped measures decode on a random model with the demo
// model's shapes (bf16, 6 layers of 384), 32-token prompt.
func BenchmarkDecodeDemoShaped(b *testing.B) {
	m, err := LoadFS(specFS(b, modeltest.DemoShaped()), WithoutTokenizer())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var s *Session
	for b.Loop() {
		if s == nil || s.Len() >= 480 {
			b.StopTimer()
			s = m.NewSession()
			if _, err := s.Forward(ctx, testTokens(32, 4096), false); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.Forward(ctx, []uint32{42}, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkPrefillSmolLM135M measures prompt processing of 128 and 512
// tokens (bf16 weights), with the CPU's row-by-row products (avx2-rows) and
// its tiled ones (avx2) side by side where both exist.
func BenchmarkPrefillSmolLM135M(b *testing.B) {
	defer func() { _ = cpu.SetKernels(cpu.SIMD()) }()
	sets := []string{cpu.SIMD()}
	if cpu.SetKernels("avx2-rows") == nil {
		sets = []string{"avx2-rows", "avx2"}
	}
	m := smol(b, WeightsAuto)
	for _, n := range []int{128, 512} {
		prompt := testTokens(n, 49152)
		for _, set := range sets {
			b.Run(fmt.Sprintf("%d/%s", n, set), func(b *testing.B) {
				if err := cpu.SetKernels(set); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := m.NewSession().Forward(context.Background(), prompt, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkMLXDecodeSmolLM135M is BenchmarkDecodeSmolLM135M on the MLX
// backend (float32 weights on MLX's stream), against libmlxc.
func BenchmarkMLXDecodeSmolLM135M(b *testing.B) {
	testenv.NeedMLX(b, mlx.Load())
	m, err := LoadFS(specFS(b, modeltest.SmolLM135M()), WithoutTokenizer(), WithDeviceMode(DeviceMLX))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var s *Session
	for b.Loop() {
		if s == nil || s.Len() >= 1024 {
			b.StopTimer()
			if s != nil {
				s.Close()
			}
			s = m.NewSession()
			if _, err := s.Forward(ctx, testTokens(32, 49152), false); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.Forward(ctx, []uint32{42}, false); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
