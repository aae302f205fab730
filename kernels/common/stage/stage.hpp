// A pipeline stage: a pure transform from named input streams to named output
// streams, with an exact inverse. Stages wrap kernels (kernels/<stage>/) and
// carry the configuration that the frame records for them. Type ids are stable
// forever (they are stored in files); docs/FORMAT.md lists them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::stage {

// One enumerator per line of stage_list.inc, valued by its stable type id.
enum class StageType : uint16_t {
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) Enum = id,
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
};

constexpr size_t kMaxStageConfigBytes = 128;

struct StageContext {
  const Executor& exec;
  // No stream an inverse produces may be larger than this (hostile frames).
  size_t max_stream_bytes;
  // Forward: a frame this long or longer is replaced by the raw chunk (the
  // chunk's size), so a stage whose outputs stored as they are (bit k of
  // stored_outputs: output k goes into the frame unchanged) reach it may
  // give up with NotSmallerError instead of finishing them.
  size_t frame_limit = SIZE_MAX;
  uint32_t stored_outputs = 0;
};

// A stream that a stage's inverse can produce one kBlockBytes block at a time
// (validated when made; decode_block throws FormatError on a bad block).
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  virtual size_t size() const = 0;  // bytes of the whole stream
  virtual void decode_block(size_t block, uint8_t* dst) const = 0;  // block_length(size(), block) bytes
};

// The end of a fused chain: a stage's inverse fed one block of one of its
// outputs at a time (consume may run concurrently for different blocks), then
// finish() once all have arrived. It rebuilds the stage's one input.
class BlockSink {
 public:
  virtual ~BlockSink() = default;
  virtual size_t size() const = 0;  // bytes of the stage's input it rebuilds
  virtual void consume(size_t block, const uint8_t* data, uint8_t* dst) = 0;
  virtual void finish(uint8_t* dst) = 0;
};

// The start of a fused forward chain: a stage whose first output can be
// produced one kBlockBytes block at a time from its input (the quantizer's
// codes), so the chain after it never needs the whole stream. encode_block
// may run concurrently for different blocks; finish() then fills the stage's
// other outputs (outputs[0] is left empty: the chain consumed it).
class ForwardSource {
 public:
  virtual ~ForwardSource() = default;
  virtual size_t size() const = 0;  // bytes of output 0
  virtual void encode_block(size_t block, uint8_t* dst) = 0;  // block_length(size(), block) bytes
  virtual void finish(std::vector<Bytes>& outputs) = 0;
};

// GPU execution of a pipeline's forward (engine/src/cuda/, through device_forward.hpp). A stream
// in device memory, its size known on the host, or only on the device (the
// producer wrote it to device_size) until the caller reads it back.
struct DeviceBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  uint64_t* device_size = nullptr;
  // The same bytes on the host (all `size` of them), for a stream read from a
  // frame in host memory; nullptr otherwise (frames in device memory), when a
  // stage that needs a header reads it with DeviceWork::read_back.
  const uint8_t* host = nullptr;
  // For a size on the device: the bytes allocated at `data`, which it never
  // exceeds (0: not said). Small chunks download their streams whole with
  // their sizes, in one trip (engine/src/cuda/, through device_forward.hpp).
  size_t capacity = 0;
};

// What a stage's GPU forward may use. No CUDA type appears here so that CPU
// builds compile this header unchanged.
class DeviceWork {
 public:
  virtual ~DeviceWork() = default;
  // Device memory that lives until the chunk is done.
  virtual uint8_t* allocate(size_t bytes) = 0;
  // The cudaStream_t every kernel of this chunk goes on.
  virtual void* stream() const = 0;
  // Throws (a CUDA error naming `what`) unless `cuda_error` is cudaSuccess.
  virtual void check(int cuda_error, const char* what) = 0;
  // A zeroed device word a GPU decoder sets nonzero when its stream is
  // malformed; checked when the chunk is done (the CPU then decodes it and
  // reports the error).
  virtual uint32_t* status_word() = 0;
  // Copies `bytes` (a few: a stream's header) from the device to `host` once
  // everything enqueued so far is done. Synchronises: use only where a stage
  // must see a value the device computed, or a stream has no host bytes.
  virtual void read_back(const uint8_t* device, size_t bytes, uint8_t* host) = 0;
  // Device memory for the stream an inverse rebuilds on its first input
  // port: the place the engine offered for it when that holds `bytes` (the
  // caller's buffer, when the stream is the chunk, so the chunk is decoded
  // where it goes instead of copied there), else allocate(bytes).
  virtual uint8_t* allocate_rebuilt(size_t bytes) { return allocate(bytes); }
  // Memory from allocate() that no work enqueued from now on reads: it may go
  // back to the device now (stream-ordered, so what is already enqueued still
  // reads it safely). The default keeps it until the chunk is done.
  virtual void release(const void* data) { (void)data; }
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual StageType type() const = 0;
  virtual std::string name() const = 0;
  // At most kMaxStageConfigBytes; parse_stage() must accept exactly these bytes.
  virtual Bytes config() const = 0;
  virtual std::vector<std::string> input_ports() const { return {"in"}; }
  virtual std::vector<std::string> output_ports() const { return {"out"}; }

