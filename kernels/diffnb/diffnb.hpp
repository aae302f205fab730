// DIFFNB: difference coding followed by negabinary mapping, per block.
//
// Stream format (docs/FORMAT.md, stage type 5). The output has the input's length.
// The input is cut into blocks of kBlockBytes (16384) bytes (a multiple of every
// width, so only the last block can end in a partial word). In each block the
// whole little-endian words w_0, w_1, ... of W = 8*width bits become
//   d_i = w_i - w_{i-1}  (mod 2^W, with w_{-1} = 0 at the start of every block)
//   out_i = (d_i + M) XOR M,   M = 0xAA...A (W bits)      (negabinary)
// so small differences of either sign become words with few set bits. Inverse:
//   d_i = (out_i XOR M) - M;  w_i = w_{i-1} + d_i.
// Bytes of a trailing partial word are copied unchanged.
#pragma once

#include "common/blocks.hpp"
#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::diffnb {

// width: 1, 2, 4 or 8 bytes.
void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());
void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());
// The same into caller memory of in.size bytes (not overlapping `in`): the
// engine decodes a chunk's last stage straight into the caller's buffer.
void decode_into(ByteSpan in, unsigned width, uint8_t* out, const Executor& exec = serial_executor());

// The coders of one kBlockBytes block (blocks are independent), for fused
// encoding and decoding of a chain of block-local stages. `in` and `out` of a
// call do not overlap.
BlockCoder block_encoder(unsigned width);
BlockCoder block_decoder(unsigned width);

}  // namespace fz::diffnb
