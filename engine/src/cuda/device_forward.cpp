#include "device_forward.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "common/error.hpp"
#include "crc32c.hpp"
#include "cuda/crc32c_cuda.hpp"
#include "cuda/device_context.hpp"
#include "cuda/value_range_cuda.hpp"
#include "frame.hpp"
#include "pipeline_cache.hpp"
#include "presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

// The most a lane's arena grows to (Lane::arena): chunks that need more take
// the rest from the pool, where its cost is small beside theirs.
constexpr size_t kArenaMaxBytes = size_t{64} << 20;

// Device memory for one chunk: from the lane's arena while it lasts, then from
// the pool; all of it given back (stream-ordered) when the chunk is done.
class ChunkWork final : public DeviceWork {
 public:
  ChunkWork(cuda::DeviceContext& context, cuda::Lane& lane) : context_(context), lane_(lane) {
    if (lane.arena_wanted > lane.arena_capacity) {
      context.release(lane.arena, lane.stream);
      lane.arena = nullptr;
      lane.arena_capacity = 0;
      lane.arena = static_cast<uint8_t*>(context.allocate(lane.arena_wanted, lane.stream));
      lane.arena_capacity = lane.arena_wanted;
    }
  }
  ~ChunkWork() override {
    for (void* p : allocations_) context_.release(p, lane_.stream);
    lane_.arena_wanted = std::min(std::max(lane_.arena_wanted, requested_), kArenaMaxBytes);
  }
  uint8_t* allocate(size_t bytes) override {
    cuda::DeviceContext::take_injected_allocation_failure();  // the arena counts as an allocation too
    const size_t aligned = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;  // as the pool aligns
    requested_ += aligned;
    if (lane_.arena && arena_used_ + aligned <= lane_.arena_capacity) {
      uint8_t* p = lane_.arena + arena_used_;
      arena_used_ += aligned;
      return p;
    }
    void* p = context_.allocate(bytes, lane_.stream);
    allocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return lane_.stream; }
  void check(int cuda_error, const char* what) override { cuda::check(static_cast<cudaError_t>(cuda_error), what); }
  uint32_t* status_word() override {
    uint32_t* word = zeroed_word();
    status_words_.push_back(word);
    return word;
  }
  void read_back(const uint8_t* device, size_t bytes, uint8_t* host) override {
    if (!bytes) return;
    uint8_t* pinned = lane_.scalars.reserve(bytes);
    cuda::check(cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, lane_.stream), "read back");
    cuda::check(cudaStreamSynchronize(lane_.stream), "read back");
    std::memcpy(host, pinned, bytes);
  }
  const std::vector<uint32_t*>& status_words() const { return status_words_; }

  // A zeroed device word. Status words and the like sit side by side in
  // blocks of kBlockWords, each cleared by one memset, so that one copy can
  // read them all back (WordsOnHost).
  static constexpr size_t kBlockWords = 16;
  uint32_t* zeroed_word() {
    if (word_blocks_.empty() || words_in_last_block_ == kBlockWords) {
      auto* block = reinterpret_cast<uint32_t*>(allocate(kBlockWords * sizeof(uint32_t)));
      cuda::check(cudaMemsetAsync(block, 0, kBlockWords * sizeof(uint32_t), lane_.stream), "status words");
      word_blocks_.push_back(block);
      words_in_last_block_ = 0;
    }
    return word_blocks_.back() + words_in_last_block_++;
  }
  const std::vector<uint32_t*>& word_blocks() const { return word_blocks_; }
  size_t words_in_last_block() const { return words_in_last_block_; }

 private:
  cuda::DeviceContext& context_;
  cuda::Lane& lane_;
  std::vector<void*> allocations_;  // from the pool
  size_t arena_used_ = 0;
  size_t requested_ = 0;
  std::vector<uint32_t*> status_words_;
  std::vector<uint32_t*> word_blocks_;
  size_t words_in_last_block_ = 0;
};

bool verbose() { return std::getenv("H5Z_FZ_VERBOSE") != nullptr; }

// A CUDA failure sends the chunk back to the CPU; a sticky one retires the
// device for the rest of the process, and is said even without H5Z_FZ_VERBOSE.
void give_up_on_gpu(cuda::DeviceContext* context, const cuda::CudaError& e, const char* verb) {
  if (e.sticky() && context) context->mark_broken();
  if (verbose() || e.sticky())
    std::fprintf(stderr, "H5Z-FZ: the GPU could not %s a chunk (%s); doing it on the CPU%s\n", verb, e.what(),
                 e.sticky() ? ", and every later chunk too" : "");
}

// How chunks cross PCIe from and to the caller's (pageable) memory: through
// the lane's pinned staging buffer in pieces, the copy into pinned memory of
// piece k+1 overlapping the DMA of piece k ("staged", the default), or handed
// to the driver as they are, which stages them itself ("direct").
// H5Z_FZ_GPU_COPY=staged|direct chooses, for measurements (docs/PERFORMANCE.md).
bool direct_copies() {
  static const bool direct = [] {
    const char* env = std::getenv("H5Z_FZ_GPU_COPY");
    return env && std::strcmp(env, "direct") == 0;
  }();
  return direct;
}