  // inputs.size() == input_ports().size(); fills outputs (one per output port).
  virtual void forward(const std::vector<ByteSpan>& inputs, std::vector<Bytes>& outputs,
                       const StageContext& ctx) const = 0;
  // The exact inverse: from the forward outputs, rebuilds the forward inputs.
  // Throws FormatError when the streams are malformed.
  virtual void inverse(const std::vector<ByteSpan>& outputs, std::vector<Bytes>& inputs,
                       const StageContext& ctx) const = 0;
  // Fused encoding of block-local chains (Pipeline::forward), the mirror of
  // the decoding below: a one-in, one-out stage whose forward turns block i of
  // its input into block i of its output returns the block coder...
  virtual BlockCoder forward_block_coder() const { return nullptr; }
  // ...a stage that can start such a chain returns its first output as a
  // source (nullptr if it cannot for this input)...
  virtual std::unique_ptr<ForwardSource> forward_source(const std::vector<ByteSpan>& inputs,
                                                        const StageContext& ctx) const {
    (void)inputs, (void)ctx;
    return nullptr;
  }
  // ...and a one-in, one-out stage that can end it codes its input of n bytes
  // from blocks `produce` gives (elimination::BlockProducer), returning false
  // if it cannot. Only the coded output is ever held whole.
  virtual bool forward_from_blocks(size_t n, const std::function<const uint8_t*(size_t, uint8_t*)>& produce,
                                   std::vector<Bytes>& outputs, const StageContext& ctx) const {
    (void)n, (void)produce, (void)outputs, (void)ctx;
    return false;
  }

  // Fused decoding of block-local chains (Pipeline::run_inverse): a one-in,
  // one-out stage whose inverse turns block i of its output into block i of
  // its input (kBlockBytes each, same total length) returns the block coder...
  virtual BlockCoder inverse_block_coder() const { return nullptr; }
  // ...and one whose inverse can start such a chain returns its output as a
  // block source (nullptr if it cannot). Throws FormatError as inverse() does.
  virtual std::unique_ptr<BlockSource> inverse_source(ByteSpan output, const StageContext& ctx) const {
    (void)output, (void)ctx;
    return nullptr;
  }

  // ...and one whose inverse can take output `port` block by block (its
  // other outputs given whole; outputs[port] is empty, port_bytes long)
  // returns a sink (nullptr if it cannot). Throws FormatError as inverse() does.
  virtual std::unique_ptr<BlockSink> inverse_sink(const std::vector<ByteSpan>& outputs, size_t port,
                                                  size_t port_bytes, const StageContext& ctx) const {
    (void)outputs, (void)port, (void)port_bytes, (void)ctx;
    return nullptr;
  }

  // The forward on the GPU (engine/src/cuda/, through device_forward.hpp), for stages that have
  // one in this build: it writes the same bytes as forward(). Inputs have
  // host-known sizes, but for stages that take sizes on the device
  // (device_forward_takes_device_sizes). These entry points are not virtual: they hand over to
  // the stage type's GPU part (kernels/<stage>/<stage>_stage_cuda.cpp,
  // stage_device.hpp), which only CUDA builds compile, so a stage's CPU files
  // know nothing of CUDA.
  bool has_device_forward() const;
  // False when forward_device leaves output `port`'s size on the device only
  // (data-dependent sizes: elimination coders, outlier streams).
  bool device_output_size_on_host(size_t port) const;
  // True when forward_device also takes inputs whose size only the device
  // knows (DeviceBuffer::device_size, with capacity set), so that the host
  // need not wait for the stage before (RZE and RRE after a Huffman stream).
  bool device_forward_takes_device_sizes() const;
  void forward_device(const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
                      DeviceWork& work) const;

