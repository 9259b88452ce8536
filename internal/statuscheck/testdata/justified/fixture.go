// Package justified is a statuscheck fixture: discards with and without
// the comment that says why.
package justified

import "errors"

func f() error { return errors.New("f") }

func g() {
	// above: the comment ends on the line before
	_ = f()
	_ = f() // trailing: on the same line
	_ = f()

	f()
}
