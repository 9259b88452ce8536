package sampling

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/hipgo/hipgo/runtime"
)

// DType is the element type of logits in device memory.
type DType uint8

const (
	F32 DType = iota
	BF16
	F16
)

func (t DType) size() int {
	if t == F32 {
		return 4
	}
	return 2
}

func (t DType) suffix() string {
	switch t {
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	}
	return "f32"
}

// Logits are [B, V] logits in device memory, row r starting LD elements
// after row r-1 (LD 0 means V).
type Logits struct {
	Buf   *runtime.Buffer
	B, V  int
	LD    int
	DType DType
}

func (l Logits) ld() int {
	if l.LD == 0 {
		return l.V
	}
	return l.LD
}

func (l Logits) check(entry string) error {
	if l.Buf == nil {
		return shapeErr(entry, "nil logits buffer")
	}
	if l.B <= 0 || l.V <= 0 || l.V > MaxKernelVocab {
		return shapeErr(entry, "B = %d, V = %d: need B > 0 and 0 < V <= %d", l.B, l.V, MaxKernelVocab)
	}
	if l.ld() < l.V {
		return shapeErr(entry, "row stride %d is below V = %d", l.ld(), l.V)
	}
	need := ((l.B-1)*l.ld() + l.V) * l.DType.size()
	if l.Buf.Size() < need {
		return shapeErr(entry, "logits buffer of %d bytes holds less than [%d, %d] with stride %d (%d bytes)", l.Buf.Size(), l.B, l.V, l.ld(), need)
	}
	return nil
}

// Outputs are where a kernel writes its per-row results in device memory:
// Tokens and Status (a Status per row: OK, invalid row, or — rejection only —
// unconverged), and Rounds (rejection only). Each holds at least 4·B bytes.
type Outputs struct {
	Tokens, Status, Rounds *runtime.Buffer
}

func (o Outputs) check(entry string, B int, rounds bool) error {
	for _, b := range []struct {
		name string
		buf  *runtime.Buffer
		need bool
	}{{"Tokens", o.Tokens, true}, {"Status", o.Status, true}, {"Rounds", o.Rounds, rounds}} {
		if !b.need {
			continue
		}
		if b.buf == nil || b.buf.Size() < 4*B {
			return shapeErr(entry, "output %s must hold %d bytes (4·B)", b.name, 4*B)
		}
	}
	return nil
}

// Sampler runs the sampler kernels on one device. Its calls enqueue work on
// the stream they are given and reuse device scratch memory, so one Sampler
// serves one stream at a time (use one per stream to sample concurrently).
type Sampler struct {
	dev     *runtime.Device
	backend Backend
	router  *Router

	mu       sync.Mutex
	mod      *runtime.Module
	kernels  map[string]*runtime.Kernel
	partVal  *runtime.Buffer
	partIdx  *runtime.Buffer
	arrivals *runtime.Buffer // per-row counters of gumbel_max_*, zero between launches
	retired  []retiredBuffer // outgrown scratch, freed once queued work is done
	hostPar  []float32
	slots    [launchSlots]launchSlot
	next     int
}

// launchSlot is the sampler-owned memory of one rejection launch: its
// parameter array, and (on the production path) its status and rounds. The
// slots rotate; a slot is reused only after the event of its last launch
// has settled, so a synchronous parameter upload never overwrites memory a
// queued kernel still reads. With launchSlots > ringSlots, a slot's flags
// also outlive its stay in the verification ring at the usual depth.
type launchSlot struct {
	params, status, rounds *runtime.Buffer
	ev                     *runtime.Event
	stream                 *runtime.Stream // where ev was recorded
	uploaded               []float32       // the parameter array last uploaded to params
}

const launchSlots = 2 * ringSlots

// SamplerOption configures NewSampler.
type SamplerOption func(*samplerConfig)

type samplerConfig struct {
	policy *Policy
}

// WithPolicy replaces the backend's DefaultPolicy (for measurements such as
// samplerbench -routes, or a deployment that measured its own machine).
func WithPolicy(p Policy) SamplerOption {
	return func(c *samplerConfig) { c.policy = &p }
}

// NewSampler returns a sampler for dev. Nothing is loaded until Preload or
// a kernel entry point is called, so a device without a port gets the typed
// refusal from that call.
func NewSampler(dev *runtime.Device, opts ...SamplerOption) *Sampler {
	b := Backend(dev.Backend())
	var c samplerConfig
	for _, o := range opts {
		o(&c)
	}
	p := DefaultPolicy(b)
	if c.policy != nil {
		p = *c.policy
	}
	return &Sampler{dev: dev, backend: b, router: NewRouter(b, p), kernels: map[string]*runtime.Kernel{}}
}

