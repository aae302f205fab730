// Pipelines on a CUDA device: the same stored buffers as Pipeline::forward and
// the same chunks as Pipeline::inverse, computed on the GPU (design.md,
// "Backends and devices"). Two ways in: chunks and frames in host memory (the
// filter's path), and chunks and frames already in device memory (the
// device-resident API of fz.hpp).
#pragma once

#include <optional>
#include <vector>

#include "common/bytes.hpp"
#include "frame.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"

namespace fz::engine {

// Runs `pipeline` on `device` when every stage has a GPU forward (and no stage
// needs the size of a stream that only the device knows), returning the stored
// buffers in stored_buffers() order. Returns nothing when it cannot or when
// CUDA fails (out of memory, a sticky error that also retires the device for
// the process): the caller then runs the CPU, so nothing is lost. Failures are
// said on stderr when H5Z_FZ_VERBOSE is set. A build without CUDA always
// returns nothing.
std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device);

// Whether forward_on_device can run this pipeline (every stage on the GPU).
bool runs_on_device(const Pipeline& pipeline);

// A host chunk compressed on the device from start to end: uploaded, the
// preset's facts (NOA range, fill test) found there, the pipeline built from
// them and run there, and its frame (the payload checksum computed there too).
// Nothing when the GPU cannot (as forward_on_device). The caller stores the
// chunk raw instead when the frame is not smaller than it, as for the CPU.
// With a target, a frame that fits in it and is smaller than the chunk is
// written there (`written` is its length, `frame` stays empty). The target
// may be the chunk's own memory: it is written only after the chunk has gone
// to the device and every CUDA call has succeeded, so a CPU fallback still
// reads the chunk intact.
struct FrameTarget {
  uint8_t* data = nullptr;
  size_t capacity = 0;
};
// A frame in `frame`, or its length in `written` when it went to the target.
struct FrameOut {
  Bytes frame;
  size_t written = 0;
  // The frame would not be smaller than the chunk (neither downloaded nor
  // built): the caller stores the chunk raw, as for any such frame.
  bool not_smaller = false;
};
// `threads`: CPU threads for the copies through pinned memory (0 = default).
std::optional<FrameOut> compress_on_device(ByteSpan chunk, const DataType& dtype,
                                                   const std::vector<uint64_t>& dims, const Options& options,
                                                   int device, unsigned threads = 0, FrameTarget target = {});

// The inverse on `device`: rebuilds the chunk from the frame's stored buffers
// into dst (capacity bytes) and returns its length, when every stage has a GPU
// inverse. Returns nothing when it cannot, when CUDA fails, or when a stream
// is malformed: the caller then decodes on the CPU, which reports the error.
// With `payload_crc`, the stored buffers' CRC32C (of their concatenation, the
// frame's payload) must equal it, else nothing is returned either (the caller
// checks it on the host before decoding there, which reports the corruption).
std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device,
                                        unsigned threads = 0, std::optional<uint32_t> payload_crc = std::nullopt);

bool inverse_runs_on_device(const Pipeline& pipeline);

// For tests: the forward pipelines one idle lane of `device` holds as CUDA
// graphs, the ones it found it cannot capture, and whether the one it used
// last is a graph. A caller on one thread gets the lane its own last call used.
struct ForwardGraphCounts {
  size_t captured = 0;
  size_t uncapturable = 0;
  bool last_is_graph = false;
};
ForwardGraphCounts forward_graph_counts(int device);

// ---- Device-resident chunks and frames (pointers into `device`'s memory) ----

// The CUDA device that owns `pointer`, or nothing when it is not device memory
// (host memory, or no CUDA).
std::optional<int> device_of_pointer(const void* pointer);

// Compresses a device chunk into a frame in device memory (capacity bytes);
// returns the frame's length. Nothing when the pipeline cannot run on the GPU
// (the caller then goes through the host). Throws fz::Error when the frame
// does not fit, and cuda errors as fz::Error naming the call.
std::optional<size_t> compress_device_resident(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                                               const std::vector<uint64_t>& dims, const Options& options,
                                               uint8_t* frame, size_t capacity, int device);

// The header of a frame in device memory, copied to the host (all of it).
Bytes read_device_frame_header(const uint8_t* frame, size_t frame_bytes, int device);

// Decodes a device frame whose header `info` was parsed from
// read_device_frame_header into device memory `out` (capacity bytes); returns
// the length. Nothing when a stage has no GPU inverse or a stream is
// malformed (the caller then decodes on the host, which names the error).
// Throws FormatError when the payload checksum does not match.
std::optional<size_t> decompress_device_resident(const Pipeline& pipeline, const FrameInfo& info,
                                                 const uint8_t* frame, uint8_t* out, size_t capacity,
                                                 size_t max_stream_bytes, int device);

// Plain copies for the host fall-backs of the device-resident API.
void copy_device_to_host(const uint8_t* device_src, size_t bytes, uint8_t* host_dst, int device);
void copy_host_to_device(const uint8_t* host_src, size_t bytes, uint8_t* device_dst, int device);

}  // namespace fz::engine
