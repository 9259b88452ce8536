// Package metal is a statuscheck fixture that builds only on darwin: the
// discard below must still be reported.
package metal

func release() error { return nil }

func teardown() {
	release() // want: discarded
}