// Staged copies move kPiece bytes per DMA. The copies into and out of pinned
// memory are one parallel loop over kCopyItem parts of the whole chunk, which
// the pool's threads take in order: on the way up, the thread that finishes a
// piece's last part enqueues that piece's DMA; on the way down, a part waits
// for its piece's DMA. So the host copies and the DMAs overlap all along, and
// only one piece's copy is left when the last DMA ends. (H100 host, 16 cores:
// one thread copies 10-18 GB/s, eight 43 GB/s; pinned DMA runs at 50-54 GB/s;
// the pool gives a thread 16 parts, so a piece reaches 4 threads and 4 MiB
// all 16.) Against copying a whole 4 MiB piece before its DMA, one 16 MiB
// fzgpu chunk compressed in 918 instead of 1355 us; 512 KiB to 4 MiB pieces
// and 32 or 64 KiB parts were measured too, and were slower.
constexpr size_t kPiece = size_t{1} << 20;
constexpr size_t kCopyItem = size_t{16} << 10;
static_assert(kPiece % kCopyItem == 0, "a copy part never straddles two pieces");

size_t parts_of(size_t bytes) { return (bytes + kCopyItem - 1) / kCopyItem; }

void parallel_copy(uint8_t* dst, const uint8_t* src, size_t bytes, const Executor& exec) {
  exec.parallel_for(parts_of(bytes), [&](size_t i) {
    const size_t at = i * kCopyItem;
    std::memcpy(dst + at, src + at, std::min(kCopyItem, bytes - at));
  });
}

void upload(cuda::Lane& lane, ByteSpan host, uint8_t* device, const Executor& exec) {
  if (direct_copies()) {
    if (host.size)
      cuda::check(cudaMemcpyAsync(device, host.data, host.size, cudaMemcpyHostToDevice, lane.stream), "upload");
    return;
  }
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(host.size, 1));
  const size_t pieces = (host.size + kPiece - 1) / kPiece;
  std::vector<std::atomic<size_t>> parts_left(pieces);
  for (size_t k = 0; k < pieces; ++k) parts_left[k] = parts_of(std::min(kPiece, host.size - k * kPiece));
  // Pieces are enqueued in the order their copies finish: they are disjoint,
  // and everything later on the stream waits for all of them.
  exec.parallel_for(parts_of(host.size), [&](size_t i) {
    const size_t at = i * kCopyItem;
    std::memcpy(staging + at, host.data + at, std::min(kCopyItem, host.size - at));
    const size_t k = at / kPiece;
    if (parts_left[k].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      cuda::CurrentDeviceGuard guard(lane.device);  // a pool thread's current device may be another
      const size_t begin = k * kPiece;
      cuda::check(cudaMemcpyAsync(device + begin, staging + begin, std::min(kPiece, host.size - begin),
                                  cudaMemcpyHostToDevice, lane.stream),
                  "upload");
    }
  });
}

// Device memory into host memory through the staging buffer (see kPiece).
// Returns when everything enqueued on the lane's stream before it is done, too.
void download(cuda::Lane& lane, const uint8_t* device, size_t bytes, uint8_t* host, const Executor& exec) {
  if (direct_copies()) {
    if (bytes) cuda::check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, lane.stream), "download");
    cuda::check(cudaStreamSynchronize(lane.stream), "download");
    return;
  }
  if (bytes > lane.staging.capacity()) cuda::check(cudaStreamSynchronize(lane.stream), "download");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(bytes, 1));
  if (bytes <= kPiece) {  // one piece: no events needed
    if (bytes) cuda::check(cudaMemcpyAsync(staging, device, bytes, cudaMemcpyDeviceToHost, lane.stream), "download");
    cuda::check(cudaStreamSynchronize(lane.stream), "download");
    parallel_copy(host, staging, bytes, exec);
    return;
  }
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  while (lane.piece_events.size() < pieces) {
    cudaEvent_t event;
    cuda::check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    lane.piece_events.push_back(event);
  }
  for (size_t k = 0; k < pieces; ++k) {
    const size_t at = k * kPiece;
    cuda::check(cudaMemcpyAsync(staging + at, device + at, std::min(kPiece, bytes - at), cudaMemcpyDeviceToHost,
                                lane.stream),
                "download");
    cuda::check(cudaEventRecord(lane.piece_events[k], lane.stream), "cudaEventRecord");
  }
  std::vector<std::atomic<bool>> arrived(pieces);  // (the first part to see its event done says so)
  exec.parallel_for(parts_of(bytes), [&](size_t i) {
    const size_t at = i * kCopyItem;
    const size_t k = at / kPiece;
    if (!arrived[k].load(std::memory_order_acquire)) {
      cuda::CurrentDeviceGuard guard(lane.device);  // a pool thread's current device may be another
      cuda::check(cudaEventSynchronize(lane.piece_events[k]), "download");
      arrived[k].store(true, std::memory_order_release);
    }
    std::memcpy(host + at, staging + at, std::min(kCopyItem, bytes - at));
  });
  // The last event follows everything enqueued before the download.
}

// The facts a lossy preset needs of a chunk in device memory (presets.hpp),
// found on the device and read back in one small copy.
FiniteRange device_chunk_values(const uint8_t* chunk, size_t bytes, const DataType& dtype, const Options& options,
                                ChunkWork& work, cuda::Lane& lane) {
  FiniteRange values;
  const FactsNeeded needed = facts_needed(dtype, options);
  if (needed == FactsNeeded::kNone) return values;
  const auto fill = fill_bits(dtype, options);
  const bool big_endian = dtype.order == ByteOrder::Big;
  if (needed == FactsNeeded::kFillOnly) {
    auto* found = reinterpret_cast<uint32_t*>(work.allocate(sizeof(uint32_t)));
    work.check(cuda::contains_element(chunk, bytes, dtype.size, big_endian, *fill, found, lane.stream),
               "fill test (GPU)");
    uint32_t host_found = 0;
    work.read_back(reinterpret_cast<const uint8_t*>(found), sizeof host_found, reinterpret_cast<uint8_t*>(&host_found));
    values.has_fill = host_found != 0;
    return values;
  }
  auto* range = reinterpret_cast<cuda::DeviceRange*>(work.allocate(sizeof(cuda::DeviceRange)));
  void* scratch = work.allocate(cuda::finite_range_scratch_bytes(bytes, dtype.size));
  work.check(cuda::finite_range(chunk, bytes, dtype.size, big_endian, fill, range, scratch, lane.stream),
             "NOA range (GPU)");
  cuda::DeviceRange host_range;
  work.read_back(reinterpret_cast<const uint8_t*>(range), sizeof host_range, reinterpret_cast<uint8_t*>(&host_range));
  return cuda::to_finite_range(host_range, dtype.size);
}

