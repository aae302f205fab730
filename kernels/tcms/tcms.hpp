// TCMS: two's complement to magnitude-sign (zigzag) on fixed-width words.
//
// Stream format (docs/FORMAT.md, stage type 4). The output has the input's length.
// Each whole little-endian word x of W = 8*width bits becomes
//   y = (x << 1) XOR (x >>arithmetic (W - 1));   inverse: x = (y >> 1) XOR -(y & 1).
// The trailing (length mod width) bytes are copied unchanged.
#pragma once

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::tcms {

// width: 1, 2, 4 or 8 bytes.
void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());
void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());

}  // namespace fz::tcms
