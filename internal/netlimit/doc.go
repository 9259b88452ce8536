// Package netlimit caps how many connections a listener holds open at
// once, so that a flood of sockets (idle or trickling a body) cannot take
// all of a server's file descriptors and memory.
package netlimit