// Every stage's forward on the device; returns every buffer of the pipeline.
std::vector<DeviceBuffer> run_forward(const Pipeline& pipeline, DeviceBuffer chunk, DeviceWork& work) {
  std::vector<DeviceBuffer> buffers{chunk};
  for (const StageNode& node : pipeline.nodes()) {
    std::vector<DeviceBuffer> in;
    for (uint8_t id : node.inputs) in.push_back(buffers.at(id));
    std::vector<DeviceBuffer> out;
    node.stage->forward_device(in, out, work);
    if (out.size() != node.output_count) throw std::logic_error("GPU stage produced the wrong number of streams");
    buffers.resize(std::max<size_t>(buffers.size(), node.first_output + node.output_count));
    for (size_t i = 0; i < out.size(); ++i) buffers[node.first_output + i] = out[i];
  }
  return buffers;
}

// ---- Forward pipelines replayed as CUDA graphs ----
//
// A small chunk's time on the GPU is mostly the host's: each launch, memset and
// pool allocation costs 1.5-4 us on the H100 machine, and a 4 KiB fzgpu chunk
// makes about twenty (docs/PERFORMANCE.md). So a lane keeps the forward of a
// pipeline that comes again as a CUDA graph, which owns its device buffers and
// replays all of the pipeline's launches as one. The key names everything the
// launches depend on: the chunk's size, data type and dims, the options, and
// the chunk's facts (the pipeline is a function of these, presets.hpp). NOA
// pipelines carry the chunk's value range, so they come again only when chunks
// share it. A key seen once is not captured: capturing and instantiating cost
// more than launching once. A pipeline whose stage reads a value back midway
// (Huffman's histogram) cannot be captured and always runs launch by launch.
// A small chunk's facts cost less on the host (a pass over L2-resident bytes)
// than the synchronisation that reads them back from the device.
constexpr size_t kHostFactsBytes = size_t{256} << 10;
// Beyond this size launches are a small share of a chunk's time. Measured on
// the H100 machine: with graphs up to 1 MiB, batches of 1 MiB NOA chunks whose
// keys came back now and then compressed at 4 GB/s, against 18 without graphs
// (capturing, instantiating and evicting them cost more than they saved).
constexpr size_t kGraphMaxChunkBytes = kHostFactsBytes;
static_assert(kGraphMaxChunkBytes <= kHostFactsBytes, "a graph's chunk is uploaded once its facts are known");
constexpr size_t kGraphsPerLane = 8;  // each owns a few times its chunk size
constexpr size_t kRecentKeys = 8;

}  // namespace

namespace cuda {

struct CapturedForward {
  std::string key;
  cudaGraphExec_t exec = nullptr;    // none: the pipeline cannot be captured
  uint8_t* input = nullptr;          // where the chunk goes before a replay
  std::vector<DeviceBuffer> buffers;  // every buffer of the pipeline, as run_forward returns them
  std::vector<void*> memory;          // owned
  CapturedForward() = default;
  CapturedForward(const CapturedForward&) = delete;
  CapturedForward& operator=(const CapturedForward&) = delete;
  ~CapturedForward() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    for (void* p : memory) (void)cudaFree(p);
  }
};

}  // namespace cuda

namespace {

struct NotCapturable {};

// Device memory for a graph being captured: its own (cudaMalloc, once per
// graph), kept as long as the graph.
class CaptureWork final : public DeviceWork {
 public:
  CaptureWork(cuda::CapturedForward& graph, cuda::Lane& lane) : graph_(graph), lane_(lane) {}
  uint8_t* allocate(size_t bytes) override {
    void* p = nullptr;
    cuda::check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc (graph buffers)");
    graph_.memory.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return lane_.stream; }
  void check(int cuda_error, const char* what) override { cuda::check(static_cast<cudaError_t>(cuda_error), what); }
  uint32_t* status_word() override {
    auto* word = reinterpret_cast<uint32_t*>(allocate(sizeof(uint32_t)));
    cuda::check(cudaMemsetAsync(word, 0, sizeof(uint32_t), lane_.stream), "status word");
    return word;
  }
  void read_back(const uint8_t*, size_t, uint8_t*) override { throw NotCapturable{}; }