// Preload loads the module of the sampler kernels dev's backend has ports
// for, and looks up every one of them, now rather than at the first call
// that needs one. Where the driver compiles that module (CUDA's PTX on a
// GPU the shipped machine code is not for: about a second on the H200;
// Metal's source) the compile then lands here, at load, instead of on a
// server's first request. A second call, and the entry points after it,
// load nothing. A backend without a port returns nil: its entry points
// still give their typed refusal.
func (sm *Sampler) Preload() error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, ports := range []Ports{GumbelMaxPorts(), RejectionPorts()} {
		port := ports.For(sm.backend)
		if port == nil {
			continue
		}
		for _, name := range port.Kernels {
			if _, err := sm.kernel(port, name); err != nil {
				return fmt.Errorf("sampling: loading %s: %w", name, err)
			}
		}
	}
	return nil
}

// Router is the sampler's production router (counters, verification ring).
func (sm *Sampler) Router() *Router { return sm.router }

// Supported reports whether dev's backend has ports for both sampler
// kernels (derived from the port tables).
func Supported(dev *runtime.Device) bool {
	b := Backend(dev.Backend())
	return GumbelMaxPorts().Supported(b) && RejectionPorts().Supported(b)
}

// kernel loads the port's module once and returns one of its kernels.
// Callers hold sm.mu.
func (sm *Sampler) kernel(port *Port, name string) (*runtime.Kernel, error) {
	if k := sm.kernels[name]; k != nil {
		return k, nil
	}
	if sm.mod == nil {
		m, err := sm.dev.LoadModule(port.Module)
		if err != nil {
			return nil, err
		}
		sm.mod = m
	}
	k, err := sm.mod.Kernel(name)
	if err != nil {
		return nil, err
	}
	sm.kernels[name] = k
	return k, nil
}

// growOn is grow for scratch memory the kernels queued on s use (the
// Gumbel kernel's partials and arrival counters). An outgrown buffer is not
// freed at once, since cuMemFree and hipFree need not wait for kernels
// still queued: it is retired with an event recorded on s, and freed by a
// later call once that event has settled (reapRetired). zeroed fills a new
// allocation with zeros. Callers hold sm.mu.
func (sm *Sampler) growOn(s *runtime.Stream, buf **runtime.Buffer, n int, zeroed bool) (*runtime.Buffer, error) {
	if *buf != nil && (*buf).Size() >= n {
		return *buf, nil
	}
	if *buf != nil {
		ev, err := s.Record() // settles once all work queued so far, which may read *buf, is done
		if err != nil {
			return nil, err
		}
		sm.retired = append(sm.retired, retiredBuffer{buf: *buf, ev: ev, s: s})
		*buf = nil
	}
	b, err := sm.dev.Alloc(max(n, 4096))
	if err != nil {
		return nil, err
	}
	if zeroed {
		if err := b.Write(0, make([]byte, b.Size())); err != nil {
			return nil, errors.Join(err, b.Free())
		}
	}
	*buf = b
	return b, nil
}

// retiredBuffer is scratch memory replaced by a larger buffer, freed once
// ev (recorded on s when it was replaced) has landed.
type retiredBuffer struct {
	buf *runtime.Buffer
	ev  *runtime.Event
	s   *runtime.Stream
}

// reapRetired frees the retired buffers whose events have landed. An event
// that failed says the device is lost only when the device says so: then
// the buffer is dropped (its Free would fail with the loss, which is the
// event's error to report, not this one's). Otherwise the driver could not
// answer for the event (a failed query): the queued work may still read the
// buffer, so it waits for a new event recorded behind that work on the same
// stream. Callers hold sm.mu.
func (sm *Sampler) reapRetired() error {
	var errs []error
	keep := sm.retired[:0]
	for _, r := range sm.retired {
		switch r.ev.State() {
		case runtime.Pending:
			keep = append(keep, r)
		case runtime.Landed:
			errs = append(errs, r.buf.Free())
		default:
			if sm.dev.Lost() != nil {
				_ = r.buf.Free() // lost: fails at once without the driver; the loss is the event's error
				continue
			}
			ev, err := r.s.Record()
			if err != nil {
				// Closed stream or device: nothing can tell when the work is
				// done, so the buffer is left unfreed rather than freed under it.
				errs = append(errs, err)
				continue
			}
			r.ev = ev
			keep = append(keep, r)
		}
	}
	clear(sm.retired[len(keep):])
	sm.retired = keep
	return errors.Join(errs...)
}

