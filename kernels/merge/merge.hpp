// MERGE: several byte streams into one, and SPLIT back.
//
// Stream format (docs/FORMAT.md, stage type 6):
//   u32 count | u64 size[count] | the streams, concatenated in order, no padding.
// All integers little-endian. count >= 1.
#pragma once

#include <vector>

#include "common/bytes.hpp"

namespace fz::merge {

void encode(const std::vector<ByteSpan>& parts, Bytes& out);

// Throws FormatError unless the stream is exactly one well-formed merge stream
// whose total payload is at most max_total bytes and has at most max_parts parts.
std::vector<Bytes> decode(ByteSpan in, size_t max_total, size_t max_parts = 4096);
// The same checks; the parts as spans into `in` (no copy).
std::vector<ByteSpan> split(ByteSpan in, size_t max_total, size_t max_parts = 4096);

}  // namespace fz::merge