 private:
  cuda::CapturedForward& graph_;
  cuda::Lane& lane_;
};

// A graph's key: its chunk's length and its pipeline's key.
std::string forward_key(size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        const FiniteRange& values) {
  std::string key(reinterpret_cast<const char*>(&bytes), sizeof bytes);
  return key + forward_pipeline_key(dtype, dims, options, values);
}

// The forward of `pipeline` for chunks of `bytes`, captured on the lane.
std::shared_ptr<cuda::CapturedForward> capture_forward(const Pipeline& pipeline, size_t bytes, cuda::Lane& lane,
                                                       const std::string& key) {
  auto graph = std::make_shared<cuda::CapturedForward>();
  graph->key = key;
  CaptureWork work(*graph, lane);
  graph->input = work.allocate(bytes);
  cuda::check(cudaStreamBeginCapture(lane.stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  cudaGraph_t captured = nullptr;
  try {
    graph->buffers = run_forward(pipeline, {graph->input, bytes}, work);
  } catch (...) {
    // Leave the stream out of capture mode whatever went wrong.
    if (cudaStreamEndCapture(lane.stream, &captured) == cudaSuccess && captured) (void)cudaGraphDestroy(captured);
    (void)cudaGetLastError();
    throw;
  }
  cuda::check(cudaStreamEndCapture(lane.stream, &captured), "cudaStreamEndCapture");
  const cudaError_t instantiated = cudaGraphInstantiate(&graph->exec, captured, 0);
  (void)cudaGraphDestroy(captured);
  cuda::check(instantiated, "cudaGraphInstantiate");
  return graph;
}

// The lane's graph for `key`: kept from before, or captured now when the key
// came lately; nothing when it did not or the pipeline cannot be captured.
cuda::CapturedForward* forward_graph(const Pipeline& pipeline, size_t bytes, cuda::Lane& lane,
                                     const std::string& key) {
  auto& graphs = lane.captured;
  for (size_t i = 0; i < graphs.size(); ++i)
    if (graphs[i]->key == key) {
      std::rotate(graphs.begin() + i, graphs.begin() + i + 1, graphs.end());  // most recently used last
      return graphs.back()->exec ? graphs.back().get() : nullptr;
    }
  auto& recent = lane.recent_keys;
  const auto seen = std::find(recent.begin(), recent.end(), key);
  if (seen == recent.end()) {
    recent.push_back(key);
    if (recent.size() > kRecentKeys) recent.erase(recent.begin());
    return nullptr;
  }
  recent.erase(seen);
  std::shared_ptr<cuda::CapturedForward> graph;
  try {
    graph = capture_forward(pipeline, bytes, lane, key);
  } catch (const NotCapturable&) {
    graph = std::make_shared<cuda::CapturedForward>();  // remembered, so never tried again
    graph->key = key;
  }
  if (graphs.size() >= kGraphsPerLane) graphs.erase(graphs.begin());
  graphs.push_back(graph);
  return graph->exec ? graph.get() : nullptr;
}

// The stored streams' sizes, those only the device knows read back in one copy.
std::vector<uint64_t> stored_sizes(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   cuda::Lane& lane) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  std::vector<uint64_t> sizes(ids.size());
  auto* pinned = reinterpret_cast<uint64_t*>(lane.scalars.reserve(8 * std::max<size_t>(ids.size(), 1)));
  bool any_on_device = false;
  for (size_t k = 0; k < ids.size(); ++k)
    if (buffers[ids[k]].device_size) {
      cuda::check(cudaMemcpyAsync(pinned + k, buffers[ids[k]].device_size, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  lane.stream),
                  "size download");
      any_on_device = true;
    }
  if (any_on_device) cuda::check(cudaStreamSynchronize(lane.stream), "GPU pipeline");
  for (size_t k = 0; k < ids.size(); ++k) sizes[k] = buffers[ids[k]].device_size ? pinned[k] : buffers[ids[k]].size;
  return sizes;
}

// Enqueues the download of the stored streams (`total` bytes), back to back,
// into the lane's staging buffer, which it returns; valid once the stream is
// synchronised.
const uint8_t* enqueue_stored_download(const std::vector<uint8_t>& ids, const std::vector<DeviceBuffer>& buffers,
                                       const std::vector<uint64_t>& sizes, size_t total, cuda::Lane& lane) {
  if (total > lane.staging.capacity()) cuda::check(cudaStreamSynchronize(lane.stream), "upload");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(total, 1));
  size_t at = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (sizes[k])
      cuda::check(cudaMemcpyAsync(staging + at, buffers[ids[k]].data, sizes[k], cudaMemcpyDeviceToHost, lane.stream),
                  "stream download");
    at += sizes[k];
  }
  return staging;
}

// The stored streams, downloaded back to back; the Bytes are cut from them.
std::vector<Bytes> download_stored(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   cuda::Lane& lane) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  const std::vector<uint64_t> sizes = stored_sizes(pipeline, buffers, lane);
  size_t total = 0;
  for (uint64_t s : sizes) total += s;
  const uint8_t* out = enqueue_stored_download(ids, buffers, sizes, total, lane);
  cuda::check(cudaStreamSynchronize(lane.stream), "stream download");
  size_t at = 0;
  std::vector<Bytes> stored;
  for (size_t k = 0; k < ids.size(); ++k) {
    stored.emplace_back(out + at, out + at + sizes[k]);
    at += sizes[k];
  }
  return stored;
}

// The frame of a chunk whose stored streams are on the device: their sizes
// and payload CRC32C (computed there) come back in one small read, the
// streams in one download through the staging buffer, and the frame is the
// host-built header followed by a parallel copy of the streams (no pass of
// the host over the payload for its checksum). The frame goes into `target`
// when it fits there and is smaller than the chunk (FrameTarget), else into
// FrameOut::frame.
FrameOut frame_from_device(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers, FrameInfo info,
                                   ChunkWork& work, cuda::Lane& lane, const Executor& exec, FrameTarget target);

FrameInfo frame_info_for(const Pipeline& pipeline, const DataType& dtype, const std::vector<uint64_t>& dims,
                         Preset preset, size_t bytes) {
  FrameInfo info;
  info.preset = preset;
  info.dtype = dtype;
  info.dims = dims;
  info.original_bytes = bytes;
  info.stages = pipeline.stage_infos();
  return info;
}

// Payloads of this size or more are checksummed on the GPU, both ways; smaller
// ones on the host, where it costs less than the GPU's launches (the fixed
// cost per chunk counts most for them): the host's CRC32C runs at 4-8 GB/s,
// 64 KiB in 8-16 us, about what the GPU's launches and read-back cost.
constexpr size_t kDeviceCrcMinBytes = size_t{64} << 10;

