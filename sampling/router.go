package sampling

import (
	"fmt"
	"log/slog"
	"sync/atomic"
)

// Route is where one sampling call goes.
type Route uint8

const (
	RouteGumbel       Route = iota + 1 // the Gumbel-max kernel
	RouteRejection                     // the rejection kernel
	RouteCategorical                   // the categorical fallback (no filter)
	RouteArgpartition                  // the argpartition fallback (filters)
)

func (r Route) String() string {
	switch r {
	case RouteGumbel:
		return "gumbel-kernel"
	case RouteRejection:
		return "rejection-kernel"
	case RouteCategorical:
		return "categorical-fallback"
	case RouteArgpartition:
		return "argpartition-fallback"
	}
	return fmt.Sprintf("Route(%d)", uint8(r))
}

// Reason is one kind of outcome the router counts. Each is logged once per
// Router, at INFO, the first time it happens: a fused path that silently
// never activates is the failure this guards against.
type Reason uint8

const (
	ReasonGumbelKernel           Reason = iota // routed to the Gumbel kernel
	ReasonRejectionKernel                      // routed to the rejection kernel
	ReasonGumbelKillSwitch                     // HIPGO_SAMPLING_GUMBEL is off
	ReasonGumbelNoPort                         // the backend has no Gumbel port
	ReasonGumbelMixedTemperature               // no filter, but rows differ in temperature (the kernel takes one)
	ReasonRejectionKillSwitch                  // HIPGO_SAMPLING_REJECTION is off
	ReasonRejectionNoPort                      // the backend has no rejection port
	ReasonRejectionNotRouted                   // the Policy does not route this filter combination
	ReasonCapOverflow                          // a verified launch had rows with ok == 0 and rounds == cap
	ReasonInvalidRows                          // a verified launch had rows with no finite or +inf logit
	ReasonLaunchFailed                         // a failed launch was dropped from the ring (its error left to its owner)
	ReasonVerifyEvicted                        // the ring was full and a still-pending launch was dropped unverified
	numReasons
)

var reasonNames = [numReasons]string{
	"gumbel-kernel", "rejection-kernel",
	"gumbel-kill-switch", "gumbel-no-port", "gumbel-mixed-temperature",
	"rejection-kill-switch", "rejection-no-port", "rejection-not-routed",
	"cap-overflow", "invalid-rows", "launch-failed", "verify-evicted",
}

