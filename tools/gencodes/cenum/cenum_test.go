package cenum

import (
	"errors"
	"os"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestParseForms proves each C form the vendor headers use is read with the
// value a C compiler gives it (values worked out by hand from C's rules).
func TestParseForms(t *testing.T) {
	src := `
#define NOT_AN_ENUM 7 \
   continued
// enum fake { X = 1 };
/* enum fake2 { Y = 2 }; */
typedef enum __ATTR tagged_t {
    A = 0,
    B,            // implicit: 1
    C = 0x10,
    D = C,        // another enumerator
    E,            // 0x11
    F = 1 << 31,
    G = 1U << 3,
    H = (2 + 3) * 0, 
} tagged_t;
enum {
    ANON1 = 40,
    ANON2,
};
typedef enum { P = -1, Q, R = ~0 } plain_t;
enum use_only x;
`
	// H uses '*', which the reader does not support: expect an error.
	_, err := Parse([]byte(src))
	require.ErrorIs(t, err, ErrSyntax)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Msg, "H")

	src = replaceLine(src, "H = (2 + 3) * 0,", "H = (2 + 3) - 5 | 8,")
	enums, err := Parse([]byte(src))
	require.NoError(t, err)
	require.Len(t, enums, 3)

	require.Equal(t, "tagged_t", enums[0].Tag)
	require.Equal(t, "tagged_t", enums[0].Typedef)
	got := map[string]int64{}
	for _, c := range enums[0].Constants {
		got[c.Name] = c.Value
	}
	require.Equal(t, map[string]int64{"A": 0, "B": 1, "C": 16, "D": 16, "E": 17, "F": 1 << 31, "G": 8, "H": 8}, got)
	require.False(t, enums[0].Constants[1].Explicit)
	require.True(t, enums[0].Constants[2].Explicit)

	require.Empty(t, enums[1].Tag)
	require.Empty(t, enums[1].Typedef)
	require.Equal(t, []Constant{{Name: "ANON1", Value: 40, Explicit: true, Line: 17}, {Name: "ANON2", Value: 41, Line: 18}}, enums[1].Constants)

	e, ok := Find(enums, "plain_t")
	require.True(t, ok)
	require.Equal(t, int64(-1), e.Constants[0].Value)
	require.Equal(t, int64(0), e.Constants[1].Value)
	require.Equal(t, int64(-1), e.Constants[2].Value)

	vals, err := Values(enums)
	require.NoError(t, err)
	require.Equal(t, int64(41), vals["ANON2"])
}

func replaceLine(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	panic("line not found: " + old)
}

// TestParseErrors proves malformed input is an error naming the problem.
func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"enum { A = }",
		"enum { A = B }",
		"enum { A = 1 << 99 }",
		"enum { A = 1.5 }",
		"enum { A",
		"enum { 3 }",
		"/* open",
		`enum { A = "x" }`,
		"enum { A = (1 }",
	} {
		_, err := Parse([]byte(src))
		require.ErrorIs(t, err, ErrSyntax, "source %q", src)
	}
	_, err := Values([]Enum{{Constants: []Constant{{Name: "A", Value: 1}}}, {Constants: []Constant{{Name: "A", Value: 2}}}})
	require.ErrorIs(t, err, ErrSyntax)
}

// TestInstalledHeaders proves the reader gets through the real ROCm 5.2
// headers and finds the enums the generator needs, with values printed in
// the header text (hipErrorInvalidValue = 1, HSA_STATUS_ERROR_EXCEPTION =
// 0x1016) and one implicit value (hipErrorTbd follows 1053).
func TestInstalledHeaders(t *testing.T) {
	hipSrc, err := os.ReadFile("/usr/include/hip/hip_runtime_api.h")
	testenv.NeedHost(t, err)
	hsaSrc, err := os.ReadFile("/usr/include/hsa/hsa.h")
	testenv.NeedHost(t, err)

	enums, err := Parse(hipSrc)
	require.NoError(t, err)
	e, ok := Find(enums, "hipError_t")
	require.True(t, ok)
	vals := map[string]int64{}
	for _, c := range e.Constants {
		vals[c.Name] = c.Value
	}
	require.Equal(t, int64(1), vals["hipErrorInvalidValue"])
	require.Equal(t, int64(1054), vals["hipErrorTbd"])

	enums, err = Parse(hsaSrc)
	require.NoError(t, err)
	e, ok = Find(enums, "hsa_status_t")
	require.True(t, ok)
	vals = map[string]int64{}
	for _, c := range e.Constants {
		vals[c.Name] = c.Value
	}
	require.Equal(t, int64(0x1016), vals["HSA_STATUS_ERROR_EXCEPTION"])
}

// FuzzParse proves no input makes the reader panic or loop, and that every
// error it returns is a *SyntaxError.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"typedef enum t { A = 1, B, C = A | 4 } t;",
		"enum { X = 1 << 31 };",
		"#define Y 1\nenum z { Q = -(3) };",
		"enum { A = ((((1)))) }",
		"/* */ enum { A = ~0 - 1 >> 2 }",
		"enum",
		"enum {",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}