// The checksum of the concatenated device spans (`total` bytes), enqueued:
// a word of the chunk's word blocks, so it comes back with the status words
// (WordsOnHost) or on its own.
uint32_t* enqueue_crc32c(const std::vector<cuda::DeviceSpan>& spans, size_t total, ChunkWork& work,
                         cuda::Lane& lane) {
  uint32_t* crc = work.zeroed_word();
  void* scratch = work.allocate(std::max<size_t>(cuda::crc32c_scratch_bytes(total, spans.size()), 1));
  work.check(cuda::crc32c_spans(spans.data(), spans.size(), crc, scratch, lane.stream), "CRC32C (GPU)");
  return crc;
}

// The checksum of device bytes, read back.
uint32_t device_crc32c(const uint8_t* data, size_t bytes, ChunkWork& work, cuda::Lane& lane) {
  const uint32_t* crc = enqueue_crc32c({{data, bytes}}, bytes, work, lane);
  uint32_t host = 0;
  work.read_back(reinterpret_cast<const uint8_t*>(crc), sizeof host, reinterpret_cast<uint8_t*>(&host));
  return host;
}

// The decoders' status words (and `extra`, a checksum: both from
// ChunkWork::zeroed_word) read back with whatever the caller enqueues next,
// in one synchronisation; valid once the stream is synchronised. Words in one
// block come back in one copy.
class WordsOnHost {
 public:
  WordsOnHost(ChunkWork& work, cuda::Lane& lane, const uint32_t* extra) {
    constexpr size_t kWords = ChunkWork::kBlockWords;
    const auto& blocks = work.word_blocks();
    auto* pinned = reinterpret_cast<uint32_t*>(lane.scalars.reserve(std::max<size_t>(blocks.size(), 1) * kWords * 4));
    for (size_t k = 0; k < blocks.size(); ++k) {
      const size_t used = k + 1 == blocks.size() ? work.words_in_last_block() : kWords;
      cuda::check(cudaMemcpyAsync(pinned + k * kWords, blocks[k], used * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                  lane.stream),
                  "status download");
    }
    words_ = pinned;
    // Where a word lands: its block's place, then its place in the block.
    auto slot = [&](const uint32_t* word) {
      for (size_t k = 0; k < blocks.size(); ++k)
        if (std::less_equal<const uint32_t*>()(blocks[k], word) && std::less<const uint32_t*>()(word, blocks[k] + kWords))
          return k * kWords + static_cast<size_t>(word - blocks[k]);
      throw std::logic_error("a word read back that ChunkWork::zeroed_word did not make");
    };
    for (const uint32_t* w : work.status_words()) status_at_.push_back(slot(w));
    if (extra) extra_at_ = slot(extra);
  }
  // A GPU decoder found its stream malformed.
  bool any_status_set() const {
    for (size_t at : status_at_)
      if (words_[at] != 0) return true;
    return false;
  }
  uint32_t extra() const { return words_[extra_at_]; }

 private:
  const uint32_t* words_ = nullptr;
  std::vector<size_t> status_at_;
  size_t extra_at_ = 0;
};

// Streams whose allocations come to no more than this go down whole with
// their sizes, in one synchronisation instead of two (sizes, then streams):
// the extra bytes cost less than a round trip (8 us; 128 KiB take 3 us).
constexpr size_t kOneTripMaxBytes = size_t{128} << 10;

// Whether a frame of `length` bytes goes into the target.
bool goes_to_target(const FrameTarget& target, size_t length, const FrameInfo& info) {
  return target.data != nullptr && length <= target.capacity && length < info.original_bytes;
}

// The frame of a small chunk in one trip (in the target when it goes there),
// or nothing when a stored stream's allocation is unknown or the streams are
// too large for it.
std::optional<FrameOut> small_frame_from_device(const std::vector<uint8_t>& ids,
                                                const std::vector<DeviceBuffer>& buffers, FrameInfo& info,
                                                cuda::Lane& lane, FrameTarget target) {
  size_t bound = 0;
  for (uint8_t id : ids) {
    const DeviceBuffer& b = buffers[id];
    if (b.device_size && !b.capacity) return std::nullopt;
    bound += b.device_size ? b.capacity : b.size;
  }
  if (bound > kOneTripMaxBytes) return std::nullopt;
  if (bound > lane.staging.capacity()) cuda::check(cudaStreamSynchronize(lane.stream), "download");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(bound, 1));
  auto* device_sizes = reinterpret_cast<uint64_t*>(lane.scalars.reserve(8 * std::max<size_t>(ids.size(), 1)));
  std::vector<size_t> at(ids.size());
  size_t offset = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceBuffer& b = buffers[ids[k]];
    const size_t whole = b.device_size ? b.capacity : b.size;
    at[k] = offset;
    if (b.device_size)
      cuda::check(cudaMemcpyAsync(device_sizes + k, b.device_size, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  lane.stream),
                  "size download");
    if (whole)
      cuda::check(cudaMemcpyAsync(staging + offset, b.data, whole, cudaMemcpyDeviceToHost, lane.stream),
                  "stream download");
    offset += whole;
  }
  cuda::check(cudaStreamSynchronize(lane.stream), "stream download");
  std::vector<uint64_t> sizes(ids.size());
  uint32_t crc = 0;
  size_t total = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceBuffer& b = buffers[ids[k]];
    sizes[k] = b.device_size ? device_sizes[k] : b.size;
    if (b.device_size && sizes[k] > b.capacity) throw std::logic_error("a GPU stage wrote past its allocation");
    crc = crc32c(staging + at[k], sizes[k], crc);
    total += sizes[k];
  }
  const Bytes header = write_frame_header(info, sizes, crc);
  FrameOut out;
  uint8_t* frame = target.data;
  if (goes_to_target(target, header.size() + total, info)) {
    out.written = header.size() + total;
  } else {
    out.frame.resize(header.size() + total);
    frame = out.frame.data();
  }
  std::memcpy(frame, header.data(), header.size());
  frame += header.size();
  for (size_t k = 0; k < ids.size(); ++k) {
    std::memcpy(frame, staging + at[k], sizes[k]);
    frame += sizes[k];
  }
  return out;
}

