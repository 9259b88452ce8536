package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
)

// TestTablesAreUpToDate regenerates the NFC tables from the installed
// Unicode Character Database and requires the committed file to be
// identical, so the tables cannot drift from their generator.
func TestTablesAreUpToDate(t *testing.T) {
	const ucd = "/usr/share/unicode"
	_, err := os.Stat(filepath.Join(ucd, "UnicodeData.txt"))
	testenv.NeedHost(t, err) // Debian package unicode-data
	out := filepath.Join(t.TempDir(), "nfc_tables.go")
	require.NoError(t, run(ucd, out))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile("../../../nfc_tables.go")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "run go generate in model/tokenizer")
}
