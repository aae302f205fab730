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
#include <utility>
#include <vector>

#include "common/bytes.hpp"

namespace fz::engine {

// Estimated stored bytes of the u16 codes `codes` (little-endian, an even
// number of bytes) under the ANS stage of cuszhi-cr.
uint64_t coded_bytes_estimate(ByteSpan codes);

// The same estimate for a stream that comes in pieces (the sample's blocks,
// each made on its own thread), in two passes over each piece that threads
// can share: the codes counted (count_codes), which gives the stream's run
// code m (its most frequent code, the smallest among equals), then the runs
// of m (count_code_runs); a stream's tokens are its pieces' but for the runs
// that cross from one piece into the next, which the estimate joins.
constexpr uint32_t kCodeRunCap = 63;  // the longest run token ("63 and go on")
using CodeCounts = std::vector<std::pair<uint16_t, uint32_t>>;  // each code that occurs, once, in no order
CodeCounts count_codes(ByteSpan codes);
// The stream's run code from its pieces' counts (0 for no codes).
uint16_t run_code_of(const std::vector<const CodeCounts*>& pieces);
struct CodeRuns {
  uint16_t run_code = 0;  // the code counted in runs
  uint64_t n = 0;        // codes in the piece
  bool has_other = false;
  uint64_t lead = 0;     // run codes before the piece's first other code (n when there is none)
  uint64_t trail = 0;    // run codes after its last other code
  uint64_t runs[kCodeRunCap + 1] = {};  // the run tokens in between
};
CodeRuns count_code_runs(ByteSpan codes, uint16_t run_code);
// coded_bytes_estimate of the pieces one after another, from each piece's
// counts and its runs for run_code_of(those counts).
uint64_t coded_bytes_estimate(const std::vector<const CodeCounts*>& counts, const std::vector<CodeRuns>& runs);

// floor(log2(x) * 2^16) for x >= 1 (0 for x == 0), exact in integers.
uint64_t log2_q16(uint64_t x);

}  // namespace fz::engine