FrameOut frame_from_device(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers, FrameInfo info,
                                   ChunkWork& work, cuda::Lane& lane, const Executor& exec, FrameTarget target) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (std::optional<FrameOut> frame = small_frame_from_device(ids, buffers, info, lane, target))
    return std::move(*frame);
  const std::vector<uint64_t> sizes = stored_sizes(pipeline, buffers, lane);
  std::vector<cuda::DeviceSpan> spans;
  size_t total = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    spans.push_back({buffers[ids[k]].data, static_cast<size_t>(sizes[k])});
    total += sizes[k];
  }
  // A frame no smaller than the chunk gives way to the raw one: not brought
  // back at all (noise under a tight bound makes Lorenzo's outliers several
  // times the chunk, which took that much host memory only to be dropped).
  if (write_frame_header(info, sizes, 0).size() + total >= info.original_bytes) {
    FrameOut out;
    out.not_smaller = true;
    return out;
  }
  const bool crc_on_device = total >= kDeviceCrcMinBytes;
  const uint32_t* crc = crc_on_device ? enqueue_crc32c(spans, total, work, lane) : nullptr;
  const uint8_t* staging = enqueue_stored_download(ids, buffers, sizes, total, lane);
  const WordsOnHost words(work, lane, crc);
  // The frame's memory is made (zeroed, its pages faulted in) while the GPU
  // finishes, unless it goes to the target: the header's length does not
  // depend on the checksum, which is set once known.
  Bytes header = write_frame_header(info, sizes, 0);
  const size_t header_bytes = header.size();
  const bool to_target = goes_to_target(target, header_bytes + total, info);
  FrameOut out;
  if (!to_target) out.frame.resize(header_bytes + total);
  cuda::check(cudaStreamSynchronize(lane.stream), "stream download");
  set_payload_crc(header, info, crc_on_device ? words.extra() : crc32c(staging, total));
  // Nothing below throws: the target (maybe the chunk itself) is written only now.
  uint8_t* frame = to_target ? target.data : out.frame.data();
  std::memcpy(frame, header.data(), header_bytes);
  parallel_copy(frame + header_bytes, staging, total, exec);
  if (to_target) out.written = header_bytes + total;
  return out;
}

// Every stage's inverse on the device, from the stored streams' views; returns
// the chunk's view.
DeviceBuffer run_inverse(const Pipeline& pipeline, std::vector<DeviceBuffer> view, ChunkWork& work,
                         size_t max_stream_bytes) {
  const auto& nodes = pipeline.nodes();
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
    std::vector<DeviceBuffer> outs;
    for (size_t i = 0; i < node->output_count; ++i) outs.push_back(view[node->first_output + i]);
    std::vector<DeviceBuffer> ins;
    node->stage->inverse_device(outs, ins, work, max_stream_bytes);
    if (ins.size() != node->inputs.size()) throw std::logic_error("GPU inverse produced the wrong number of streams");
    for (size_t i = 0; i < ins.size(); ++i) view[node->inputs[i]] = ins[i];
  }
  return view[Pipeline::kChunk];
}

}  // namespace

bool runs_on_device(const Pipeline& pipeline) {
  // Buffers whose size only the device knows may be stored, not fed to a stage.
  std::vector<bool> size_on_device(1, false);
  for (const StageNode& node : pipeline.nodes()) {
    if (!node.stage->has_device_forward()) return false;
    for (uint8_t id : node.inputs)
      if (id < size_on_device.size() && size_on_device[id]) return false;
    size_on_device.resize(std::max<size_t>(size_on_device.size(), node.first_output + node.output_count), false);
    for (size_t i = 0; i < node.output_count; ++i)
      size_on_device[node.first_output + i] = !node.stage->device_output_size_on_host(i);
  }
  return true;
}

std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device) {
  if (!runs_on_device(pipeline)) return std::nullopt;
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    ChunkWork work(*context, *lane);  // device memory goes back to the pool when it ends
    uint8_t* device_chunk = work.allocate(chunk.size);
    upload(*lane, chunk, device_chunk, *make_pool_executor(0));
    return download_stored(pipeline, run_forward(pipeline, {device_chunk, chunk.size}, work), *lane);
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "compress");
    return std::nullopt;
  }
}

std::optional<FrameOut> compress_on_device(ByteSpan chunk, const DataType& dtype,
                                                   const std::vector<uint64_t>& dims, const Options& options,
                                                   int device, unsigned threads, FrameTarget target) {
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    ChunkWork work(*context, *lane);
    const auto exec = make_pool_executor(threads);
    uint8_t* device_chunk = nullptr;
    FiniteRange values;
    if (chunk.size <= kHostFactsBytes) {
      values = chunk_values(dtype, options, chunk, *exec);
    } else {
      device_chunk = work.allocate(chunk.size);
      upload(*lane, chunk, device_chunk, *exec);
      values = device_chunk_values(device_chunk, chunk.size, dtype, options, work, *lane);
    }
    const std::shared_ptr<const Pipeline> cached = cached_forward_pipeline(dtype, dims, options, values);
    const Pipeline& pipeline = *cached;
    if (!runs_on_device(pipeline)) return std::nullopt;
    cuda::CapturedForward* graph =
        chunk.size <= kGraphMaxChunkBytes
            ? forward_graph(pipeline, chunk.size, *lane, forward_key(chunk.size, dtype, dims, options, values))
            : nullptr;
    std::vector<DeviceBuffer> buffers;
    if (graph) {  // (its chunk's facts came from the host: the chunk is not uploaded yet)
      upload(*lane, chunk, graph->input, *exec);
      cuda::check(cudaGraphLaunch(graph->exec, lane->stream), "cudaGraphLaunch");
      buffers = graph->buffers;
    } else {
      if (!device_chunk) {
        device_chunk = work.allocate(chunk.size);
        upload(*lane, chunk, device_chunk, *exec);
      }
      buffers = run_forward(pipeline, {device_chunk, chunk.size}, work);
    }
    return frame_from_device(pipeline, buffers, frame_info_for(pipeline, dtype, dims, options.preset, chunk.size), work,
                             *lane, *exec, target);
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "compress");
    return std::nullopt;
  }
}

