package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/runtime"
)

// Config sizes the scheduler. Zero fields take the defaults.
type Config struct {
	// MaxBatch is the most sequences stepping together (default 16).
	MaxBatch int
	// MaxQueue is the most requests waiting for a batch slot (default 256);
	// Submit beyond it is ErrQueueFull.
	MaxQueue int
	// MaxFailedSteps consecutive failed steps stop admission (default 8;
	// negative: never).
	MaxFailedSteps int
	// Fallback, when set, is called once after the device is lost; the model
	// it returns (the same checkpoint on the CPU, say) serves every later
	// request. Its error, if any, leaves the scheduler unavailable.
	Fallback func() (*model.Model, error)
	// PrefillBudget is the most prompt tokens one step feeds (default
	// DefaultPrefillBudget; negative: no bound, every prompt whole in the
	// step after it joins). Long prompts are fed in slices in the same
	// steps as the running sequences' decode, the fewest tokens left first
	// (model.Batch.SetPrefillBudget), so neither a short request behind
	// long ones nor the sequences decoding wait for a long prefill.
	PrefillBudget int
	// StepRetries is how many times a step that failed retryably (a
	// model.BatchError with Retryable: a launch rejection that advanced no
	// sequence) is run again before its requests fail (default 2, so 3
	// tries; negative: none). A sticky fault is never retried.
	StepRetries int
	// OnStep, when set, is called on the scheduler goroutine after each
	// step, a retry included. It must not block.
	OnStep func(StepInfo)
}

// DefaultPrefillBudget is Config.PrefillBudget's default: the GPU backend
// feeds a step's tokens through its layers in chunks of 512 anyway, and on
// 2 CPU cores a 512-token slice of the demo model takes about 0.13 s.
const DefaultPrefillBudget = 512

// StepInfo is one step, as Config.OnStep sees it.
type StepInfo struct {
	Seqs     int // sequences in the batch
	Prompt   int // prompt tokens fed (0 when it failed)
	Duration time.Duration
	Err      error // a *model.BatchError, or nil
	// Retry: Err is retryable and the step runs again; else Err failed the
	// requests it names (or every request in the batch, when retryable
	// failures ran out of tries).
	Retry bool
}

// Errors of Submit and of requests.
var (
	// ErrQueueFull: the queue holds MaxQueue requests; retry later.
	ErrQueueFull = errors.New("scheduler: queue full")
	// ErrClosed: the scheduler was closed.
	ErrClosed = errors.New("scheduler: closed")
	// ErrUnavailable: the device was lost (with no fallback) or the
	// failed-step guard tripped; *UnavailableError says why and since when.
	ErrUnavailable = errors.New("scheduler: not serving")
)

// UnavailableError says why the scheduler stopped serving and since when.
type UnavailableError struct {
	Reason string // "device lost", "fallback failed", "failed-step guard"
	Since  time.Time
	Err    error // the fault (a *runtime.DeviceLostError, say) or the last step error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("scheduler: not serving since %s: %s: %v", e.Since.UTC().Format(time.RFC3339Nano), e.Reason, e.Err)
}
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *UnavailableError) Unwrap() error        { return e.Err }

// Request is one generation.
type Request struct {
	// Prompt is the prompt's token ids (model.PromptTokens, model.ChatPrompt).
	Prompt []uint32
	// Options: sampling, Seed, MaxTokens (0: until the context is full),
	// Stop strings, penalties and logprobs (Chunk.Logprobs).
	Options model.GenerateOptions
	// StopIDs end the reply as end of sequence does (a chat template's
	// end-of-turn token).
	StopIDs []uint32
}

// Finish says why a request ended.
type Finish string

// Finish reasons, named as the OpenAI API names them.
const (
	FinishStop   Finish = "stop"   // end of sequence, end of turn or a stop string
	FinishLength Finish = "length" // max tokens or the context is full
)

// Scheduler runs requests through a continuously batched model.
type Scheduler struct {
	cfg   Config
	queue chan *Stream
	quit  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	m        *model.Model
	down     *UnavailableError // set once: not serving
	lostAt   time.Time         // when the device was lost (also with a fallback)
	lostErr  error
	fellBack bool
	running  int
	closed   bool
}

