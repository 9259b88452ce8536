package model

import (
	"context"
	"sync/atomic"

	"github.com/hipgo/hipgo/sampling"
)

// WithStepFaults is fault injection for tests of code above the model (a
// server's error paths, on any backend): fail is called with the number of
// each Batch step of the model (from 1, over every batch and generation),
// and a step it answers with an error fails every sequence of that step
// with that error, before anything runs, as a failed backend step does
// (Batch.Step returns a *BatchError wrapping it). Return a
// *runtime.DeviceLostError to act out a lost device. fail is called from
// the stepping goroutine and must be safe for concurrent use when several
// goroutines step batches of the model.
func WithStepFaults(fail func(step uint64) error) Option {
	return func(o *options) { o.stepFaults = fail }
}

// faultyBackend is a backend whose steps WithStepFaults may fail.
type faultyBackend struct {
	backend
	fail  func(step uint64) error
	steps atomic.Uint64
}

func (b *faultyBackend) step(ctx context.Context, items []stepItem, out []uint32) error {
	if err := b.fail(b.steps.Add(1)); err != nil {
		return err
	}
	return b.backend.step(ctx, items, out)
}

// gpu is the model's GPU backend, or nil on the CPU.
func (m *Model) gpu() *gpuBackend {
	be := m.be
	if f, ok := be.(*faultyBackend); ok {
		be = f.backend
	}
	g, _ := be.(*gpuBackend)
	return g
}

// DeviceLost is the fault that lost the model's GPU (a
// *runtime.DeviceLostError), or nil while it is usable; always nil on the
// CPU. After it every step fails at once.
func (m *Model) DeviceLost() error {
	if g := m.gpu(); g != nil {
		return g.b.Device().Lost()
	}
	return nil
}

// SamplingRouter is the router of the GPU backend's device sampler, whose
// counters say how each draw was routed; nil on the CPU, which samples with
// the CPU references directly.
func (m *Model) SamplingRouter() *sampling.Router {
	if g := m.gpu(); g != nil {
		return g.sampler().Router()
	}
	return nil
}