ForwardGraphCounts forward_graph_counts(int device) {
  cuda::LaneLease lane = cuda::DeviceContext::of(device).lease();
  ForwardGraphCounts counts;
  for (const auto& graph : lane->captured) ++(graph->exec ? counts.captured : counts.uncapturable);
  counts.last_is_graph = !lane->captured.empty() && lane->captured.back()->exec;
  return counts;
}

bool inverse_runs_on_device(const Pipeline& pipeline) {
  const std::vector<uint8_t> stored = pipeline.stored_buffers();
  for (const StageNode& node : pipeline.nodes()) {
    if (!node.stage->has_device_inverse()) return false;
    if (node.stage->device_inverse_reads_host_bytes())
      for (size_t i = 0; i < node.output_count; ++i)
        if (std::find(stored.begin(), stored.end(), node.first_output + i) == stored.end()) return false;
  }
  return !pipeline.nodes().empty();
}

std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device,
                                        unsigned threads, std::optional<uint32_t> payload_crc) {
  if (!inverse_runs_on_device(pipeline)) return std::nullopt;
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (stored.size() != ids.size()) return std::nullopt;  // the CPU path reports it
  size_t total = 0;
  for (const ByteSpan& s : stored) total += s.size;
  // A small payload's checksum costs less on the host than the GPU's launches.
  const bool crc_on_device = payload_crc && total >= kDeviceCrcMinBytes;
  if (payload_crc && !crc_on_device) {
    uint32_t crc = 0;
    for (const ByteSpan& s : stored) crc = crc32c(s.data, s.size, crc);
    if (crc != *payload_crc) return std::nullopt;  // the CPU path reports it
  }
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    ChunkWork work(*context, *lane);
    // The streams go up together, back to back (the frame's payload): in one
    // staged upload when they lie so in host memory, as parse_frame gives them.
    uint8_t* device_streams = work.allocate(total);
    const auto exec = make_pool_executor(threads);
    std::vector<DeviceBuffer> view(256);
    bool contiguous = true;
    size_t at = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k && stored[k].size && stored[k].data != stored[k - 1].data + stored[k - 1].size) contiguous = false;
      view[ids[k]] = {device_streams + at, stored[k].size, nullptr, stored[k].data};
      at += stored[k].size;
    }
    if (contiguous && !stored.empty()) {
      upload(*lane, ByteSpan(stored[0].data, total), device_streams, *exec);
    } else {
      uint8_t* staging = lane->staging.reserve(std::max<size_t>(total, 1));
      at = 0;
      for (const ByteSpan& s : stored) {
        parallel_copy(staging + at, s.data, s.size, *exec);
        at += s.size;
      }
      cuda::check(cudaMemcpyAsync(device_streams, staging, total, cudaMemcpyHostToDevice, lane->stream),
                  "frame upload");
    }
    const uint32_t* device_crc = crc_on_device ? enqueue_crc32c({{device_streams, total}}, total, work, *lane) : nullptr;
    const DeviceBuffer chunk = run_inverse(pipeline, view, work, max_stream_bytes);
    if (chunk.size > capacity) return std::nullopt;  // the CPU path reports it
    // The status words and the checksum come back with the chunk, in one
    // synchronisation; a set word or a wrong checksum means a malformed or
    // corrupted frame (dst then holds garbage, which the CPU decoder
    // overwrites or reports).
    const WordsOnHost words(work, *lane, device_crc);
    download(*lane, chunk.data, chunk.size, dst, *exec);
    if (words.any_status_set()) return std::nullopt;  // the CPU decoder names the problem
    if (crc_on_device && words.extra() != *payload_crc) return std::nullopt;
    return chunk.size;
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "decompress");
    return std::nullopt;
  } catch (const FormatError&) {
    return std::nullopt;  // the CPU decoder reports it, with the same checks
  }
}

// ---- Device-resident ----

std::optional<int> device_of_pointer(const void* pointer) {
  if (!pointer) return std::nullopt;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return std::nullopt;
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) return std::nullopt;
  return attributes.device;
}

