package dynlib

import (
	"os"
	"strconv"
	"strings"
)

// ResolvedPath finds the file that maps symbol's address, by reading
// /proc/self/maps, so a soname such as libamdhip64.so.5 is reported as the
// file that was actually loaded. It falls back to the name dlopen was given.
func (lib *Library) ResolvedPath(symbol string) string {
	addr, err := lib.Sym(symbol)
	if err != nil {
		return lib.Path
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return lib.Path
	}
	for line := range strings.Lines(string(maps)) {
		// start-end perms offset dev inode path
		fields := strings.Fields(line)
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end {
			return strings.Join(fields[5:], " ")
		}
	}
	return lib.Path
}
