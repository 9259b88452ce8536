package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// progressBar draws a one-line bar on stderr while the weights load. Small
// models load in a blink, so it only appears for loads above minBarBytes; it
// redraws only when the shown percentage changes, and only on a terminal
// (a log file would get a hundred carriage-return lines).
type progressBar struct {
	w       io.Writer
	enabled bool
	shown   bool
	percent int
}

const (
	minBarBytes = 64 << 20
	barWidth    = 30
)

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, percent: -1, enabled: isTerminal(w)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) update(done, total int64) {
	if !b.enabled || total < minBarBytes || total <= 0 {
		return
	}
	p := int(done * 100 / total)
	if p == b.percent {
		return
	}
	b.percent, b.shown = p, true
	filled := p * barWidth / 100
	fmt.Fprintf(b.w, "\rloading [%s%s] %3d%% %d/%d MB", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), p, done>>20, total>>20)
}

// done ends the bar's line, if one was drawn.
func (b *progressBar) done() {
	if b.shown {
		fmt.Fprintln(b.w)
		b.shown = false
	}
}
