package cpuid

func cpuid(eaxIn, ecxIn uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

var avx2FMA, f16c, intel = detect()

// AVX2FMA reports AVX2 and FMA support by the CPU and the OS (which must
// save the YMM registers: XCR0 bits 1 and 2).
func AVX2FMA() bool { return avx2FMA }

// F16C reports AVX2FMA plus the float16 conversions (VCVTPH2PS).
func F16C() bool { return f16c }

// Intel reports a GenuineIntel CPU.
func Intel() bool { return intel }

func detect() (avx2FMA, f16c, intel bool) {
	maxID, b, c, d := cpuid(0, 0)
	intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e // "Genu" "ineI" "ntel"
	if maxID < 7 {
		return false, false, intel
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx, f16 = 1 << 12, 1 << 27, 1 << 28, 1 << 29
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false, false, intel
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false, false, intel
	}
	_, ebx7, _, _ := cpuid(7, 0)
	avx2FMA = ebx7&(1<<5) != 0
	return avx2FMA, avx2FMA && ecx1&f16 != 0, intel
}
