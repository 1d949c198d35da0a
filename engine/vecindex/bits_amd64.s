//go:build amd64 && !purego

#include "textflag.h"

// func bitScanPOPCNT(codes *uint64, rows, words int, planes *uint64, out *uint64)
// For each of rows bit codes of words words (one after another from codes),
// writes Σj<3 2^j·popcount(code & plane j) − 8·popcount(code & plane 3) to
// out. The four planes are interleaved per word: planes[4i+j]. words >= 1.
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
	XORQ R11, R11

word:
	MOVQ    (SI), AX
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
	SUBQ    R13, R11
	ADDQ    $8, SI
	ADDQ    $32, R9
	CMPQ    SI, R12
	JB      word

	MOVQ R11, (R8)
	ADDQ $8, R8
	DECQ CX
	JNZ  row

done:
	RET

// COUNT_BLOCK adds the eight words of the code block in Z8 to the counts:
// their bits in plane j (at R9 + j·stride; R11 is one stride, R12 three)
// to Z1+j.
#define COUNT_BLOCK \
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

// COMBINE_LANES weighs the plane counts Z1–Z4 lane by lane into Z0:
// Z1 + 2·Z2 + 4·Z3 − 8·Z4.
#define COMBINE_LANES \
	VPSLLQ $1, Z2, Z2 \
	VPSLLQ $2, Z3, Z3 \
	VPSLLQ $3, Z4, Z4 \
	VPADDQ Z2, Z1, Z1 \
	VPSUBQ Z4, Z3, Z3 \
	VPADDQ Z3, Z1, Z0

// func bitScanVPOPCNTQ(codes *uint64, rows, blocks int, mask uint64, tailBytes int, planes *uint64, strideBytes int, out *uint64)
// The same sums as bitScanPOPCNT, eight words at a time. Per row: Z1–Z4
// count the code's bits in each plane, lane by lane; they are combined as
// Z1 + 2·Z2 + 4·Z3 − 8·Z4 and the eight lanes added up. A partial last
// block is loaded under mask K1, zero elsewhere; planes are zero past their
// words.
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
	COMBINE_LANES
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

// COUNT_REGS sets C0–C3 to the counts of the code block in Z8, with the
// planes' words of that block in registers P0–P3.
#define COUNT_REGS(P0, P1, P2, P3, C0, C1, C2, C3) \
	VPANDQ   P0, Z8, Z9 \
	VPOPCNTQ Z9, C0 \
	VPANDQ   P1, Z8, Z9 \
	VPOPCNTQ Z9, C1 \
	VPANDQ   P2, Z8, Z9 \
	VPOPCNTQ Z9, C2 \
	VPANDQ   P3, Z8, Z9 \
	VPOPCNTQ Z9, C3

// func bitScanVPOPCNTQ4(codes *uint64, groups, words, blocks int, planes *uint64, strideBytes int, out *uint64)
// bitScanVPOPCNTQ for codes of at most 16 words (1,024 bits), groups·4
// rows, four at a time. Such a code is one or two blocks (blocks), so the
// planes' words stay in Z10–Z17 for the whole scan: read from memory at
// every block, as the general kernel does, they were four of its five
// loads. Blocks are loaded whole, without a mask: words past a row's own
// (the next row's) meet planes that are zero there and count nothing, and
// the caller passes only rows whose blocks end within codes. A masked load
// of memory not in cache took three times as long on AMD Zen 4: at a
// million rows, where the codes come from RAM, it made the scan 3× slower
// than the unmasked general kernel. Each row's counts are combined lane by
// lane as there and kept on the stack; the four rows' lanes are then added
// up together, in three steps of unpacks, shuffles and adds, and written
// with one store, where adding up one row's eight lanes alone took as many
// instructions as counting a block.
TEXT ·bitScanVPOPCNTQ4(SB), NOSPLIT, $256-56
	MOVQ codes+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ words+16(FP), DX
	SHLQ $3, DX // a row's bytes
	MOVQ blocks+24(FP), R14
	DECQ R14 // zero: one block a row
	MOVQ planes+32(FP), DI
	MOVQ strideBytes+40(FP), R11
	MOVQ out+48(FP), R8
	LEAQ (R11)(R11*2), R12 // three strides: plane 3

	VMOVDQU64 (DI), Z10
	VMOVDQU64 (DI)(R11*1), Z11
	VMOVDQU64 (DI)(R11*2), Z12
	VMOVDQU64 (DI)(R12*1), Z13
	TESTQ     R14, R14
	JZ        g4
	VMOVDQU64 64(DI), Z14
	VMOVDQU64 64(DI)(R11*1), Z15
	VMOVDQU64 64(DI)(R11*2), Z16
	VMOVDQU64 64(DI)(R12*1), Z17

g4:
	XORQ R13, R13 // the row's lanes go to 0(SP)(R13*1): 0, 64, 128, 192

r4:
	VMOVDQU64   (SI), Z8
	COUNT_REGS(Z10, Z11, Z12, Z13, Z1, Z2, Z3, Z4)
	TESTQ       R14, R14
	JZ          r4sum
	VMOVDQU64   64(SI), Z8
	COUNT_REGS(Z14, Z15, Z16, Z17, Z19, Z20, Z21, Z22)
	VPADDQ      Z19, Z1, Z1
	VPADDQ      Z20, Z2, Z2
	VPADDQ      Z21, Z3, Z3
	VPADDQ      Z22, Z4, Z4

r4sum:
	COMBINE_LANES
	VMOVDQU64 Z0, (SP)(R13*1)
	ADDQ      DX, SI
	ADDQ      $64, R13
	CMPQ      R13, $256
	JB        r4

	// Rows a, b, c, d: lanes a0..a7 and so on. Pairs of lanes first:
	// Z24 holds a0+a1, b0+b1, a2+a3, b2+b3, …, Z25 the same of c and d.
	VMOVDQU64   (SP), Z26
	VMOVDQU64   64(SP), Z27
	VMOVDQU64   128(SP), Z28
	VMOVDQU64   192(SP), Z29
	VPUNPCKLQDQ Z27, Z26, Z24
	VPUNPCKHQDQ Z27, Z26, Z25
	VPADDQ      Z25, Z24, Z24
	VPUNPCKLQDQ Z29, Z28, Z25
	VPUNPCKHQDQ Z29, Z28, Z26
	VPADDQ      Z26, Z25, Z25
	// Then 128-bit chunks: a and b's halves in chunks 0 and 1, c and d's
	// in 2 and 3.
	VSHUFI64X2  $0x88, Z25, Z24, Z26
	VSHUFI64X2  $0xdd, Z25, Z24, Z27
	VPADDQ      Z27, Z26, Z26
	// Then the halves: a, b, c, d in the low 256 bits.
	VSHUFI64X2  $0x88, Z26, Z26, Z5
	VSHUFI64X2  $0xdd, Z26, Z26, Z6
	VPADDQ      Z6, Z5, Z5
	VMOVDQU     Y5, (R8)
	ADDQ        $32, R8
	DECQ        CX
	JNZ         g4

	VZEROUPPER
	RET
