// The execution backends of the one compress flow (compress_flow.cpp) and
// the one decompress flow (decompress_flow.cpp). A backend runs one chunk's
// pipeline where the chunk is: on the host's threads (CPU), on a CUDA device
// for a chunk in host memory (the filter's path), or on a CUDA device for a
// chunk already in device memory (the device-resident API). The flows hold
// the rules every backend shares, each in one place:
//   - the auto-size rule: which chunks go to the GPU (Policy::gpu_for);
//   - the fallback rule: a GPU backend that cannot run a pipeline, or gives
//     up on a CUDA failure, hands the chunk to the next backend (the CPU);
//   - the raw-frame rule: a frame not smaller than its chunk is replaced by
//     the chunk itself behind a header, and a host chunk whose compression
//     failed is stored so too, said as a warning (never an error: HDF5 stores
//     a chunk whose optional filter fails uncompressed, silently).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "common/bytes.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "policy.hpp"
#include "value_range.hpp"

namespace fz::engine {

// Where a frame may go: caller memory of `capacity` bytes (HDF5's chunk
// buffer, maybe the chunk's own memory; for the device-resident API, device
// memory). Empty: the frame is returned in its own memory.
struct FrameTarget {
  uint8_t* data = nullptr;
  size_t capacity = 0;
};

// A frame in `frame`, or its length in `written` when it went to the target.
struct FrameOut {
  Bytes frame;
  size_t written = 0;
  // The frame would not be smaller than the chunk (neither downloaded nor
  // built): the flow stores the chunk raw, as for any such frame.
  bool not_smaller = false;
};

// A GPU backend could not do this chunk (a CUDA failure, already said through
// the policy's log; a sticky one also retired the device): the flow hands the
// chunk to the next backend.
class BackendGaveUp : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One chunk's compression on one backend; made per chunk (it may hold the
// chunk's device memory and a lane between the calls).
class ChunkEncoder {
 public:
  virtual ~ChunkEncoder() = default;
  // The facts a lossy preset needs of the chunk (presets/presets.hpp: NOA's
  // range, the fill test), found where the chunk is.
  virtual FiniteRange facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options) = 0;
  // Whether this backend runs every stage of `pipeline`; if not, the flow
  // tries the next backend.
  virtual bool runs(const Pipeline& pipeline) const = 0;
  // Runs the pipeline and writes its frame (`info` says everything but the
  // streams): into the target when it fits and is smaller than the chunk.
  // Returns not_smaller (or throws NotSmallerError) when it would not be smaller.
  virtual FrameOut encode(const Pipeline& pipeline, const FrameInfo& info, FrameTarget target) = 0;
};

// Makes a backend's encoder when the flow reaches it (nothing: the backend is
// unusable; the flow goes on), so that one backend's device memory and lane
// are given back before the next starts.
using EncoderFactory = std::function<std::unique_ptr<ChunkEncoder>()>;
// Writes the raw frame (`info` flagged raw, no stages) of the chunk.
using RawWriter = std::function<FrameOut(const FrameInfo& info, FrameTarget target)>;

// Where the chunk is, which decides two rules of the flow.
enum class ChunkPlace {
  // Host memory (the filter's chunks): the host memory compressing needs is
  // checked first, and any failure stores the raw frame with a warning.
  kHost,
  // Device memory (the device-resident API): failures are the caller's errors.
  kDevice,
};

// The chunk's frame through `backends`, in order (the fallback rule: one that
// cannot run the pipeline or gives up passes the chunk on; the last one runs
// every pipeline), or the raw frame when the frame would not be smaller than
// the chunk. `info` describes the chunk (preset, dtype, dims, original bytes).
FrameOut compress_through(const std::vector<EncoderFactory>& backends, const RawWriter& store_raw, FrameInfo info,
                          const Options& options, const Policy& policy, FrameTarget target, ChunkPlace place);

// The CPU backend for a chunk in host memory.
std::unique_ptr<ChunkEncoder> make_cpu_encoder(ByteSpan chunk, const Policy& policy);

// The raw frame of a chunk in host memory: into the target when it fits there
// (over the chunk itself when the target is its memory), else in its own.
FrameOut store_raw_on_host(ByteSpan chunk, const FrameInfo& info, FrameTarget target);

// Whether a frame of `frame_bytes` goes into `target` (it fits there).
inline bool fits(const FrameTarget& target, size_t frame_bytes) {
  return target.data != nullptr && frame_bytes <= target.capacity;
}

// Streams inside one frame never exceed this multiple of the chunk (plus slack
// for tiny chunks); a frame that claims more is hostile or corrupt.
inline uint64_t stream_limit(uint64_t original_bytes) { return 2 * original_bytes + 65536; }

}  // namespace fz::engine
