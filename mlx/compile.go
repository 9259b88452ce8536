package mlx

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// Function is Go code MLX can call and trace: it builds its outputs from
// in with the ops of this package. The inputs are lent for the call (the
// binding frees their handles when it returns); the outputs are handed to
// MLX, which keeps what it needs, and the binding frees their handles too.
// It runs on the thread of the call that invoked it (Apply), and it must
// not evaluate: MLX refuses evaluation while it traces.
type Function func(in []*Array) ([]*Array, error)

// Closure is an mlx_closure: a Function MLX can call, or a compiled one.
type Closure struct{ handle }

// Free releases the closure. The Function it wraps is released once MLX no
// longer holds it (a compiled closure holds the one it compiles).
func (c *Closure) Free() error {
	return c.free("closure", "mlx_closure_free", func(l *library) func(uintptr) int32 { return l.closureFree })
}

// functions maps the payload MLX passes back to the Go Function. MLX only
// carries the payload; the id is never dereferenced.
var functions = struct {
	sync.Mutex
	next uintptr
	byID map[uintptr]Function
}{byID: map[uintptr]Function{}}

// functionErrs holds the error a Function returned, by OS thread: the
// Function runs on the thread of the Apply that called it, which takes it.
var functionErrs = struct {
	sync.Mutex
	byThread map[uint64]error
}{byThread: map[uint64]error{}}

// One pair of trampolines serves every closure (purego callbacks are never
// freed): fun finds the Function by payload, dtor forgets it.
var closureTrampolines struct {
	once      sync.Once
	fun, dtor uintptr
	err       error
}

func trampolines() (fun, dtor uintptr, err error) {
	t := &closureTrampolines
	t.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				t.err = fmt.Errorf("mlx: cannot create the closure trampolines: %v", r)
			}
		}()
		t.fun = purego.NewCallback(runFunction)
		t.dtor = purego.NewCallback(forgetFunction)
	})
	return t.fun, t.dtor, t.err
}

// NewClosure wraps fn as an mlx_closure.
func NewClosure(fn Function) (*Closure, error) {
	if fn == nil {
		return nil, errors.New("mlx: NewClosure: nil Function")
	}
	l, err := api()
	if err != nil {
		return nil, err
	}
	fun, dtor, err := trampolines()
	if err != nil {
		return nil, err
	}
	functions.Lock()
	functions.next++
	id := functions.next
	functions.byID[id] = fn
	functions.Unlock()
	h, err := callHandle("mlx_closure_new_func_payload", func() uintptr {
		return l.closureNewFuncPayload(fun, id, dtor)
	})
	if err != nil {
		// mlx-c runs dtor when it fails after taking the payload; forget it
		// either way.
		forgetFunction(id)
		return nil, err
	}
	return newClosure(h), nil
}

func newClosure(h uintptr) *Closure {
	c := &Closure{}
	c.handle = newHandle(c, h)
	return c
}

// Compile is mlx_compile of c: the first Apply with given input shapes and
// dtypes calls c's Function to trace it, fuses its elementwise ops, and
// returns outputs that are still lazy. The fused kernels are built when they
// are first evaluated (on the CPU backend by running the system's C++
// compiler, g++, in $TMPDIR/mlx): a failure there is an error of the Eval
// that needs them, not of Compile or Apply. shapeless lets one trace serve
// every input shape.
func Compile(c *Closure, shapeless bool) (*Closure, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("mlx: Compile: nil closure")
	}
	h, err := c.live("closure")
	if err != nil {
		return nil, fmt.Errorf("mlx: Compile: %w", err)
	}
	res := l.closureNew()
	if err := call("mlx_compile", func() int32 { return l.compile(&res, h, shapeless) }); err != nil {
		return nil, errors.Join(err, call("mlx_closure_free", func() int32 { return l.closureFree(res) }))
	}
	return newClosure(res), nil
}

