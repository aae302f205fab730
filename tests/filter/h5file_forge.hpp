// Frame forging for the file-level hostile-chunk harness (h5file_harness.hpp):
// what a forged frame changes (Forge), the forging itself (a frame parsed,
// its header fields rewritten and serialised again with the engine's frame
// writer, so both CRC32C fields match whatever it claims: forge) and the CRC
// repair after raw edits (fix_crcs). Split from the harness because it is the
// only part that works on frames through the engine's internals
// (engine/src: frame.hpp, crc32c.hpp); the rest speaks HDF5.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "crc32c.hpp"  // engine/src
#include "frame.hpp"   // engine/src
#include "fz/fz.hpp"

namespace fz::h5file {

// A rewrite of a frame's header (and maybe payload). The frame is parsed, its
// fields replaced, and serialised again with the engine's frame writer, so
// both CRCs match whatever it claims.
struct Forge {
  enum class Size { Keep, MinusOne, PlusOne, Double, Half, Tiny, Zero, Target, Value };
  bool raw = false;                  // replace stages by a raw payload (decodes trivially)
  Size size = Size::Keep;            // decoded byte count
  uint64_t size_value = 0;           // for Size::Value
  int element_size = -1;             // -1 keep
  int element_class = -1;            // -1 keep
  int byte_order = -1;               // -1 keep
  int preset = -1;                   // -1 keep
  int truncate_by = 0;               // bytes cut from the end after forging (CRCs then recomputed)
};

// Recomputes both CRC32C fields of a frame whose header size field is sane;
// leaves anything else alone (the engine then refuses it on other grounds).
inline void fix_crcs(std::vector<uint8_t>& frame) {
  if (frame.size() < 12 || std::memcmp(frame.data(), engine::kFrameMagic, 4) != 0) return;
  const uint32_t header = load_le<uint32_t>(frame.data() + 8);
  if (header < 16 || header > frame.size()) return;
  store_le<uint32_t>(frame.data() + header - 8, engine::crc32c(frame.data() + header, frame.size() - header));
  store_le<uint32_t>(frame.data() + header - 4, engine::crc32c(frame.data(), header - 4));
}

// Parses `source`, rewrites what `f` says, serialises it again (CRCs right).
// Empty when the source cannot be parsed (never for collected frames).
inline std::vector<uint8_t> forge(const std::vector<uint8_t>& source, const Forge& f, size_t target_bytes) {
  engine::ParsedFrame parsed;
  try {
    parsed = engine::parse_frame(source.data(), source.size());
  } catch (const std::exception&) {
    return {};
  }
  FrameInfo info = parsed.info;
  std::vector<Bytes> stored;
  if (f.raw) {
    Bytes decoded(info.original_bytes);
    try {
      fz::decompress_into(source.data(), source.size(), decoded.data(), decoded.size());
    } catch (const std::exception&) {
      return {};
    }
    stored.push_back(std::move(decoded));
    info.flags = engine::kFlagRaw;
    info.stages.clear();
  } else {
    for (const ByteSpan& span : parsed.stored) stored.emplace_back(span.data, span.data + span.size);
  }
  if (f.element_size > 0) info.dtype.size = static_cast<uint32_t>(f.element_size);
  if (f.element_class >= 0) info.dtype.element_class = static_cast<ElementClass>(f.element_class);
  if (f.byte_order >= 0) info.dtype.order = static_cast<ByteOrder>(f.byte_order);
  if (f.preset >= 0) info.preset = static_cast<Preset>(f.preset);

  uint64_t bytes = info.original_bytes;
  switch (f.size) {
    case Forge::Size::Keep: break;
    case Forge::Size::MinusOne: bytes = bytes > 0 ? bytes - 1 : 0; break;
    case Forge::Size::PlusOne: bytes += 1; break;
    case Forge::Size::Double: bytes *= 2; break;
    case Forge::Size::Half: bytes /= 2; break;
    case Forge::Size::Tiny: bytes = 1; break;
    case Forge::Size::Zero: bytes = 0; break;
    case Forge::Size::Target: bytes = target_bytes; break;
    case Forge::Size::Value: bytes = f.size_value; break;
  }
  // Keep the header self-consistent (dims x element size = size), or the
  // parser stops it before the filter's checks: the dims are the old ones
  // with the slowest extent changed when that works, else one axis.
  info.original_bytes = bytes;
  uint64_t inner = info.dtype.size;
  for (size_t d = 1; d < info.dims.size(); ++d) inner *= info.dims[d];
  if (!info.dims.empty() && inner != 0 && bytes % inner == 0) {
    info.dims[0] = bytes / inner;
  } else {
    if (bytes % info.dtype.size != 0) info.dtype.size = 1;
    info.dims = {bytes / info.dtype.size};
  }
  if (f.raw) stored[0].resize(bytes, 0x5A);

  Bytes frame = engine::write_frame(info, stored);
  if (f.truncate_by > 0) {
    frame.resize(frame.size() > static_cast<size_t>(f.truncate_by) ? frame.size() - f.truncate_by : 1);
    fix_crcs(frame);
  }
  return frame;
}

}  // namespace fz::h5file
