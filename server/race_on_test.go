//go:build race

package server

// raceEnabled: the race detector slows the demo model's forward pass about
// tenfold, so the load test keeps its 64 clients but sends fewer requests
// each under -race (the full 64 x 20 runs in the CGO_ENABLED=0 pass).
const raceEnabled = true