// grow returns *buf, reallocated when it holds fewer than n bytes. The old
// buffer is freed at once: only for memory no queued kernel can still use
// (a launch slot whose event has settled).
func (sm *Sampler) grow(buf **runtime.Buffer, n int) (*runtime.Buffer, error) {
	if *buf != nil && (*buf).Size() >= n {
		return *buf, nil
	}
	if *buf != nil {
		if err := (*buf).Free(); err != nil {
			return nil, err
		}
		*buf = nil
	}
	b, err := sm.dev.Alloc(max(n, 4096))
	if err != nil {
		return nil, err
	}
	*buf = b
	return b, nil
}

func grid(x, y uint32, threads uint32) runtime.LaunchConfig {
	return runtime.LaunchConfig{Grid: runtime.Dim3{X: x, Y: y, Z: 1}, Block: runtime.Dim3{X: threads, Y: 1, Z: 1}}
}

// GumbelMax enqueues one exact draw per row from softmax(logits/T) on s:
// argmax_i(logit_i/T + g_i) with Philox Gumbel noise keyed by (key, row,
// token), so the tokens equal GumbelMaxCPU's for the same key. Temperature
// 0 is greedy. Rows are split across blocks (GumbelSplits), so small batches
// use the whole GPU; it is one launch (the row's last block merges). A
// backend without a port gets *NoKernelPortError before anything else.
func (sm *Sampler) GumbelMax(s *runtime.Stream, logits Logits, temperature float32, key Key, out Outputs) error {
	port, err := selectPort(EntryGumbelMax, sm.backend)
	if err != nil {
		return err
	}
	if err := logits.check(EntryGumbelMax); err != nil {
		return err
	}
	if err := out.check(EntryGumbelMax, logits.B, false); err != nil {
		return err
	}
	if err := (Params{Temperature: temperature, TopP: 1}).Validate(); err != nil {
		return err
	}
	B, V := logits.B, logits.V
	splits := GumbelSplits(B, V, sm.dev.Info().ComputeUnits)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	k, err := sm.kernel(port, "gumbel_max_"+logits.DType.suffix())
	if err != nil {
		return err
	}
	if err := sm.reapRetired(); err != nil {
		return err
	}
	pv, err := sm.growOn(s, &sm.partVal, 4*B*splits, false)
	if err != nil {
		return err
	}
	pi, err := sm.growOn(s, &sm.partIdx, 4*B*splits, false)
	if err != nil {
		return err
	}
	arrivals, err := sm.growOn(s, &sm.arrivals, 4*B, true)
	if err != nil {
		return err
	}
	// The kernel waits for the work ahead of it before it touches memory
	// (grid_dependency_wait), so it may be scheduled early: on sm_90 its
	// blocks are resident when the kernel ahead ends, which hides the
	// launch gap (1.5-2 µs of 25 at 64 MB of logits on an H200). Only
	// devices of compute capability 9.0 and later start it early, and they
	// all load the sm_90 PTX (kernels.Load), whose kernel has the wait; the
	// sm_80 PTX compiles it to nothing.
	cfg := grid(uint32(splits*B), 1, GumbelThreads)
	cfg.EarlyStart = true
	return s.Launch(k, cfg, logits.Buf, uint32(B), uint32(V), uint32(logits.ld()),
		GumbelInvTemp(temperature), key[0], key[1], uint32(splits), pv, pi, arrivals, out.Tokens, out.Status)
}