// Apply calls the closure on in and returns its outputs (lazy: nothing is
// evaluated). An error the Function returned is wrapped in the *Error.
func (c *Closure) Apply(in ...*Array) ([]*Array, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := c.live("closure")
	if err != nil {
		return nil, fmt.Errorf("mlx: mlx_closure_apply: %w", err)
	}
	hs, err := liveArrays("mlx_closure_apply", in)
	if err != nil {
		return nil, err
	}
	var outs []*Array
	var fnErr error
	err = callSerial("mlx_closure_apply", func() int32 {
		tid := threadID()
		vec, res := l.vectorNew(), l.vectorNew()
		rc := appendAll(l, vec, hs)
		if rc == 0 {
			rc = l.closureApply(&res, h, vec)
		}
		functionErrs.Lock()
		fnErr = functionErrs.byThread[tid]
		delete(functionErrs.byThread, tid)
		functionErrs.Unlock()
		for i := uintptr(0); rc == 0 && i < l.vectorSize(res); i++ {
			a := l.arrayNew()
			if rc = l.vectorGet(&a, res, i); rc != 0 {
				// The first failure is the one reported (its message is the slot's).
				if frc := l.arrayFree(a); rc == 0 {
					rc = frc
				}
				break
			}
			outs = append(outs, newArray(a))
		}
		for _, v := range []uintptr{vec, res} {
			if frc := l.vectorFree(v); rc == 0 {
				rc = frc
			}
		}
		return rc
	})
	if err != nil {
		for _, a := range outs {
			err = errors.Join(err, a.Free())
		}
		if fnErr != nil {
			err = fmt.Errorf("%w (the Function returned: %w)", err, fnErr)
		}
		return nil, err
	}
	return outs, nil
}

// runFunction is the C side of every closure: int fun(mlx_vector_array*
// res, const mlx_vector_array in, void* payload). It runs on the thread of
// the mlx_closure_apply that calls it.
func runFunction(res *uintptr, in, id uintptr) int32 {
	l := current.Load()
	functions.Lock()
	fn := functions.byID[id]
	functions.Unlock()
	fail := func(err error) int32 {
		functionErrs.Lock()
		functionErrs.byThread[threadID()] = err
		functionErrs.Unlock()
		return 1
	}
	if l == nil || fn == nil {
		return fail(fmt.Errorf("mlx: closure %d has no Function", id))
	}
	var args []*Array
	var err error
	for i := range l.vectorSize(in) {
		a := l.arrayNew()
		if l.vectorGet(&a, in, i) != 0 {
			err = fmt.Errorf("mlx: closure %d: reading input %d failed", id, i)
			if l.arrayFree(a) != 0 {
				err = fmt.Errorf("%w, and so did freeing its handle", err)
			}
			break
		}
		args = append(args, newArray(a))
	}
	var outs []*Array
	if err == nil {
		outs, err = fn(args)
	}
	vec := l.vectorNew()
	if err == nil {
		for i, a := range outs {
			h, lerr := a.live("array")
			if lerr == nil && l.vectorAppend(vec, h) != 0 {
				lerr = errors.New("appending to the result failed")
			}
			if lerr != nil {
				err = fmt.Errorf("mlx: closure %d: output %d: %w", id, i, lerr)
				break
			}
		}
	}
	// The handles go; MLX holds the arrays it was given in vec. An output
	// may be an input or appear twice: free each handle once.
	freed := map[*Array]bool{}
	for _, a := range append(args, outs...) {
		if a != nil && !freed[a] {
			freed[a] = true
			if ferr := a.Free(); ferr != nil && err == nil {
				err = ferr
			}
		}
	}
	if err != nil {
		if l.vectorFree(vec) != 0 {
			err = fmt.Errorf("%w (and freeing the result vector failed)", err)
		}
		return fail(err)
	}
	*res = vec // mlx-c reads and frees it
	return 0
}

// forgetFunction is the closures' payload destructor (void dtor(void*)):
// MLX holds the Function no longer.
func forgetFunction(id uintptr) {
	functions.Lock()
	delete(functions.byID, id)
	functions.Unlock()
}

// heldFunctions is how many Functions MLX still holds.
func heldFunctions() int {
	functions.Lock()
	defer functions.Unlock()
	return len(functions.byID)
}
