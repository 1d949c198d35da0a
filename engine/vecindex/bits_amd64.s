//go:build amd64 && !purego

#include "textflag.h"

// func bitScanPOPCNT(codes *uint64, rows, words int, planes *uint64, out *uint64)
// For each of rows bit codes of words words (one after another from codes),
// writes popcount(code)<<32 | Σj 2^j·popcount(code & plane j) to out. The
// four planes are interleaved per word: planes[4i+j]. words >= 1.
TEXT ·bitScanPOPCNT(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), SI
	MOVQ rows+8(FP), CX
	MOVQ words+16(FP), DX
	MOVQ planes+24(FP), DI
	MOVQ out+32(FP), R8
	SHLQ $3, DX
	TESTQ CX, CX
	JZ   done

row:
	MOVQ SI, R12
	ADDQ DX, R12
	MOVQ DI, R9
	XORQ R10, R10
	XORQ R11, R11

word:
	MOVQ    (SI), AX
	POPCNTQ AX, BX
	ADDQ    BX, R10
	MOVQ    AX, BX
	ANDQ    (R9), BX
	POPCNTQ BX, BX
	ADDQ    BX, R11
	MOVQ    AX, R13
	ANDQ    8(R9), R13
	POPCNTQ R13, R13
	SHLQ    $1, R13
	ADDQ    R13, R11
	MOVQ    AX, BX
	ANDQ    16(R9), BX
	POPCNTQ BX, BX
	SHLQ    $2, BX
	ADDQ    BX, R11
	MOVQ    AX, R13
	ANDQ    24(R9), R13
	POPCNTQ R13, R13
	SHLQ    $3, R13
	ADDQ    R13, R11
	ADDQ    $8, SI
	ADDQ    $32, R9
	CMPQ    SI, R12
	JB      word

	SHLQ $32, R10
	ORQ  R11, R10
	MOVQ R10, (R8)
	ADDQ $8, R8
	DECQ CX
	JNZ  row

done:
	RET
