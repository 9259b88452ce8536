package chat

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t as Python's datetime.strftime does on glibc for the
// directives chat templates use; any other directive is an error rather
// than a guess.
func strftime(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(format) {
			return "", fmt.Errorf("strftime_now: format %q ends with %%", format)
		}
		pad := true
		if format[i] == '-' { // glibc: no padding
			pad = false
			i++
			if i == len(format) {
				return "", fmt.Errorf("strftime_now: format %q ends with %%-", format)
			}
		}
		num := func(v, width int) {
			if pad {
				fmt.Fprintf(&b, "%0*d", width, v)
			} else {
				fmt.Fprintf(&b, "%d", v)
			}
		}
		switch d := format[i]; d {
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			num(t.YearDay(), 3)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num((t.Hour()+11)%12+1, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime_now: directive %%%c in %q is not supported", d, format)
		}
	}
	return b.String(), nil
}
