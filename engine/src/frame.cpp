#include "frame.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "crc32c.hpp"
#include "stage_names.hpp"

namespace fz::engine {
namespace {

// Bounds-checked little-endian reader over the header.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  T get(const char* what) {
    if (n_ - pos_ < sizeof(T) || pos_ > n_) throw FormatError(std::string("frame header truncated at ") + what);
    T v = load_le<T>(p_ + pos_);
    pos_ += sizeof(T);
    return v;
  }
  // Canonical LEB128 only (no redundant high zero groups), at most 64 bits.
  uint64_t varint(const char* what) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      const uint8_t byte = get<uint8_t>(what);
      if (shift == 63 && byte > 1) throw FormatError(std::string("frame header: ") + what + " overflows 64 bits");
      v |= uint64_t(byte & 0x7F) << shift;
      if (!(byte & 0x80)) {
        if (byte == 0 && shift > 0) throw FormatError(std::string("frame header: ") + what + " is not minimally encoded");
        return v;
      }
    }
  }
  ByteSpan bytes(size_t count, const char* what) {
    if (count > n_ - pos_) throw FormatError(std::string("frame header truncated at ") + what);
    ByteSpan s(p_ + pos_, count);
    pos_ += count;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// Unsigned LEB128: 7 bits per byte, low groups first, high bit = more follows.
// Sizes and dims are small numbers in practice; this keeps the header of a
// small chunk small (h5py's default chunks are a few kB each).
void append_varint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

bool multiply_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

void set_payload_crc(Bytes& header, FrameInfo& info, uint32_t payload_crc) {
  const size_t n = header.size();  // ... | payload CRC | header CRC
  store_le<uint32_t>(header.data() + n - 8, payload_crc);
  const uint32_t header_crc = crc32c(header.data(), n - 4);
  store_le<uint32_t>(header.data() + n - 4, header_crc);
  info.payload_crc = payload_crc;
  info.header_crc = header_crc;
}

Bytes write_frame_header(FrameInfo& info, const std::vector<uint64_t>& stored_sizes, uint32_t payload_crc) {
  Bytes h(kFrameMagic, kFrameMagic + 4);
  h.push_back(kFormatMajor);
  h.push_back(kFormatMinor);
  append_le<uint16_t>(h, info.flags);
  append_le<uint32_t>(h, 0);  // header_bytes, patched below
  h.push_back(static_cast<uint8_t>(info.preset));
  h.push_back(static_cast<uint8_t>(info.dtype.element_class));
  h.push_back(static_cast<uint8_t>(info.dtype.order));
  h.push_back(static_cast<uint8_t>(info.dims.size()));
  append_varint(h, info.dtype.size);
  append_varint(h, info.original_bytes);
  for (uint64_t d : info.dims) append_varint(h, d);
  h.push_back(static_cast<uint8_t>(info.stages.size()));
  h.push_back(static_cast<uint8_t>(stored_sizes.size()));
  for (const StageInfo& s : info.stages) {
    append_le<uint16_t>(h, s.type_id);
    h.push_back(static_cast<uint8_t>(s.inputs.size()));
    h.push_back(s.outputs);
    h.push_back(static_cast<uint8_t>(s.config.size()));
    h.insert(h.end(), s.inputs.begin(), s.inputs.end());
    h.insert(h.end(), s.config.begin(), s.config.end());
  }
  info.stored_sizes = stored_sizes;
  size_t payload_bytes = 0;
  for (uint64_t size : stored_sizes) {
    append_varint(h, size);
    payload_bytes += size;
  }
  append_le<uint32_t>(h, 0);  // payload CRC and header CRC: set_payload_crc
  append_le<uint32_t>(h, 0);
  const size_t header_bytes = h.size();
  store_le<uint32_t>(h.data() + 8, static_cast<uint32_t>(header_bytes));
  set_payload_crc(h, info, payload_crc);

  info.version_major = kFormatMajor;
  info.version_minor = kFormatMinor;
  info.header_bytes = header_bytes;
  info.frame_bytes = header_bytes + payload_bytes;
  info.raw = (info.flags & kFlagRaw) != 0;
  return h;
}

Bytes frame_header(FrameInfo& info, const std::vector<ByteSpan>& stored) {
  std::vector<uint64_t> sizes;
  uint32_t payload_crc = 0;
  for (const ByteSpan& b : stored) {
    sizes.push_back(b.size);
    payload_crc = crc32c(b.data, b.size, payload_crc);
  }
  return write_frame_header(info, sizes, payload_crc);
}

Bytes assemble_frame(Bytes header, const std::vector<ByteSpan>& stored) {
  size_t length = header.size();
  for (const ByteSpan& b : stored) length += b.size;
  header.reserve(length);
  for (const ByteSpan& b : stored) header.insert(header.end(), b.data, b.data + b.size);
  return header;
}

void place_frame(const Bytes& header, const std::vector<ByteSpan>& stored, uint8_t* dst) {
  // Last stream first: a stream that lies in dst itself (a raw frame's chunk)
  // only ever moves towards the end, over bytes no other stream occupies.
  size_t end = header.size();
  for (const ByteSpan& b : stored) end += b.size;
  for (size_t k = stored.size(); k-- > 0;) {
    end -= stored[k].size;
    if (stored[k].size) std::memmove(dst + end, stored[k].data, stored[k].size);
  }
  std::memcpy(dst, header.data(), header.size());
}

Bytes write_frame(FrameInfo& info, const std::vector<ByteSpan>& stored) {
  return assemble_frame(frame_header(info, stored), stored);
}

Bytes write_frame(FrameInfo& info, const std::vector<Bytes>& stored) {
  return write_frame(info, std::vector<ByteSpan>(stored.begin(), stored.end()));
}

size_t frame_header_bytes(const uint8_t* frame, size_t available) {
  if (frame == nullptr || available < 12) throw FormatError("not an FZM frame: too short");
  if (std::memcmp(frame, kFrameMagic, 4) != 0) throw FormatError("not an FZM frame: bad magic");
  return load_le<uint32_t>(frame + 8);
}

FrameInfo parse_frame_header(const uint8_t* frame, size_t available, uint64_t frame_bytes) {
  if (frame == nullptr || frame_bytes < 12 || available < 12) throw FormatError("not an FZM frame: too short");
  if (std::memcmp(frame, kFrameMagic, 4) != 0) throw FormatError("not an FZM frame: bad magic");
  FrameInfo info;
  Reader r(frame, available);
  r.bytes(4, "magic");
  info.version_major = r.get<uint8_t>("version");
  info.version_minor = r.get<uint8_t>("version");
  if (info.version_major != kFormatMajor)
    throw FormatError("FZM frame version " + std::to_string(info.version_major) + "." +
                      std::to_string(info.version_minor) + " is not readable by this build (reads " +
                      std::to_string(kFormatMajor) + ".x): upgrade H5Z-FZ");
  info.flags = r.get<uint16_t>("flags");
  const uint32_t header_bytes = r.get<uint32_t>("header size");
  if (header_bytes > frame_bytes || header_bytes < kFixedHeaderBytes + 2 + 2 + 8)
    throw FormatError("FZM frame truncated: header needs " + std::to_string(header_bytes) + " bytes, frame has " +
                      std::to_string(frame_bytes));
  if (header_bytes > available) throw std::logic_error("parse_frame_header: the whole header is needed");
  const uint32_t header_crc = load_le<uint32_t>(frame + header_bytes - 4);
#ifndef FZ_FUZZ_SKIP_CRC
  if (crc32c(frame, header_bytes - 4) != header_crc) throw FormatError("FZM frame header checksum mismatch (corrupted)");
#endif
  info.header_crc = header_crc;
  if (info.flags & ~kKnownFlags)
    throw FormatError("FZM frame uses flags unknown to this build (0x" + std::to_string(info.flags) +
                      "): written by a newer version");
  info.raw = (info.flags & kFlagRaw) != 0;

  // From here on, read only inside the header (its CRC matched).
  Reader h(frame, header_bytes - 4);
  h.bytes(12, "fixed fields");
  const uint8_t preset = h.get<uint8_t>("preset");
  const uint8_t element_class = h.get<uint8_t>("element class");
  const uint8_t order = h.get<uint8_t>("byte order");
  const uint8_t rank = h.get<uint8_t>("rank");
  require_format(find_preset(static_cast<Preset>(preset)) != nullptr, "frame names an unknown preset");
  require_format(element_class <= static_cast<uint8_t>(ElementClass::Float), "frame names an unknown element class");
  require_format(order <= 1, "frame names an unknown byte order");
  require_format(rank <= kMaxRank, "frame rank above 32");
  info.preset = static_cast<Preset>(preset);
  info.dtype.element_class = static_cast<ElementClass>(element_class);
  info.dtype.order = static_cast<ByteOrder>(order);
  const uint64_t element_size = h.varint("element size");
  require_format(element_size >= 1 && element_size <= UINT32_MAX, "frame element size out of range");
  info.dtype.size = static_cast<uint32_t>(element_size);
  info.original_bytes = h.varint("original size");
  uint64_t elements = 1;
  for (unsigned i = 0; i < rank; ++i) {
    info.dims.push_back(h.varint("dims"));
    require_format(!multiply_overflows(elements, info.dims.back(), &elements), "frame dims overflow");
  }
  uint64_t expected = 0;
  require_format(!multiply_overflows(elements, info.dtype.size, &expected) && expected == info.original_bytes,
                 "frame dims and element size disagree with the original size");

  const unsigned stage_count = h.get<uint8_t>("stage count");
  const unsigned stored_count = h.get<uint8_t>("stored buffer count");
  for (unsigned s = 0; s < stage_count; ++s) {
    StageInfo st;
    st.type_id = h.get<uint16_t>("stage type");
    const unsigned n_in = h.get<uint8_t>("stage inputs");
    st.outputs = h.get<uint8_t>("stage outputs");
    const unsigned config_bytes = h.get<uint8_t>("stage config size");
    require_format(config_bytes <= kMaxStageConfigBytes, "stage config larger than 128 bytes");
    ByteSpan ins = h.bytes(n_in, "stage inputs");
    st.inputs.assign(ins.data, ins.data + ins.size);
    ByteSpan cfg = h.bytes(config_bytes, "stage config");
    st.config.assign(cfg.data, cfg.data + cfg.size);
    st.name = stage_type_name(st.type_id);
    info.stages.push_back(std::move(st));
  }
  uint64_t payload_bytes = 0;
  for (unsigned b = 0; b < stored_count; ++b) {
    info.stored_sizes.push_back(h.varint("stored sizes"));
    require_format(!__builtin_add_overflow(payload_bytes, info.stored_sizes.back(), &payload_bytes),
                   "stored sizes overflow");
  }
  info.payload_crc = h.get<uint32_t>("payload checksum");
  require_format(h.pos() == header_bytes - 4, "frame header has trailing bytes");
  if (payload_bytes != frame_bytes - header_bytes)
    throw FormatError("FZM frame size mismatch: header describes " + std::to_string(header_bytes + payload_bytes) +
                      " bytes, frame has " + std::to_string(frame_bytes) + " (truncated or padded)");
  if (info.raw) {
    require_format(stage_count == 0 && stored_count == 1 && info.stored_sizes[0] == info.original_bytes,
                   "raw FZM frame must store exactly the original bytes");
  }
  info.header_bytes = header_bytes;
  info.frame_bytes = frame_bytes;
  return info;
}

ParsedFrame parse_frame(const uint8_t* frame, size_t frame_bytes, PayloadCheck check) {
  ParsedFrame parsed;
  parsed.info = parse_frame_header(frame, frame_bytes, frame_bytes);
  const FrameInfo& info = parsed.info;
  parsed.payload = ByteSpan(frame + info.header_bytes, frame_bytes - info.header_bytes);
  if (check == PayloadCheck::kNow) check_payload_crc(parsed);
  size_t offset = info.header_bytes;
  for (uint64_t size : info.stored_sizes) {
    parsed.stored.emplace_back(frame + offset, static_cast<size_t>(size));
    offset += size;
  }
  return parsed;
}

void check_payload_crc(const ParsedFrame& parsed) {
#ifndef FZ_FUZZ_SKIP_CRC
  if (crc32c(parsed.payload.data, parsed.payload.size) != parsed.info.payload_crc)
    throw FormatError("FZM frame payload checksum mismatch (corrupted)");
#else
  (void)parsed;
#endif
}

}  // namespace fz::engine
