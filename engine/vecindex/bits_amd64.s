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

// COUNT_BLOCK adds the eight words of the code block in Z8 to the counts:
// their bits to Z0, their bits in plane j (at R9 + j·stride; R11 is one
// stride, R12 three) to Z1+j.
#define COUNT_BLOCK \
	VPOPCNTQ Z8, Z9 \
	VPADDQ   Z9, Z0, Z0 \
	VPANDQ   (R9), Z8, Z9 \
	VPOPCNTQ Z9, Z9 \
	VPADDQ   Z9, Z1, Z1 \
	VPANDQ   (R9)(R11*1), Z8, Z9 \
	VPOPCNTQ Z9, Z9 \
	VPADDQ   Z9, Z2, Z2 \
	VPANDQ   (R9)(R11*2), Z8, Z9 \
	VPOPCNTQ Z9, Z9 \
	VPADDQ   Z9, Z3, Z3 \
	VPANDQ   (R9)(R12*1), Z8, Z9 \
	VPOPCNTQ Z9, Z9 \
	VPADDQ   Z9, Z4, Z4

// func bitScanVPOPCNTQ(codes *uint64, rows, blocks int, mask uint64, tailBytes int, planes *uint64, strideBytes int, out *uint64)
// The same sums as bitScanPOPCNT, eight words at a time. Per row: Z0 counts
// the code's bits and Z1–Z4 its bits in each plane, lane by lane; they are
// combined as Z0<<32 + Z1 + 2·Z2 + 4·Z3 + 8·Z4 (the weighted sum of a lane
// stays far below 2^32) and the eight lanes added up. A partial last block
// is loaded under mask K1, zero elsewhere; planes are zero past their words.
TEXT ·bitScanVPOPCNTQ(SB), NOSPLIT, $0-64
	MOVQ codes+0(FP), SI
	MOVQ rows+8(FP), CX
	MOVQ blocks+16(FP), DX
	MOVQ mask+24(FP), AX
	KMOVW AX, K1
	MOVQ tailBytes+32(FP), BX
	MOVQ planes+40(FP), DI
	MOVQ strideBytes+48(FP), R11
	MOVQ out+56(FP), R8
	LEAQ (R11)(R11*2), R12 // three strides: plane 3

vrow:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	MOVQ   DI, R9
	MOVQ   DX, R10
	TESTQ  R10, R10
	JZ     vtail

vblock:
	VMOVDQU64 (SI), Z8
	COUNT_BLOCK
	ADDQ      $64, SI
	ADDQ      $64, R9
	DECQ      R10
	JNZ       vblock

vtail:
	TESTQ       BX, BX
	JZ          vsum
	VMOVDQU64.Z (SI), K1, Z8
	COUNT_BLOCK
	ADDQ        BX, SI

vsum:
	VPSLLQ         $1, Z2, Z2
	VPSLLQ         $2, Z3, Z3
	VPSLLQ         $3, Z4, Z4
	VPSLLQ         $32, Z0, Z0
	VPADDQ         Z2, Z1, Z1
	VPADDQ         Z4, Z3, Z3
	VPADDQ         Z3, Z1, Z1
	VPADDQ         Z1, Z0, Z0
	VEXTRACTI64X4  $1, Z0, Y8
	VPADDQ         Y8, Y0, Y0
	VEXTRACTI128   $1, Y0, X8
	VPADDQ         X8, X0, X0
	VPSHUFD        $0x4e, X0, X8
	VPADDQ         X8, X0, X0
	VMOVQ          X0, (R8)
	ADDQ           $8, R8
	DECQ           CX
	JNZ            vrow

	VZEROUPPER
	RET
