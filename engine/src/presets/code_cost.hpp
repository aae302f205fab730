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
// each coded on its own thread), counted piece by piece where each piece is
// made and joined at the end: a stream's tokens are those of its pieces but
// for the runs of the run code that cross from one piece into the next.
// The longest run token ("63 and go on").
constexpr uint32_t kCodeRunCap = 63;
struct CodeTokens {
  uint16_t run_code = 0;  // the code counted in runs (any: see below)
  uint64_t n = 0;         // codes in the piece
  bool has_other = false;
  uint64_t lead = 0;   // run codes before the piece's first other code (n when there is none)
  uint64_t trail = 0;  // run codes after its last other code
  uint64_t runs[kCodeRunCap + 1] = {};  // the run tokens in between
  std::vector<std::pair<uint16_t, uint32_t>> others;  // the other codes' counts, by code
};
// One piece's tokens for run code `run_code`.
CodeTokens count_code_tokens(ByteSpan codes, uint16_t run_code);
// One piece's tokens for its own most frequent code (the smallest among
// equals), which is nearly always its stream's: counted for the most
// frequent of its first codes, and again only when that was not the one.
CodeTokens count_code_tokens(ByteSpan codes);
// coded_bytes_estimate of the pieces one after another. tokens[i] are
// pieces[i]'s for any run code; the pieces counted for another code than
// the stream's most frequent one are counted again, so the result does not
// depend on the guesses.
uint64_t coded_bytes_estimate(const std::vector<ByteSpan>& pieces, std::vector<CodeTokens> tokens);

// floor(log2(x) * 2^16) for x >= 1 (0 for x == 0), exact in integers.
uint64_t log2_q16(uint64_t x);

}  // namespace fz::engine