var reasonDetail = [numReasons]string{
	"no filter active: the Gumbel-max kernel samples",
	"filters active: the rejection kernel samples",
	EnvGumbel + " is off: the categorical fallback samples",
	"no Gumbel-max kernel port for this backend: the categorical fallback samples",
	"rows differ in temperature and the Gumbel kernel takes one: the categorical fallback samples",
	EnvRejection + " is off: the argpartition fallback samples",
	"no rejection kernel port for this backend: the argpartition fallback samples",
	"this filter combination is not routed to the rejection kernel (Policy): the argpartition fallback samples",
	"rejection rows reached the round cap and returned their argmax",
	"rows without a finite or +inf logit got token 0",
	"a sampler launch failed; it was dropped from verification and its error left to its owner",
	"the verification ring was full; a pending launch was dropped unverified",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Filters is a set of active filters: the key of a Policy.
type Filters uint8

const (
	FilterTopK Filters = 1 << iota
	FilterTopP
	FilterMinP
	numFilterSets = 8
)

// FilterSets lists every non-empty combination, in Policy order.
var FilterSets = []Filters{
	FilterTopK, FilterTopP, FilterMinP,
	FilterTopK | FilterTopP, FilterTopK | FilterMinP, FilterTopP | FilterMinP,
	FilterTopK | FilterTopP | FilterMinP,
}

func (f Filters) String() string {
	if f == 0 {
		return "none"
	}
	var s string
	for _, n := range []struct {
		f    Filters
		name string
	}{{FilterTopK, "top-k"}, {FilterTopP, "top-p"}, {FilterMinP, "min-p"}} {
		if f&n.f != 0 {
			if s != "" {
				s += "+"
			}
			s += n.name
		}
	}
	return s
}

// ActiveFilters is the set of filters p applies to a row of V logits.
func (p Params) ActiveFilters(V int) Filters {
	var f Filters
	if p.TopKActive(V) {
		f |= FilterTopK
	}
	if p.TopPActive() {
		f |= FilterTopP
	}
	if p.MinPActive() {
		f |= FilterMinP
	}
	return f
}

// Policy says which filter combinations go to the rejection kernel:
// MaxVocab[f] is the largest vocabulary for which rows whose active filters
// are exactly f are routed (0: never; AnyVocab: always). Each backend's
// default comes from a measurement of the kernel against the fallback on the
// same machine (samplerbench -routes; docs/sampling.md has the table).
type Policy struct {
	MaxVocab [numFilterSets]int
}

// AnyVocab in a Policy routes a combination at every vocabulary size.
const AnyVocab = int(^uint(0) >> 1)

// KernelEverywhere routes every filter combination to the kernel.
func KernelEverywhere() Policy {
	var p Policy
	for _, f := range FilterSets {
		p.MaxVocab[f] = AnyVocab
	}
	return p
}

// FallbackEverywhere routes no filter combination to the kernel.
func FallbackEverywhere() Policy { return Policy{} }

// DefaultPolicy is the measured rule for backend b:
//   - CUDA: every combination to the kernel: on the H200 the kernel beat the
//     argpartition fallback (which must also copy the logits to the host)
//     end to end per decode step (samplerbench -routes; the table and its
//     date are in docs/sampling.md).
//   - ROCm: mlxcel's measurements on gfx1151, since nothing here runs on AMD
//     hardware: top-p routes (with top-k only up to V = 152064); top-k alone,
//     min-p alone and top-k + min-p were slower than its sort-free fallback.
//   - elsewhere (Metal, unmeasured): mlxcel's Metal rule, top-k + top-p only
//     up to V = 32768.
func DefaultPolicy(b Backend) Policy {
	switch b {
	case BackendCUDA:
		return KernelEverywhere()
	case BackendROCm:
		return mlxcelPolicy(152064)
	}
	return mlxcelPolicy(32768)
}

// mlxcelPolicy routes rows with top-p, top-k with top-p only up to
// jointVocabMax, and nothing without top-p.
func mlxcelPolicy(jointVocabMax int) Policy {
	var p Policy
	p.MaxVocab[FilterTopP] = AnyVocab
	p.MaxVocab[FilterTopP|FilterMinP] = AnyVocab
	p.MaxVocab[FilterTopK|FilterTopP] = jointVocabMax
	p.MaxVocab[FilterTopK|FilterTopP|FilterMinP] = jointVocabMax
	return p
}

func (p Policy) admits(q Params, V int) bool {
	return V <= p.MaxVocab[q.ActiveFilters(V)]
}

// Decision is the router's answer for one call.
type Decision struct {
	Route  Route
	Reason Reason
}

// Router chooses kernel or fallback for each call, counts each outcome and
// verifies earlier rejection launches without synchronizing (Drain; the
// Sampler queues each launch for it).
// One Router per device; it is safe for concurrent use.
type Router struct {
	backend Backend
	policy  Policy
	// Logger receives the log-once messages; nil means slog.Default().
	Logger *slog.Logger

	counts       [numReasons]atomic.Uint64
	logged       [numReasons]atomic.Bool
	overflowRows atomic.Uint64
	invalidRows  atomic.Uint64
	ring         verifyRing
}

// NewRouter returns a router for a device of the given backend.
func NewRouter(b Backend, p Policy) *Router { return &Router{backend: b, policy: p} }

// Backend returns the backend the router routes for.
func (r *Router) Backend() Backend { return r.backend }

// Decide picks the route for logits [B, V] with per-row (len B) or broadcast
// (len 1) params, counts the outcome and logs it the first time. The params
// are validated: an invalid one is an error, whatever the route.
//
//   - No filter active in any row: the Gumbel kernel when HIPGO_SAMPLING_GUMBEL
//     is on, the backend has a port and every row has the same temperature;
//     otherwise the categorical fallback. Rows that are greedy count as
//     unfiltered when the Gumbel kernel takes them all (the same
//     temperature, a port, the switch on): their filters cannot change the
//     argmax.
//   - Some filter active: the rejection kernel when HIPGO_SAMPLING_REJECTION is
//     on, the backend has a port and the Policy admits every filtered row;
//     otherwise the argpartition fallback.
func (r *Router) Decide(params []Params, B, V int) (Decision, error) {
	const entry = "sampling.Router.Decide"
	if B <= 0 || V <= 0 {
		return Decision{}, shapeErr(entry, "B = %d, V = %d: need both > 0", B, V)
	}
	if err := checkParams(entry, params, B); err != nil {
		return Decision{}, err
	}
	filtered, sampled, sameT, admitted := false, false, true, true
	for _, p := range params {
		if p.Filtered(V) {
			filtered = true
			sampled = sampled || !p.Greedy()
			if !r.policy.admits(p, V) {
				admitted = false
			}
		}
		if p.Temperature != params[0].Temperature {
			sameT = false
		}
	}
	// A greedy row's token is its argmax whatever its filters (they always
	// keep it): when every filtered row is greedy and the Gumbel kernel
	// takes the batch, it samples them as unfiltered rows.
	if filtered && !sampled && sameT && GumbelRouting() && GumbelMaxPorts().Supported(r.backend) {
		filtered = false
	}
	var d Decision
	switch {
	case !filtered && !GumbelRouting():
		d = Decision{RouteCategorical, ReasonGumbelKillSwitch}
	case !filtered && !GumbelMaxPorts().Supported(r.backend):
		d = Decision{RouteCategorical, ReasonGumbelNoPort}
	case !filtered && !sameT:
		d = Decision{RouteCategorical, ReasonGumbelMixedTemperature}
	case !filtered:
		d = Decision{RouteGumbel, ReasonGumbelKernel}
	case !RejectionRouting():
		d = Decision{RouteArgpartition, ReasonRejectionKillSwitch}
	case !RejectionPorts().Supported(r.backend):
		d = Decision{RouteArgpartition, ReasonRejectionNoPort}
	case !admitted:
		d = Decision{RouteArgpartition, ReasonRejectionNotRouted}
	default:
		d = Decision{RouteRejection, ReasonRejectionKernel}
	}
	r.record(d.Reason, 1)
	return d, nil
}

// record adds n to a reason's counter and logs the reason the first time.
func (r *Router) record(reason Reason, n uint64) {
	r.counts[reason].Add(n)
	if r.logged[reason].CompareAndSwap(false, true) {
		l := r.Logger
		if l == nil {
			l = slog.Default()
		}
		l.Info("sampling: "+reasonDetail[reason], "reason", reason.String(), "backend", string(r.backend))
	}
}

// Count returns how many times reason happened (calls for routing reasons,
// launches for cap-overflow and invalid-rows).
func (r *Router) Count(reason Reason) uint64 {
	if reason >= numReasons {
		return 0
	}
	return r.counts[reason].Load()
}

// OverflowRows is the number of rows, over all verified launches, that
// reached the round cap (ok == 0 and rounds == cap).
func (r *Router) OverflowRows() uint64 { return r.overflowRows.Load() }

// InvalidRows is the number of verified rows with no finite or +inf logit.
func (r *Router) InvalidRows() uint64 { return r.invalidRows.Load() }
