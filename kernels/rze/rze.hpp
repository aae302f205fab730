// RZE: repeated zero elimination (stage type 2). See elimination/elimination.hpp for
// the stream format it shares with RRE; RZE keeps a word iff it is not zero.
#pragma once

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::rze {

// word_size: 1, 2, 4 or 8 bytes.
void encode(ByteSpan in, unsigned word_size, Bytes& out, const Executor& exec = serial_executor());
// Throws FormatError on a malformed stream or one that decodes to more than max_out bytes.
void decode(ByteSpan in, unsigned word_size, Bytes& out, size_t max_out,
            const Executor& exec = serial_executor());

}  // namespace fz::rze
