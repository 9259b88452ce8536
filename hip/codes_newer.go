package hip

// Codes that ROCm releases after 5.2 add to hipError_t. zcodes.go comes from
// the 5.2 header, so these are written by hand, each with the release that
// adds it and where that was checked:
//
//   - 911, 912: ROCm/HIP commit "SWDEV-475987 - Add mapping for missing CUDA
//     error codes" (2024-07-26) on amd-staging with VERSION 6.3.0; absent
//     from the rocm-6.2.x branch and every rocm-6.2.* tag, so ROCm 6.3.
//   - 914, 915, 916 and 1054 as hipErrorInvalidClusterSize: in the
//     ROCm/rocm-systems develop header of 2026 and in cubecl-hip-sys 7.14
//     (docs.rs); not in ROCm/HIP through 6.3. The first release carrying
//     them was not pinned down, so they are marked "ROCm 7.x".
//
// ROCm 5.2 already has 1052 hipErrorRuntimeMemory, 1053 hipErrorRuntimeOther
// and (implicitly, as the enum's last member) 1054 hipErrorTbd, so those are
// generated. Newer headers give 1054 to hipErrorInvalidClusterSize and move
// the hipErrorTbd marker to 1055: Name keeps the 5.2 name for 1054 (what
// every library up to at least 6.3 returns), and ErrInvalidClusterSize is an
// alias constant for the newer meaning. The 1055 marker is never returned
// and is left out.
const (
	// ErrInvalidChannelDescriptor is hipErrorInvalidChannelDescriptor (911), ROCm 6.3.
	ErrInvalidChannelDescriptor Code = 911
	// ErrInvalidTexture is hipErrorInvalidTexture (912), ROCm 6.3.
	ErrInvalidTexture Code = 912
	// ErrInvalidResourceType is hipErrorInvalidResourceType (914), ROCm 7.x.
	ErrInvalidResourceType Code = 914
	// ErrInvalidResourceConfiguration is hipErrorInvalidResourceConfiguration (915), ROCm 7.x.
	ErrInvalidResourceConfiguration Code = 915
	// ErrStreamDetached is hipErrorStreamDetached (916), ROCm 7.x.
	ErrStreamDetached Code = 916
	// ErrInvalidClusterSize is hipErrorInvalidClusterSize, which newer ROCm
	// (7.x) puts at 1054, the value 5.2 calls hipErrorTbd.
	ErrInvalidClusterSize Code = 1054
)

// newerCode is a code a later ROCm adds. SinceMajor/SinceMinor is the first
// release known to carry it; Exact says whether that release was verified
// (otherwise only "some 7.x" is known).
type newerCode struct {
	Code       Code
	Name       string
	Since      string
	SinceMajor int
	SinceMinor int
	Exact      bool
}

var newerCodes = []newerCode{
	{ErrInvalidChannelDescriptor, "hipErrorInvalidChannelDescriptor", "ROCm 6.3", 6, 3, true},
	{ErrInvalidTexture, "hipErrorInvalidTexture", "ROCm 6.3", 6, 3, true},
	{ErrInvalidResourceType, "hipErrorInvalidResourceType", "ROCm 7.x", 7, 0, false},
	{ErrInvalidResourceConfiguration, "hipErrorInvalidResourceConfiguration", "ROCm 7.x", 7, 0, false},
	{ErrStreamDetached, "hipErrorStreamDetached", "ROCm 7.x", 7, 0, false},
}
