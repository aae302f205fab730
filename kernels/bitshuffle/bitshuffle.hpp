// BIT: bit-plane transposition ("bit-shuffle") of fixed-width little-endian words.
//
// Stream format (docs/FORMAT.md, stage type 1). The output has exactly the input's
// length. The input is cut into blocks of kBlockBytes (16384) bytes; the last
// block may be shorter. Each block of L bytes, independently:
//   n = L / width words; m = n - n % 8 words are transposed; the remaining
//   L - m*width bytes (whole words and any partial word) follow unchanged.
//   The transposed part is W = 8*width planes of m/8 bytes each, plane 0 first.
//   Plane q holds bit q (bit 0 = least significant) of every word:
//     bit j of byte g of plane q  =  bit q of word 8g + j.
// The same bit order is used for every width (docs/FORMAT.md section 0, rule 1),
// and it is what a CUDA warp ballot produces, so both backends agree naturally.
#pragma once

#include "common/blocks.hpp"
#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::bitshuffle {

// width: element width in bytes, one of 1, 2, 4, 8 (anything else: UsageError).
void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());
void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());

// The coders of one kBlockBytes block (blocks are independent), for fused
// encoding and decoding of a chain of block-local stages. `in` and `out` of a
// call do not overlap.
BlockCoder block_encoder(unsigned width);
BlockCoder block_decoder(unsigned width);

}  // namespace fz::bitshuffle
