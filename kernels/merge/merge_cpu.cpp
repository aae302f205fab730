// CPU MERGE / SPLIT (stream format: merge.hpp). The decoder checks every field
// against the bytes actually present and the caller's limits before it
// allocates anything, so a hostile header cannot make it over-allocate.
#include "merge/merge.hpp"

#include <cstring>
#include <limits>

#include "common/error.hpp"

namespace fz::merge {
namespace {
constexpr size_t kCountBytes = sizeof(uint32_t);
constexpr size_t kSizeBytes = sizeof(uint64_t);
}  // namespace

void encode(const std::vector<ByteSpan>& parts, Bytes& out) {
  if (parts.empty()) throw UsageError("merge: needs at least one stream");
  if (parts.size() > std::numeric_limits<uint32_t>::max()) throw UsageError("merge: too many streams");
  size_t total = kCountBytes + kSizeBytes * parts.size();
  for (const ByteSpan& part : parts) total += part.size;
  out.clear();
  out.reserve(total);
  append_le<uint32_t>(out, static_cast<uint32_t>(parts.size()));
  for (const ByteSpan& part : parts) append_le<uint64_t>(out, part.size);
  for (const ByteSpan& part : parts)
    if (part.size != 0) out.insert(out.end(), part.data, part.data + part.size);
}

std::vector<ByteSpan> split(ByteSpan in, size_t max_total, size_t max_parts) {
  require_format(in.size >= kCountBytes, "merge: stream shorter than its count field");
  const uint32_t count = load_le<uint32_t>(in.data);
  require_format(count >= 1, "merge: stream count is zero");
  require_format(count <= max_parts, "merge: more streams than allowed");
  require_format(count <= (in.size - kCountBytes) / kSizeBytes, "merge: size table truncated");
  const size_t header = kCountBytes + kSizeBytes * count;
  const size_t payload = in.size - header;

  // Sum in 64 bits, refusing each size before it can overflow the sum.
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t size = load_le<uint64_t>(in.data + kCountBytes + kSizeBytes * i);
    require_format(size <= max_total && size <= payload - total, "merge: stream sizes exceed the payload or limit");
    total += size;
  }
  require_format(total <= max_total, "merge: total size exceeds the limit");
  require_format(total == payload, "merge: trailing bytes after the last stream");

  std::vector<ByteSpan> parts(count);
  size_t offset = header;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t size = load_le<uint64_t>(in.data + kCountBytes + kSizeBytes * i);
    parts[i] = ByteSpan(in.data + offset, size);
    offset += size;
  }
  return parts;
}

std::vector<Bytes> decode(ByteSpan in, size_t max_total, size_t max_parts) {
  const std::vector<ByteSpan> spans = split(in, max_total, max_parts);
  std::vector<Bytes> parts(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) parts[i].assign(spans[i].data, spans[i].data + spans[i].size);
  return parts;
}

}  // namespace fz::merge
