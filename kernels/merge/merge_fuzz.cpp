// libFuzzer target: merge decode of arbitrary bytes must not crash or
// over-allocate, and a stream it accepts must be exactly what encode writes
// for the parts it returned. The first byte picks small limits so that the
// limit checks are reached too.
#include <cstddef>
#include <cstdint>

#include "common/error.hpp"
#include "merge/merge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t max_parts = 1 + data[0] % 16;
  const size_t max_total = data[0] & 0x80 ? size_t{64} : size_t{1} << 20;
  const fz::ByteSpan stream(data + 1, size - 1);
  try {
    const std::vector<fz::Bytes> parts = fz::merge::decode(stream, max_total, max_parts);
    size_t total = 0;
    for (const auto& part : parts) total += part.size();
    if (parts.empty() || parts.size() > max_parts || total > max_total) __builtin_trap();
    std::vector<fz::ByteSpan> spans(parts.begin(), parts.end());
    fz::Bytes reencoded;
    fz::merge::encode(spans, reencoded);
    if (reencoded != fz::Bytes(stream.data, stream.data + stream.size)) __builtin_trap();
  } catch (const fz::FormatError&) {
  } catch (const fz::UsageError&) {
  }
  return 0;
}