// New starts a scheduler over m. Close it to stop its goroutine.
func New(m *model.Model, cfg Config) *Scheduler {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 16
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 256
	}
	if cfg.MaxFailedSteps == 0 {
		cfg.MaxFailedSteps = 8
	}
	if cfg.PrefillBudget == 0 {
		cfg.PrefillBudget = DefaultPrefillBudget
	}
	if cfg.StepRetries == 0 {
		cfg.StepRetries = 2
	}
	s := &Scheduler{cfg: cfg, m: m, queue: make(chan *Stream, cfg.MaxQueue), quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Submit queues a request; its Stream delivers the text. ctx is the
// request's: when it ends the request leaves the batch. Errors: ErrQueueFull,
// ErrClosed, an *UnavailableError.
func (s *Scheduler) Submit(ctx context.Context, r Request) (*Stream, error) {
	st := newStream(ctx, r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.down != nil {
		return nil, s.down
	}
	select {
	case s.queue <- st:
		return st, nil
	default:
		return nil, ErrQueueFull
	}
}

// Status is the scheduler's state, for health checks and metrics.
type Status struct {
	Model      *model.Model // the model serving now (the fallback after a loss)
	Down       error        // an *UnavailableError when not serving, else nil
	DeviceLost error        // the fault that lost the device, if one was lost
	LostAt     time.Time
	FellBack   bool // serving on Config.Fallback's model
	Queued     int
	Running    int
}

// Status reports the scheduler's state.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Model: s.m, DeviceLost: s.lostErr, LostAt: s.lostAt, FellBack: s.fellBack, Queued: len(s.queue), Running: s.running}
	if s.down != nil {
		st.Down = s.down
	}
	return st
}

// Close stops admitting, ends every running and queued request with
// ErrClosed and waits for the scheduler goroutine.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	<-s.done
}

// running is a request in the batch.
type running struct {
	st   *Stream
	id   model.SeqID
	text *model.TextStream
	n    int // tokens generated
}

func (s *Scheduler) loop() {
	defer close(s.done)
	newBatch := func() *model.Batch {
		b := s.model().NewBatch()
		b.SetPrefillBudget(s.cfg.PrefillBudget)
		return b
	}
	batch := newBatch()
	defer func() { batch.Close() }()
	seqs := map[model.SeqID]*running{}
	failedSteps := 0
	endAll := func(err error) {
		for id, r := range seqs {
			r.st.finish("", err)
			delete(seqs, id)
		}
		batch.Close()
		batch = newBatch()
	}
	drain := func(err error) {
		for {
			select {
			case st := <-s.queue:
				st.finish("", err)
			default:
				return
			}
		}
	}
	defer func() { endAll(ErrClosed); drain(ErrClosed); s.setRunning(0) }()

	for {
		// Admit queued requests; wait for one when nothing runs.
		for len(seqs) < s.cfg.MaxBatch {
			var st *Stream
			if len(seqs) == 0 {
				s.setRunning(0) // idle until a request comes
				select {
				case st = <-s.queue:
				case <-s.quit:
					return
				}
			} else {
				select {
				case st = <-s.queue:
				case <-s.quit:
					return
				default:
				}
			}
			if st == nil {
				break
			}
			if down := s.unavailable(); down != nil {
				st.finish("", down)
				continue
			}
			if err := st.ctx.Err(); err != nil {
				st.finish("", err)
				continue
			}
			id, err := batch.Add(st.req.Prompt, st.req.Options)
			if err != nil {
				st.finish("", err)
				continue
			}
			seqs[id] = &running{st: st, id: id, text: s.model().NewTextStream(st.req.Options.Stop)}
		}
		// Requests whose caller went away leave before the step.
		for id, r := range seqs {
			if err := r.st.ctx.Err(); err != nil {
				_ = batch.Remove(id)
				r.st.finish("", err)
				delete(seqs, id)
			}
		}
		s.setRunning(len(seqs))
		if len(seqs) == 0 {
			continue
		}
		select {
		case <-s.quit:
			return
		default:
		}

		toks, err := s.step(batch)
		if be := (*model.BatchError)(nil); errors.As(err, &be) && be.Retryable {
			// Out of tries: the sequences are still in the batch, and all
			// of them fail. Down first, as below.
			failedSteps++
			if s.cfg.MaxFailedSteps > 0 && failedSteps >= s.cfg.MaxFailedSteps {
				drain(s.halt(err, failedSteps))
			}
			endAll(err)
			continue
		}
		if err != nil {
			failedSteps++
			lost := s.deviceLost(err)
			var down, halted error
			if lost != nil {
				var fallback *model.Model
				fallback, down = s.loseDevice(lost)
				if fallback == nil {
					drain(down)
				}
			} else if s.cfg.MaxFailedSteps > 0 && failedSteps >= s.cfg.MaxFailedSteps {
				// Down before any of this step's streams ends: a caller that
				// sees its request fail and submits again is refused.
				halted = s.halt(err, failedSteps)
			}
			var be *model.BatchError
			if errors.As(err, &be) {
				for _, id := range be.Seqs {
					if r := seqs[id]; r != nil {
						r.st.finish("", cmp.Or(down, err))
						delete(seqs, id)
					}
				}
			}
			if lost != nil {
				endAll(down)
				failedSteps = 0
				continue
			}
			if halted != nil {
				endAll(halted)
				drain(halted)
			}
			continue
		}
		failedSteps = 0
		now := time.Now()
		for _, t := range toks {
			r := seqs[t.Seq]
			if r == nil {
				continue
			}
			if s.m.IsEOS(t.ID) || slices.Contains(r.st.req.StopIDs, t.ID) {
				text, _ := r.text.Finish()
				s.end(batch, seqs, r, text, nil, FinishStop, now)
				continue
			}
			r.n++
			var lp *Logprob
			if t.Logprobs != nil {
				lp = &Logprob{ID: t.ID, TokenLogprobs: *t.Logprobs}
			}
			text, stopped := r.text.Add(t.ID)
			capped := r.st.req.Options.MaxTokens > 0 && r.n >= r.st.req.Options.MaxTokens
			switch {
			case stopped:
				s.end(batch, seqs, r, text, lp, FinishStop, now)
			case capped || t.Full:
				rest, stopped := r.text.Finish()
				why := FinishLength
				if stopped {
					why = FinishStop
				}
				s.end(batch, seqs, r, text+rest, lp, why, now)
			default:
				r.st.push(text, lp, r.n, now)
			}
		}
	}
}

