// FILLMASK: takes the fill elements (netCDF land / missing data) out of a chunk
// before a lossy stage and puts them back after it.
//
// Stream format (docs/FORMAT.md, stage type 12). Parameters: the element width
// `width` (1, 2, 4 or 8 bytes) and the fill bits F (the low `width` bytes of a
// u64; the higher bytes must be 0). The input is n = in.size / width whole
// little-endian words x_0 .. x_{n-1}; in.size must be a multiple of width.
// Fill test: x_i is a fill element iff its bits equal F exactly (a bitwise
// comparison: a NaN fill matches the same NaN payload only, -0 does not match +0).
// Two output streams:
//   mask:   ceil(n/8) bytes; bit (i % 8) of byte i/8 is 1 iff x_i is a fill
//           element. The unused high bits of the last byte are 0.
//   values: n words (in.size bytes):
//             v_i = x_i                                    if x_i is not fill
//             v_i = x_j, j = the largest j < i with x_j not fill    (carry forward)
//             v_i = x_k, k = the smallest index with x_k not fill  (no such j)
//             v_i = 0                                      if every x is fill
//           so fill runs repeat their neighbour and differences stay small for
//           the predictor after this stage. The replacement depends on linear
//           order only, never on blocks or threads.
// Decoding: out = values, then out_i = F at every set mask bit. A stream is
// rejected (FormatError) unless values.size % width == 0, mask.size ==
// ceil(n/8), the padding bits are 0 and values.size <= max_out. The words of
// `values` at fill positions are ignored by the decoder (a lossy stage may
// have changed them).
//
// Worked example, width 4, F = 0xF7F684DF (-1e34f), n = 10:
//   x      = F  F  1.5 F  2.0 2.5 F  F  F  3.0
//   mask   = CB 01                (elements 0,1,3,6,7 -> 0xCB; element 8 -> 0x01)
//   values = 1.5 1.5 1.5 1.5 2.0 2.5 2.5 2.5 2.5 3.0
//          = 0000C03F 0000C03F 0000C03F 0000C03F 00000040
//            00002040 00002040 00002040 00002040 00004040   (bytes, in order)
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::fillmask {

struct Streams {
  Bytes values;  // the input with fill elements replaced (same length)
  Bytes mask;    // one bit per element, ceil(n/8) bytes
};

// width: 1, 2, 4 or 8; in.size a multiple of width; fill's bits above 8*width
// zero. Throws UsageError otherwise. The bytes do not depend on the executor.
void encode(ByteSpan in, unsigned width, uint64_t fill, Streams& out, const Executor& exec = serial_executor());

// Throws UsageError for a bad width or fill, FormatError for an inconsistent
// stream or one decoding to more than max_out bytes (checked before anything
// is allocated). Never reads outside the inputs.
void decode(ByteSpan values, ByteSpan mask, unsigned width, uint64_t fill, Bytes& out, size_t max_out,
            const Executor& exec = serial_executor());
// The same over the values themselves (`size` bytes at `values`), which
// become the chunk: a decoded chunk is then never held twice (issue 28).
void decode_in_place(uint8_t* values, size_t size, ByteSpan mask, unsigned width, uint64_t fill, size_t max_out,
                     const Executor& exec = serial_executor());

}  // namespace fz::fillmask
