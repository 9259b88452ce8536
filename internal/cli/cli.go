package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is a flag the flag package rejected and has already reported
// with the usage.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }

func (e UsageError) Unwrap() error { return e.Err }

// Parse parses args with fl: a rejected flag comes back as a UsageError,
// -h as flag.ErrHelp.
func Parse(fl *flag.FlagSet, args []string) error {
	err := fl.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return UsageError{err}
}

// ExitCode is command's exit status for its run's error, which it writes to
// stderr as "command: error" unless the flag package already has: 0 for
// nil and for -h, 2 for a UsageError, 130 for a cancelled context, 1 for
// anything else.
func ExitCode(command string, err error, stderr io.Writer) int {
	var ue UsageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}
