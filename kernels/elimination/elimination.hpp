// The stream format shared by RZE and RRE (docs/FORMAT.md, stage types 2 and 3).
//
//   u64 n                       decoded length in bytes
//   u16 size[C]                 C = ceil(n / 16384): stored size of each sub-chunk
//   payload[0] ... payload[C-1] concatenated, no padding
//
// Sub-chunk i covers input bytes [16384*i, min(16384*(i+1), n)); call its length
// osize. size[i] == osize means the sub-chunk is stored raw (coding did not
// shrink it); otherwise size[i] < osize and the payload is coded as follows, for
// word size k: w = osize / k words, e = osize % k leftover bytes.
//   B0: R0 = ceil(w / 8) bytes; bit (j % 8) of byte j / 8 is set iff word j is
//       kept (RZE: word != 0; RRE: word != word j-1, with word -1 = 0). Unused
//       high bits of the last byte are 0.
//   While R_l > 8: bytes of B_l are themselves thinned. K_l = the bytes B_l[i]
//       with B_l[i] != B_l[i-1] (B_l[-1] = 0), in order; B_{l+1} (R_{l+1} =
//       ceil(R_l / 8) bytes) has bit i set iff B_l[i] was kept.
//   Coded sub-chunk = B_top (the last level, R_top <= 8 bytes, raw)
//                   | K_{top-1} | ... | K_0 | kept words (k bytes each) | e leftover bytes.
// Decoding runs forward: expand each level from the one above (a dropped byte
// repeats the previous byte, starting from 0), then place the kept words (RZE:
// dropped words are 0; RRE: a dropped word repeats the previous word, from 0).
// A decoder rejects a stream whose sizes, popcounts or padding bits disagree.
// It does not reject a kept byte or word equal to what dropping it would give
// (encoders never write one; the stream still has one meaning): CPU and CUDA
// decoders must accept such streams alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::elimination {

enum class Rule { kNonZero, kChanged };

// Codes sub-chunk `in` (at most kBlockBytes bytes). Returns the coded length
// written to `out` (capacity kBlockBytes), or in.size if coding would not be
// smaller (the caller then stores it raw).
size_t encode_subchunk(ByteSpan in, unsigned word_size, Rule rule, uint8_t* out);

// Decodes a coded (not raw) sub-chunk of `coded` bytes into osize bytes at out.
// Throws FormatError if the coded bytes are inconsistent.
void decode_subchunk(ByteSpan coded, size_t osize, unsigned word_size, Rule rule, uint8_t* out);

// A validated stream (sizes and payload length checked against the input, n
// against max_out; FormatError otherwise), decodable one sub-chunk at a time:
// a fused decoder hands each decoded block to the next stage while it is hot.
class StreamBlocks {
 public:
  StreamBlocks(ByteSpan in, unsigned word_size, Rule rule, size_t max_out);
  size_t size() const { return n_; }           // decoded bytes
  size_t blocks() const { return offsets_.size(); }
  // Decodes sub-chunk i (block_length(size(), i) bytes) to dst; FormatError
  // if its coded bytes are inconsistent.
  void decode_block(size_t i, uint8_t* dst) const;

 private:
  ByteSpan in_;
  unsigned word_size_;
  Rule rule_;
  size_t n_ = 0;
  std::vector<size_t> offsets_;  // where each sub-chunk's payload starts in `in`
};

// The whole-stream format above.
void encode_stream(ByteSpan in, unsigned word_size, Rule rule, Bytes& out, const Executor& exec);

// Gives block i (block_length(n, i) bytes) of a stream to be coded: a pointer
// into the stream itself, or into `scratch` (2 * kBlockBytes, 16-byte aligned,
// the caller's for this call) where a fused chain of encoders wrote it.
using BlockProducer = std::function<const uint8_t*(size_t block, uint8_t* scratch)>;

// encode_stream() of an n-byte stream that is only ever seen one block at a
// time: blocks are produced and coded in parallel, a batch at a time, and
// appended in order. `out` grows with the coded stream alone (its capacity is
// reserved for the worst case, but no page is touched before it is written),
// so a chain of block-local stages ending here never holds a whole uncoded
// stream (Pipeline::forward). The bytes are encode_stream's.
void encode_stream_blocks(size_t n, unsigned word_size, Rule rule, Bytes& out, const Executor& exec,
                          const BlockProducer& produce);
void decode_stream(ByteSpan in, unsigned word_size, Rule rule, Bytes& out, size_t max_out,
                   const Executor& exec);

}  // namespace fz::elimination
