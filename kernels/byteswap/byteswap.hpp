// BSWAP: reverses the bytes of every fixed-width word. The engine puts it first
// for big-endian data so that the arithmetic stages after it see little-endian
// words. Stream format (docs/FORMAT.md, stage type 7): output has the input's
// length; each whole word of `width` bytes is byte-reversed, trailing bytes are
// copied unchanged. It is its own inverse.
#pragma once

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::byteswap {

// width: 2, 4 or 8 bytes (1 is allowed and copies).
void apply(ByteSpan in, unsigned width, Bytes& out, const Executor& exec = serial_executor());

}  // namespace fz::byteswap
