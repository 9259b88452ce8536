package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime/driver"
)

// hangingDriver never answers DeviceCount, like a broken driver install.
type hangingDriver struct{ release chan struct{} }

func (h hangingDriver) Kind() driver.Kind               { return "hang" }
func (h hangingDriver) DeviceCount() (int, error)       { <-h.release; return 0, nil }
func (h hangingDriver) Open(int) (driver.Device, error) { return nil, errors.New("unreachable") }

func TestSurveyDescribesEachBackendAndWhyItIsUnusable(t *testing.T) {
	two := simgpu.New(simgpu.Config{Devices: 2, Name: "Sim A"})
	none := simgpu.New(simgpu.Config{Devices: 0})
	broken := simgpu.New(simgpu.Config{Devices: 1})
	broken.InitErr = errors.New("init: simErrorInvalidValue (1)")
	reps := survey(context.Background(), []driver.Driver{two, none, broken})
	require.Len(t, reps, 3)
	require.NoError(t, reps[0].Err)
	require.Len(t, reps[0].Devices, 2)
	require.Equal(t, "Sim A", reps[0].Devices[1].Name)
	require.Equal(t, 1, reps[0].Devices[1].Ordinal)
	require.ErrorIs(t, reps[1].Err, ErrNoDevice)
	require.EqualError(t, reps[2].Err, "init: simErrorInvalidValue (1)")
}

func TestSurveyGivesUpOnAHangingBackend(t *testing.T) {
	h := hangingDriver{release: make(chan struct{})}
	defer close(h.release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	reps := survey(ctx, []driver.Driver{h, simgpu.New(simgpu.Config{Devices: 1})})
	require.Len(t, reps, 1, "the survey stops at the hanging backend")
	require.ErrorIs(t, reps[0].Err, context.DeadlineExceeded)
}
