// The FZM frame: one compressed chunk, self-describing, versioned, checksummed.
// docs/FORMAT.md defines every byte; keep the two in step.
#pragma once

#include <vector>

#include "common/bytes.hpp"
#include "fz/fz.hpp"

namespace fz::engine {

constexpr uint8_t kFrameMagic[4] = {'F', 'Z', 'M', 0};
constexpr uint8_t kFormatMajor = 1;
constexpr uint8_t kFormatMinor = 0;
constexpr uint16_t kFlagRaw = 1u << 0;       // payload is the chunk itself, no stages
constexpr uint16_t kKnownFlags = kFlagRaw;   // any other bit set: refuse (newer writer)
constexpr size_t kMaxRank = 32;
constexpr size_t kFixedHeaderBytes = 16;     // up to and excluding the element size

// Serialises header + payload. Fills header_bytes, frame_bytes and both CRCs of `info`.
Bytes write_frame(FrameInfo& info, const std::vector<ByteSpan>& stored);
Bytes write_frame(FrameInfo& info, const std::vector<Bytes>& stored);
// The same in two steps, for a caller that decides where the frame goes once
// its length is known: the header of a frame holding `stored` (sizes and the
// payload's CRC32C; fills `info` as above), then the whole frame, either in
// its own memory or placed at `dst` (info.frame_bytes long). A stored stream
// may lie anywhere in dst: the payload is moved, not copied, before the
// header is written, so a raw frame is built over its own chunk.
Bytes frame_header(FrameInfo& info, const std::vector<ByteSpan>& stored);
Bytes assemble_frame(Bytes header, const std::vector<ByteSpan>& stored);
void place_frame(const Bytes& header, const std::vector<ByteSpan>& stored, uint8_t* dst);
// The header alone, for a payload written elsewhere (GPU memory): the stored
// streams' sizes and the CRC32C of their concatenation. Fills `info` as above.
Bytes write_frame_header(FrameInfo& info, const std::vector<uint64_t>& stored_sizes, uint32_t payload_crc);

// Sets the payload CRC of a header write_frame_header made (and the header
// CRC that covers it): a header can be built, and its length known, before
// the payload's checksum is.
void set_payload_crc(Bytes& header, FrameInfo& info, uint32_t payload_crc);

struct ParsedFrame {
  FrameInfo info;
  std::vector<ByteSpan> stored;  // views into the frame, in payload order
  ByteSpan payload;              // all of them: the bytes the payload CRC covers
};

// Whether parse_frame checks the payload CRC itself, or leaves it to the
// caller (the GPU decoder checks it on the device, where the payload is
// uploaded anyway; a caller that decodes on the host after all calls
// check_payload_crc first).
enum class PayloadCheck { kNow, kDeferred };

// Parses and fully checks a frame (sizes, version, flags, CRC32C of header and
// payload). Throws FormatError with a message naming what is wrong.
ParsedFrame parse_frame(const uint8_t* frame, size_t frame_bytes, PayloadCheck check = PayloadCheck::kNow);

// The payload CRC check that PayloadCheck::kDeferred skipped; throws
// FormatError on a mismatch, with parse_frame's message.
void check_payload_crc(const ParsedFrame& parsed);

// For a frame whose payload is elsewhere (GPU memory): the header's length,
// read from its first `available` (>= 12) bytes after checking the magic...
size_t frame_header_bytes(const uint8_t* frame, size_t available);
// ...and every check of parse_frame but the payload CRC (the caller checks it),
// given the header's first `available` bytes (at least frame_header_bytes) of
// a frame of frame_bytes bytes.
FrameInfo parse_frame_header(const uint8_t* frame, size_t available, uint64_t frame_bytes);

}  // namespace fz::engine