  // The inverse on the GPU (engine/src/cuda/, through device_forward.hpp), the same bytes as
  // inverse(). Streams that came from the frame carry their host bytes too.
  // `max_stream_bytes` bounds every stream it rebuilds, as for inverse().
  bool has_device_inverse() const;
  // True when inverse_device reads its output's bytes on the host (its output
  // must then be a stream stored in the frame).
  bool device_inverse_reads_host_bytes() const;
  void inverse_device(const std::vector<DeviceBuffer>& outputs, std::vector<DeviceBuffer>& inputs,
                      DeviceWork& work, size_t max_stream_bytes) const;

  // An inverse whose inputs are pieces of its outputs (a merge's parts): fills
  // `inputs` with spans into `outputs` and returns true, or false when the
  // stage cannot (the caller then uses inverse()). The pipeline keeps the
  // outputs until it is done, so the pieces are never copied (issue 28: a
  // copy of the merged codes took half a spline chunk more). Throws
  // FormatError as inverse() does.
  virtual bool inverse_views(const std::vector<ByteSpan>& outputs, std::vector<ByteSpan>& inputs,
                             const StageContext& ctx) const {
    (void)outputs, (void)inputs, (void)ctx;
    return false;
  }

  // A one-input stage whose inverse can rebuild its input over its output
  // `port` (the same size; a fill mask puts its fill elements back into the
  // values) returns the port. The pipeline then hands it that output's own
  // memory (or the caller's chunk, which the stage before wrote the output
  // into), so the chunk is not held twice (issue 28: 2.5x the chunk beyond
  // HDF5's buffers with a fill value).
  virtual std::optional<size_t> inverse_in_place_port() const { return std::nullopt; }
  // `data` (`size` bytes) holds output `port` (outputs[port] points there) and
  // becomes the input. Throws FormatError as inverse() does.
  virtual void inverse_in_place(const std::vector<ByteSpan>& outputs, uint8_t* data, size_t size,
                                const StageContext& ctx) const {
    (void)outputs, (void)data, (void)size, (void)ctx;
    throw std::logic_error("inverse_in_place without inverse_in_place_port");
  }

  // For a stage of several inputs: input 0 written straight into `dst`
  // (capacity bytes; as inverse_into), the others into `rest` (inputs 1..).
  // Returns input 0's bytes, or nothing when the stage cannot.
  virtual std::optional<size_t> inverse_first_into(const std::vector<ByteSpan>& outputs, uint8_t* dst,
                                                   size_t capacity, std::vector<Bytes>& rest,
                                                   const StageContext& ctx) const {
    (void)outputs, (void)dst, (void)capacity, (void)rest, (void)ctx;
    return std::nullopt;
  }

  // For a stage whose one input is the chunk: the inverse written straight into
  // `dst` (capacity bytes), saving the last copy of a decoded chunk. Returns
  // the bytes written, or nothing when the stage cannot (or the result would
  // not fit) and the caller uses inverse(), which reports any error.
  virtual std::optional<size_t> inverse_into(const std::vector<ByteSpan>& outputs, uint8_t* dst, size_t capacity,
                                             const StageContext& ctx) const {
    (void)outputs, (void)dst, (void)capacity, (void)ctx;
    return std::nullopt;
  }
};

// Rebuilds a stage from its stored type id and config; throws FormatError for an
// unknown type (a frame from a newer version) or a config it does not accept.
std::unique_ptr<Stage> parse_stage(uint16_t type_id, ByteSpan config);

// The stages this build knows, by name, for tools.
std::string stage_type_name(uint16_t type_id);

// Each listed stage's parser (stage_list.inc), defined beside its kernels in
// kernels/<stage>/<stage>_stage.cpp; FormatError when the config is malformed.
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) std::unique_ptr<Stage> parse(ByteSpan config);
#include "common/stage/stage_list.inc"
#undef FZ_STAGE

// The parser of a stage whose config is one byte (a word width, a part
// count): `make` builds it, its UsageError becoming a FormatError.
std::unique_ptr<Stage> parse_single_byte_config(ByteSpan config, const char* stage,
                                                std::unique_ptr<Stage> (*make)(unsigned));
// `make()`'s UsageError (a value the stage refuses) as the FormatError of a
// stored config: "invalid <stage> stage config: ...".
std::unique_ptr<Stage> config_error_as_format_error(const char* stage,
                                                    const std::function<std::unique_ptr<Stage>()>& make);

}  // namespace fz::stage
