// RZE on the CPU: the shared elimination coder with the "keep non-zero words" rule.
#include <string>

#include "elimination/elimination.hpp"
#include "common/error.hpp"
#include "rze/rze.hpp"

namespace fz::rze {
namespace {

void check_word_size(unsigned word_size) {
  if (word_size != 1 && word_size != 2 && word_size != 4 && word_size != 8) {
    throw UsageError("RZE word size must be 1, 2, 4 or 8, got " + std::to_string(word_size));
  }
}

}  // namespace

void encode(ByteSpan in, unsigned word_size, Bytes& out, const Executor& exec) {
  check_word_size(word_size);
  elimination::encode_stream(in, word_size, elimination::Rule::kNonZero, out, exec);
}

void decode(ByteSpan in, unsigned word_size, Bytes& out, size_t max_out, const Executor& exec) {
  check_word_size(word_size);
  elimination::decode_stream(in, word_size, elimination::Rule::kNonZero, out, max_out, exec);
}

}  // namespace fz::rze