std::optional<size_t> compress_device_resident(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                                               const std::vector<uint64_t>& dims, const Options& options,
                                               uint8_t* frame, size_t capacity, int device) {
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  if (context.broken()) throw Error("the GPU is unusable after an earlier CUDA error");
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  ChunkWork work(context, *lane);
  const FiniteRange values = device_chunk_values(chunk, bytes, dtype, options, work, *lane);
  const std::shared_ptr<const Pipeline> cached = cached_forward_pipeline(dtype, dims, options, values);
  const Pipeline& pipeline = *cached;
  if (!runs_on_device(pipeline)) return std::nullopt;
  const std::vector<DeviceBuffer> buffers = run_forward(pipeline, {const_cast<uint8_t*>(chunk), bytes}, work);
  const std::vector<uint64_t> sizes = stored_sizes(pipeline, buffers, *lane);
  uint64_t payload = 0;
  for (uint64_t s : sizes) payload += s;

  FrameInfo info = frame_info_for(pipeline, dtype, dims, options.preset, bytes);
  // The header's length does not depend on the checksum, which is set once known.
  Bytes header = write_frame_header(info, sizes, 0);
  const uint8_t* raw_source = nullptr;
  if (header.size() + payload >= bytes) {  // incompressible: the chunk itself, as compress() does
    info = frame_info_for(Pipeline(), dtype, dims, options.preset, bytes);
    info.flags = kFlagRaw;
    header = write_frame_header(info, {bytes}, 0);
    payload = bytes;
    raw_source = chunk;
  }
  const size_t header_bytes = header.size();
  if (header_bytes + payload > capacity)
    throw Error("the frame needs " + std::to_string(header_bytes + payload) + " bytes of device memory, " +
                std::to_string(capacity) + " given (max_frame_bytes() always suffices)");
  if (raw_source) {
    if (bytes)
      cuda::check(cudaMemcpyAsync(frame + header_bytes, raw_source, bytes, cudaMemcpyDeviceToDevice, lane->stream),
                  "frame payload");
  } else {
    const std::vector<uint8_t> ids = pipeline.stored_buffers();
    size_t at = header_bytes;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (sizes[k])
        cuda::check(cudaMemcpyAsync(frame + at, buffers[ids[k]].data, sizes[k], cudaMemcpyDeviceToDevice,
                                    lane->stream),
                    "frame payload");
      at += sizes[k];
    }
  }
  set_payload_crc(header, info, device_crc32c(frame + header_bytes, payload, work, *lane));
  uint8_t* pinned = lane->scalars.reserve(header.size());
  std::memcpy(pinned, header.data(), header.size());
  cuda::check(cudaMemcpyAsync(frame, pinned, header.size(), cudaMemcpyHostToDevice, lane->stream), "frame header");
  cuda::check(cudaStreamSynchronize(lane->stream), "frame header");
  return header.size() + payload;
}

Bytes read_device_frame_header(const uint8_t* frame, size_t frame_bytes, int device) {
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  // Headers are short (tens of bytes per stage): one read usually gets it all.
  constexpr size_t kFirstRead = 1024;
  Bytes header(std::min(frame_bytes, kFirstRead));
  ChunkWork work(context, *lane);
  work.read_back(frame, header.size(), header.data());
  const size_t header_bytes = frame_header_bytes(header.data(), header.size());
  if (header_bytes > header.size() && header_bytes <= frame_bytes) {
    header.resize(header_bytes);
    work.read_back(frame, header_bytes, header.data());
  }
  return header;
}

std::optional<size_t> decompress_device_resident(const Pipeline& pipeline, const FrameInfo& info,
                                                 const uint8_t* frame, uint8_t* out, size_t capacity,
                                                 size_t max_stream_bytes, int device) {
  if (!info.raw && !inverse_runs_on_device(pipeline)) return std::nullopt;
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  if (context.broken()) throw Error("the GPU is unusable after an earlier CUDA error");
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  ChunkWork work(context, *lane);
  const uint8_t* payload = frame + info.header_bytes;
  const size_t payload_bytes = info.frame_bytes - info.header_bytes;
  if (device_crc32c(payload, payload_bytes, work, *lane) != info.payload_crc)
    throw FormatError("FZM frame payload checksum mismatch (corrupted)");
  if (info.original_bytes > capacity)
    throw FormatError("frame decodes to " + std::to_string(info.original_bytes) + " bytes, more than the " +
                      std::to_string(capacity) + " allowed");
  if (info.raw) {
    if (payload_bytes)
      cuda::check(cudaMemcpyAsync(out, payload, payload_bytes, cudaMemcpyDeviceToDevice, lane->stream), "raw frame");
    cuda::check(cudaStreamSynchronize(lane->stream), "raw frame");
    return payload_bytes;
  }
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (ids.size() != info.stored_sizes.size()) return std::nullopt;  // the host path reports it
  std::vector<DeviceBuffer> view(256);
  size_t at = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    view[ids[k]] = {const_cast<uint8_t*>(payload) + at, static_cast<size_t>(info.stored_sizes[k]), nullptr, nullptr};
    at += info.stored_sizes[k];
  }
  try {
    const DeviceBuffer chunk = run_inverse(pipeline, view, work, max_stream_bytes);
    if (chunk.size != info.original_bytes || chunk.size > capacity) return std::nullopt;
    // As in inverse_on_device: statuses and the chunk in one synchronisation;
    // on a set status `out` holds garbage that the host path overwrites.
    const WordsOnHost words(work, *lane, nullptr);
    if (chunk.size)
      cuda::check(cudaMemcpyAsync(out, chunk.data, chunk.size, cudaMemcpyDeviceToDevice, lane->stream), "chunk");
    cuda::check(cudaStreamSynchronize(lane->stream), "GPU pipeline inverse");
    if (words.any_status_set()) return std::nullopt;
    return chunk.size;
  } catch (const FormatError&) {
    return std::nullopt;  // the host decoder reports it
  }
}

void copy_device_to_host(const uint8_t* device_src, size_t bytes, uint8_t* host_dst, int device) {
  cuda::CurrentDeviceGuard guard(device);
  cuda::check(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost), "device to host copy");
}

void copy_host_to_device(const uint8_t* host_src, size_t bytes, uint8_t* device_dst, int device) {
  cuda::CurrentDeviceGuard guard(device);
  cuda::check(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice), "host to device copy");
}

}  // namespace fz::engine