// Rejection enqueues one draw per row with per-row (len B) or broadcast
// (len 1) params: membership by top-k, top-p and min-p on the untempered
// row, the draw weighted by the tempered row, by dual-pivot rejection with
// at most maxRounds (1..MaxRounds) rounds. out.Status gets OK, Unconverged
// (the row returned its argmax) or InvalidRow; out.Rounds the rounds used.
// The tokens equal RejectionCPU's for the same key. A backend without a port
// gets *NoKernelPortError before anything else.
func (sm *Sampler) Rejection(s *runtime.Stream, logits Logits, params []Params, key Key, maxRounds int, out Outputs) error {
	port, err := selectPort(EntryRejection, sm.backend)
	if err != nil {
		return err
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sl, err := sm.slot(context.Background(), logits.B)
	if err != nil {
		return err
	}
	_, err = sm.rejection(port, s, sl, logits, params, key, maxRounds, out)
	return err
}

// slot returns the next launch slot with room for B rows, waiting only when
// that slot's previous launch is still queued (more than launchSlots
// rejection launches in flight). Callers hold sm.mu.
func (sm *Sampler) slot(ctx context.Context, B int) (*launchSlot, error) {
	sl := &sm.slots[sm.next%launchSlots]
	sm.next++
	if sl.ev != nil {
		err := sl.ev.Wait(ctx)
		if err != nil && sl.ev.State() == runtime.Failed && sm.dev.Lost() == nil {
			// The driver could not answer for the event (a failed query),
			// which does not say the launch is done: wait for a new event
			// recorded behind it instead of reusing memory it may read.
			ev, rerr := sl.stream.Record()
			if rerr != nil {
				return nil, rerr
			}
			sl.ev = ev
			err = ev.Wait(ctx)
		}
		if err != nil {
			return nil, err
		}
		sl.ev = nil
	}
	for _, b := range []struct {
		buf **runtime.Buffer
		n   int
	}{{&sl.params, 16 * B}, {&sl.status, 4 * B}, {&sl.rounds, 4 * B}} {
		old := *b.buf
		if _, err := sm.grow(b.buf, b.n); err != nil {
			return nil, err
		}
		if *b.buf != old && b.buf == &sl.params {
			sl.uploaded = sl.uploaded[:0] // a new buffer holds nothing yet
		}
	}
	return sl, nil
}

// rejection launches the kernel with the slot's parameter array and records
// the slot's event; callers hold sm.mu.
func (sm *Sampler) rejection(port *Port, s *runtime.Stream, sl *launchSlot, logits Logits, params []Params, key Key, maxRounds int, out Outputs) (*runtime.Event, error) {
	if err := logits.check(EntryRejection); err != nil {
		return nil, err
	}
	if err := out.check(EntryRejection, logits.B, true); err != nil {
		return nil, err
	}
	if maxRounds < 1 || maxRounds > MaxRounds {
		return nil, &ParameterError{Name: "max_rounds", Value: fmt.Sprint(maxRounds), Rule: fmt.Sprintf("want 1..%d", MaxRounds), Row: -1}
	}
	B, V := logits.B, logits.V
	if cap(sm.hostPar) < 4*B {
		sm.hostPar = make([]float32, 4*B)
	}
	host := sm.hostPar[:4*B]
	if err := PackParams(host, params, B, V); err != nil {
		return nil, err
	}
	k, err := sm.kernel(port, "rejection_"+logits.DType.suffix())
	if err != nil {
		return nil, err
	}
	// A decode loop samples with the same parameters step after step: skip
	// the synchronous upload when the slot already holds them.
	if !slices.Equal(sl.uploaded, host) {
		if err := runtime.Upload(sl.params, host); err != nil {
			sl.uploaded = sl.uploaded[:0]
			return nil, err
		}
		sl.uploaded = append(sl.uploaded[:0], host...)
	}
	if err := s.Launch(k, grid(uint32(B), 1, RejectionThreads), logits.Buf, uint32(B), uint32(V), uint32(logits.ld()), sl.params,
		key[0], key[1], uint32(maxRounds), out.Tokens, out.Status, out.Rounds); err != nil {
		return nil, err
	}
	ev, err := s.Record()
	if err != nil {
		return nil, err
	}
	sl.ev, sl.stream = ev, s
	return ev, nil
}

// Sample is the production path: the router picks the kernel or the CPU
// fallback, counts the outcome and logs it once, and the tokens go to tokens
// (4·B bytes). It never waits for the rejection kernel's convergence flags:
// they go to the verification ring and are read by a later call once their
// launch has landed (a failed launch is dropped without reading, let alone
// consuming, its error).
//
// The fallbacks run on the CPU: they wait for s, read the logits back and
// write the tokens.
func (sm *Sampler) Sample(ctx context.Context, s *runtime.Stream, logits Logits, params []Params, key Key, tokens *runtime.Buffer) (Decision, error) {
	sm.router.Drain()
	d, err := sm.router.Decide(params, logits.B, logits.V)
	if err != nil {
		return d, err
	}
	if err := logits.check("sampling.Sample"); err != nil {
		return d, err
	}
	if tokens == nil || tokens.Size() < 4*logits.B {
		return d, shapeErr("sampling.Sample", "tokens must hold %d bytes (4·B)", 4*logits.B)
	}
	switch d.Route {
	case RouteGumbel:
		sm.mu.Lock()
		sl, err := sm.slot(ctx, logits.B)
		sm.mu.Unlock()
		if err != nil {
			return d, err
		}
		return d, sm.GumbelMax(s, logits, params[0].Temperature, key, Outputs{Tokens: tokens, Status: sl.status})
	case RouteRejection:
		return d, sm.sampleDeferred(ctx, s, logits, params, key, tokens)
	}
	return d, sm.fallback(ctx, s, logits, params, key, d.Route, tokens)
}

// sampleDeferred launches the rejection kernel with its flags in a
// sampler-owned slot and queues the launch for verification.
func (sm *Sampler) sampleDeferred(ctx context.Context, s *runtime.Stream, logits Logits, params []Params, key Key, tokens *runtime.Buffer) error {
	port, err := selectPort(EntryRejection, sm.backend)
	if err != nil {
		return err
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sl, err := sm.slot(ctx, logits.B)
	if err != nil {
		return err
	}
	ev, err := sm.rejection(port, s, sl, logits, params, key, MaxRounds, Outputs{Tokens: tokens, Status: sl.status, Rounds: sl.rounds})
	if err != nil {
		return err
	}
	sm.router.deferLaunch(&deferredLaunch{ev: ev, ok: sl.status, rounds: sl.rounds, B: logits.B}, MaxRounds)
	return nil
}

// deferredLaunch is a rejection launch in the verification ring.
type deferredLaunch struct {
	ev         *runtime.Event
	ok, rounds *runtime.Buffer
	B          int
}

// launchState reads the event's state: it never waits and never consumes
// the event's error.
func (l *deferredLaunch) launchState() launchState {
	switch l.ev.State() {
	case runtime.Landed:
		return launchLanded
	case runtime.Failed:
		return launchFailed
	}
	return launchPending
}

// flags copies the landed flags back (the launch has completed, so the copy
// waits for nothing).
func (l *deferredLaunch) flags() (ok, rounds []uint32) {
	ok, rounds = make([]uint32, l.B), make([]uint32, l.B)
	if runtime.Download(l.ok, ok) != nil || runtime.Download(l.rounds, rounds) != nil {
		// The device failed between landing and this read; report the rows
		// as converged rather than invent overflows (the failure reaches the
		// owner of the next launch).
		for i := range ok {
			ok[i], rounds[i] = uint32(StatusOK), 0
		}
	}
	return ok, rounds
}

// fallback samples on the CPU: it waits for s (the fallback needs the
// logits on the host), reads them, draws, and writes the tokens.
func (sm *Sampler) fallback(ctx context.Context, s *runtime.Stream, logits Logits, params []Params, key Key, route Route, tokens *runtime.Buffer) error {
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	host, err := readLogits(logits)
	if err != nil {
		return err
	}
	out := make([]uint32, logits.B)
	switch route {
	case RouteCategorical:
		temps := make([]float32, len(params))
		for i, p := range params {
			temps[i] = p.Temperature
		}
		err = Categorical(out, host, logits.B, logits.V, temps, key)
	default:
		err = Argpartition(out, host, logits.B, logits.V, params, key)
	}
	// Invalid rows still get their token 0 written: nothing is lost.
	if uerr := runtime.Upload(tokens, out); uerr != nil {
		return uerr
	}
	return err
}

// readLogits copies [B, V] logits (any dtype, any stride) into float32 rows.
func readLogits(l Logits) ([]float32, error) {
	ld, es := l.ld(), l.DType.size()
	raw := make([]byte, ((l.B-1)*ld+l.V)*es)
	if err := l.Buf.Read(0, raw); err != nil {
		return nil, err
	}
	out := make([]float32, l.B*l.V)
	for r := 0; r < l.B; r++ {
		for i := 0; i < l.V; i++ {
			o := (r*ld + i) * es
			switch l.DType {
			case F32:
				out[r*l.V+i] = math.Float32frombits(uint32(raw[o]) | uint32(raw[o+1])<<8 | uint32(raw[o+2])<<16 | uint32(raw[o+3])<<24)
			case BF16:
				out[r*l.V+i] = math.Float32frombits((uint32(raw[o]) | uint32(raw[o+1])<<8) << 16)
			case F16:
				out[r*l.V+i] = halfToFloat(uint16(raw[o]) | uint16(raw[o+1])<<8)
			}
		}
	}
	return out, nil
}

// halfToFloat widens an IEEE binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(man) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}
