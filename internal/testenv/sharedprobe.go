package testenv

// SharedProbePTX holds shared_probe(u32 *out, u32 n) for the GPU tests of
// dynamic shared memory (packages cuda and runtime), written by hand for
// PTX ISA 7.8 / sm_80: one thread writes n to the last word of its n bytes
// of dynamic shared memory and ^n to the last word of its 8 KiB static
// array, reads both back (volatile, so neither is optimised away), and
// stores them at out[0] and out[1]. It touches the end of the dynamic
// shared memory, so a launch that ran without really having n bytes would
// fault.
const SharedProbePTX = `.version 7.8
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 probe_dyn[];
.shared .align 16 .b8 probe_static[8192];

.visible .entry shared_probe(
	.param .u64 probe_out,
	.param .u32 probe_n
)
{
	.reg .b32	%r<8>;
	.reg .b64	%rd<3>;

	ld.param.u64	%rd1, [probe_out];
	ld.param.u32	%r1, [probe_n];
	mov.u32		%r2, probe_dyn;
	add.u32		%r2, %r2, %r1;
	sub.u32		%r2, %r2, 4;
	st.volatile.shared.u32	[%r2], %r1;
	mov.u32		%r3, probe_static;
	add.u32		%r3, %r3, 8188;
	not.b32		%r4, %r1;
	st.volatile.shared.u32	[%r3], %r4;
	bar.sync	0;
	ld.volatile.shared.u32	%r5, [%r2];
	ld.volatile.shared.u32	%r6, [%r3];
	cvta.to.global.u64	%rd2, %rd1;
	st.global.u32	[%rd2], %r5;
	st.global.u32	[%rd2+4], %r6;
	ret;
}
`