// step runs a step of the batch, again while it fails retryably, up to
// Config.StepRetries times.
func (s *Scheduler) step(batch *model.Batch) ([]model.BatchToken, error) {
	for try := 0; ; try++ {
		size := batch.Len()
		start := time.Now()
		toks, err := batch.Step(context.Background())
		var be *model.BatchError
		retry := errors.As(err, &be) && be.Retryable && try < s.cfg.StepRetries
		if s.cfg.OnStep != nil {
			s.cfg.OnStep(StepInfo{Seqs: size, Prompt: batch.LastStep().Prompt, Duration: time.Since(start), Err: err, Retry: retry})
		}
		if !retry {
			return toks, err
		}
	}
}

// end finishes a request that completed and frees its slot.
func (s *Scheduler) end(b *model.Batch, seqs map[model.SeqID]*running, r *running, text string, lp *Logprob, why Finish, now time.Time) {
	_ = b.Remove(r.id)
	delete(seqs, r.id)
	r.st.push(text, lp, r.n, now)
	r.st.complete(why)
}

func (s *Scheduler) model() *model.Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

func (s *Scheduler) setRunning(n int) {
	s.mu.Lock()
	s.running = n
	s.mu.Unlock()
}

func (s *Scheduler) unavailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		return s.down
	}
	return nil
}

// deviceLost is the fault when err (or the model's device) says the device
// is gone, else nil.
func (s *Scheduler) deviceLost(err error) error {
	if lost := s.model().DeviceLost(); lost != nil {
		return lost
	}
	if errors.Is(err, runtime.ErrDeviceLost) || errors.Is(err, runtime.ErrDeviceFault) {
		return err
	}
	return nil
}

// loseDevice records the loss and switches to the fallback when there is
// one. It returns the fallback model (nil: none) and the error the
// requests of the lost device end with.
func (s *Scheduler) loseDevice(fault error) (*model.Model, error) {
	now := time.Now()
	s.mu.Lock()
	s.lostErr, s.lostAt = fault, now
	s.mu.Unlock()
	lost := &UnavailableError{Reason: "device lost", Since: now, Err: fault}
	if s.cfg.Fallback == nil {
		s.mu.Lock()
		s.down = lost
		s.mu.Unlock()
		return nil, lost
	}
	fb, err := s.cfg.Fallback()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.down = &UnavailableError{Reason: "device lost and the fallback failed", Since: now, Err: errors.Join(fault, err)}
		return nil, s.down
	}
	s.m, s.fellBack = fb, true
	return fb, lost
}

func (s *Scheduler) halt(last error, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = &UnavailableError{Reason: fmt.Sprintf("failed-step guard: %d consecutive steps failed", n), Since: time.Now(), Err: last}
	return s.down
}
