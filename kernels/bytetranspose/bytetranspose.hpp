// BYTET: byte transposition by element size, for elements whose size is not a
// word width (compound, array and odd-sized types). Gathering byte k of every
// element puts each field's bytes side by side, where differences and zero
// elimination find structure (a 16-byte compound of int32/float/double goes
// from 1.01x to 2.35x in the lossless preset; docs/PERFORMANCE.md).
//
// Stream format (docs/FORMAT.md, stage type 8). The output has the input's
// length. With element size s and n = floor(length / s) elements:
//   out[k*n + i] = in[i*s + k]   for 0 <= i < n, 0 <= k < s
// and the trailing length - n*s bytes follow unchanged.
#pragma once

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::bytetranspose {

// element_size: 1 .. 2^24 (1 copies).
void encode(ByteSpan in, uint32_t element_size, Bytes& out, const Executor& exec = serial_executor());
void decode(ByteSpan in, uint32_t element_size, Bytes& out, const Executor& exec = serial_executor());

}  // namespace fz::bytetranspose
