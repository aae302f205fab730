// The CUDA backend as the flows see it (execution.hpp): encoders for chunks
// in host memory and in device memory, decoders for frames in either, and the
// helpers tests use. Implemented in engine/src/cuda/ (CUDA builds); a build
// without CUDA links without_cuda/backend.cpp, whose factories return nothing (so the
// flows use the CPU) and whose device-resident calls throw.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "common/bytes.hpp"
#include "execution.hpp"
#include "frame.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "policy.hpp"

namespace fz::engine {

// ---- Chunks and frames in host memory (the filter's path) ----

// The GPU encoder for a host chunk on policy.device, or nothing when the
// device is unusable (retired after a sticky error, or no CUDA in this
// build). Its calls throw BackendGaveUp on a CUDA failure, after saying it
// through the policy's log. A target may be the chunk's own memory: it is
// written only after the chunk went to the device and every CUDA call
// succeeded, so the next backend still reads the chunk intact.
std::unique_ptr<ChunkEncoder> make_gpu_encoder(ByteSpan chunk, const Policy& policy);

// The inverse on policy.device: rebuilds the chunk from the frame's stored
// buffers into dst (capacity bytes) and returns its length, when every stage
// has a GPU inverse. Nothing when it cannot, when CUDA fails (said through the
// policy's log), or when a stream is malformed: the flow then decodes on the
// CPU, which reports the error. With `payload_crc`, the stored buffers' CRC32C
// (of their concatenation, the frame's payload) must equal it, else nothing
// (the CPU path then checks it on the host and reports the corruption).
std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, const Policy& policy,
                                        std::optional<uint32_t> payload_crc = std::nullopt);

// The same on `device` with `threads` CPU threads for the copies (tests).
std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device,
                                        unsigned threads = 0, std::optional<uint32_t> payload_crc = std::nullopt);

// ---- Chunks and frames in device memory (the device-resident API) ----

// The CUDA device that owns `pointer`, or nothing when it is not device memory
// (host memory, or no CUDA).
std::optional<int> device_of_pointer(const void* pointer);

// The encoder for a chunk in `device`'s memory, its frame going to device
// memory (the target). CUDA failures throw (as fz::Error through the API);
// a pipeline with a stage the GPU lacks is not run (runs() is false): the
// flow then takes the next backend, make_through_host_encoder.
std::unique_ptr<ChunkEncoder> make_resident_encoder(const uint8_t* chunk, size_t bytes, int device,
                                                    const Policy& policy);
// The device chunk through the host: downloaded, compressed by the CPU, its
// frame uploaded into the target.
std::unique_ptr<ChunkEncoder> make_through_host_encoder(const uint8_t* chunk, size_t bytes, int device,
                                                        const Policy& policy);

// The raw frame of a device chunk (`info` flagged raw) written into the
// device target; throws Error when it does not fit.
FrameOut store_raw_on_device(const uint8_t* chunk, const FrameInfo& info, FrameTarget target, int device);

// The header of a frame in device memory, copied to the host (all of it).
Bytes read_device_frame_header(const uint8_t* frame, size_t frame_bytes, int device);

// Decodes a device frame whose header `info` was parsed from
// read_device_frame_header into device memory `out` (capacity bytes); returns
// the length. Nothing when a stage has no GPU inverse or a stream is
// malformed (the flow then decodes through the host, which names the error).
// Throws FormatError when the payload checksum does not match.
std::optional<size_t> decompress_device_resident(const Pipeline& pipeline, const FrameInfo& info,
                                                 const uint8_t* frame, uint8_t* out, size_t capacity,
                                                 size_t max_stream_bytes, int device);

// Plain copies for the host fall-backs of the device-resident API and the
// batch calls, on a lane's stream; they return when the copy is done (a
// page-locked host buffer takes the DMA directly).
void copy_device_to_host(const uint8_t* device_src, size_t bytes, uint8_t* host_dst, int device);
void copy_host_to_device(const uint8_t* host_src, size_t bytes, uint8_t* device_dst, int device);
// Device memory of `device` (cudaMalloc) and its release: staging for frames
// a caller hands over in host memory (decompress_batch_to_device).
uint8_t* allocate_device(size_t bytes, int device);
void free_device(uint8_t* pointer, int device);

// ---- For tests ----

// Runs `pipeline` on `device` when every stage has a GPU forward (and no stage
// needs the size of a stream that only the device knows), returning the stored
// buffers in stored_buffers() order; nothing when it cannot or CUDA fails.
std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device);
// Whether forward_on_device can run this pipeline (every stage on the GPU).
bool runs_on_device(const Pipeline& pipeline);
bool inverse_runs_on_device(const Pipeline& pipeline);

// The forward pipelines one idle lane of `device` holds as CUDA graphs, the
// ones it found it cannot capture, and whether the one it used last is a
// graph. A caller on one thread gets the lane its own last call used.
struct ForwardGraphCounts {
  size_t captured = 0;
  size_t uncapturable = 0;
  bool last_is_graph = false;
};
ForwardGraphCounts forward_graph_counts(int device);

}  // namespace fz::engine
