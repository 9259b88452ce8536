package netlimit

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestListenerCapsOpenConnections: with a cap of 2, a third connection is
// not accepted until one of the first two closes; Close ends a waiting
// Accept.
func TestListenerCapsOpenConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := Listener(inner, 2)
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while two were open")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, first.Close())
	select {
	case c := <-accepted:
		require.NoError(t, c.Close())
	case <-time.After(5 * time.Second):
		t.Fatal("the third connection was not accepted after one closed")
	}
	require.NoError(t, second.Close())
	require.NoError(t, l.Close())
	for range accepted {
	}
	for _, c := range clients {
		c.Close()
	}
}

// TestCloseEndsAWaitingAccept: an Accept waiting at the cap returns once
// the listener closes (a server's Shutdown must not hang on it).
func TestCloseEndsAWaitingAccept(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := Listener(inner, 1)
	c, err := net.Dial("tcp", inner.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	held, err := l.Accept()
	require.NoError(t, err)
	defer held.Close()
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, l.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}
