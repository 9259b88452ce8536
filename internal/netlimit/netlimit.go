package netlimit

import (
	"net"
	"sync"
)

// Listener accepts at most n connections open at a time: past that,
// Accept waits until one closes. Close ends a waiting Accept too.
func Listener(l net.Listener, n int) net.Listener {
	return &listener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type listener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &conn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
