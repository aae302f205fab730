// An estimate of what cuszhi-cr's entropy stage stores for a stream of u16
// prediction codes, from the codes' histograms alone (no coding): the
// predictor choice (predictor_choice.hpp) compares two pipelines on a sample
// by their stored bytes, and running the ANS coder on both candidates' codes
// cost more than the chunk's own compression on small chunks (55% of a
// 48x48 chunk's write was the choice, 40% of it the sample's ANS runs;
// docs/PERFORMANCE.md, "Issue 30: a cheaper predictor choice").
//
// The model is the coder's: the most frequent code m (the smallest among
// equals) in runs, each run of L copies cut into tokens of at most 63 (63
// "and go on"), every other code a symbol token; each token costs its
// information content in the stream's own order-0 statistics (rANS comes
// within a fraction of a percent of it), plus the two frequency tables as
// Elias-gamma codes of the gaps and of the frequencies scaled to 2^14, plus
// six bytes a lane of 8192 codes and the head. Integer arithmetic only (the
// logarithm in 16.16 fixed point by repeated squaring), so that every host
// gets the same estimate and the same choice, whatever its libm.
#pragma once

#include <cstdint>

#include "common/bytes.hpp"

namespace fz::engine {

// Estimated stored bytes of the u16 codes `codes` (little-endian, an even
// number of bytes) under the ANS stage of cuszhi-cr.
uint64_t coded_bytes_estimate(ByteSpan codes);

// floor(log2(x) * 2^16) for x >= 1 (0 for x == 0), exact in integers.
uint64_t log2_q16(uint64_t x);

}  // namespace fz::engine
