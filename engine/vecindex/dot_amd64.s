//go:build amd64 && !purego

#include "textflag.h"

// func dotFMA(a, b []float32) float32
// Requires len(b) >= len(a). Four independent 8-lane accumulators hide the
// FMA latency; the remainder goes 8 lanes, then 1, at a time.
TEXT ·dotFMA(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JLT  loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         loop32

loop8:
	CMPQ CX, $8
	JLT  reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         loop8

reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

tail:
	TESTQ CX, CX
	JEQ   done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         tail

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func sumAVX(a []float32) float32
TEXT ·sumAVX(SB), NOSPLIT, $0-28
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

sloop32:
	CMPQ CX, $32
	JLT  sloop8
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	JMP    sloop32

sloop8:
	CMPQ CX, $8
	JLT  sreduce
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    sloop8

sreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

stail:
	TESTQ CX, CX
	JEQ   sdone
	VADDSS (SI), X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JMP    stail

sdone:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot8AVX2(c []int8, q []int16) int32
// Requires len(q) >= len(c). Sixteen codes at a time are sign-extended to
// int16 and multiply-added with the query into eight int32 lanes; two
// accumulators, then 16, then 1 element at a time.
TEXT ·dot8AVX2(SB), NOSPLIT, $0-52
	MOVQ c_base+0(FP), SI
	MOVQ c_len+8(FP), CX
	MOVQ q_base+24(FP), DI
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

iloop32:
	CMPQ      CX, $32
	JLT       iloop16
	VPMOVSXBW (SI), Y2
	VPMOVSXBW 16(SI), Y3
	VPMADDWD  (DI), Y2, Y2
	VPMADDWD  32(DI), Y3, Y3
	VPADDD    Y2, Y0, Y0
	VPADDD    Y3, Y1, Y1
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $32, CX
	JMP       iloop32

iloop16:
	CMPQ      CX, $16
	JLT       ireduce
	VPMOVSXBW (SI), Y2
	VPMADDWD  (DI), Y2, Y2
	VPADDD    Y2, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JMP       iloop16

ireduce:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX

itail:
	TESTQ   CX, CX
	JEQ     idone
	MOVBQSX (SI), BX
	MOVWQSX (DI), DX
	IMULQ   DX, BX
	ADDL    BX, AX
	INCQ    SI
	ADDQ    $2, DI
	DECQ    CX
	JMP     itail

idone:
	VZEROUPPER
	MOVL AX, ret+48(FP)
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() uint64
TEXT ·xgetbv0(SB), NOSPLIT, $0-8
	MOVL   $0, CX
	XGETBV
	SHLQ   $32, DX
	ORQ    DX, AX
	MOVQ   AX, ret+0(FP)
	RET
