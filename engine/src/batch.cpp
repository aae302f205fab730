// The batch API: many chunks through compress()/decompress_into(), several in
// flight. Each chunk's frame is exactly the one compress() writes, so a batch
// changes speed only. The concurrency comes from worker threads, each taking
// the next chunk: on the GPU each worker leases its own lane (stream + pinned
// staging; cuda/device_context.hpp), so one chunk's uploads and downloads
// overlap another's kernels; on the CPU the workers share the thread budget.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "api_internal.hpp"
#include "device_forward.hpp"
#include "fz/fz.hpp"
#include "policy.hpp"
#include "thread_pool.hpp"

namespace fz {
namespace {

// Chunks on the GPU at once, at least: one uploading, one in kernels, one
// downloading, and one being framed on the host. With more CPU threads than
// that there is one worker (and one lane) per thread, since each chunk's
// copies through pinned memory are CPU work too.
constexpr unsigned kGpuChunksInFlight = 4;

// Chunks of device-memory batches (decompress_batch_to_device,
// compress_each_on_device) in flight on one device at once, across every
// call of the process: concurrent calls (zarr's batches, a program's
// threads) share kGpuChunksInFlight slots a device. More in flight does not
// keep the GPU busier, the host's CUDA calls only contend: four calls of 64
// frames at once (16 decodes in flight) took 2-3 ms a 4 MiB frame, one call
// alone (4 in flight) 0.1-0.3 ms (docs/PERFORMANCE.md, "Zarr 3 with GPU
// buffers").
class DeviceSlots {
 public:
  explicit DeviceSlots(int device) : slots_(of(device)) {
    std::unique_lock<std::mutex> lock(slots_.mutex);
    slots_.free.wait(lock, [&] { return slots_.taken < kGpuChunksInFlight; });
    ++slots_.taken;
  }
  ~DeviceSlots() {
    {
      std::lock_guard<std::mutex> lock(slots_.mutex);
      --slots_.taken;
    }
    slots_.free.notify_one();
  }
  DeviceSlots(const DeviceSlots&) = delete;
  DeviceSlots& operator=(const DeviceSlots&) = delete;

 private:
  struct Slots {
    std::mutex mutex;
    std::condition_variable free;
    unsigned taken = 0;
  };
  static Slots& of(int device) {
    static Slots per_device[64];  // (device numbers beyond share a slot set: a bound, not an error)
    return per_device[static_cast<unsigned>(device) % 64];
  }
  Slots& slots_;
};

// The workers a batch of `items` runs on, and the CPU threads each item may
// use, out of `threads`.
struct WorkSplit {
  unsigned workers = 1;
  unsigned threads_per_item = 1;
};
WorkSplit split_work(const engine::Policy& policy, size_t items);

// Runs body(i) for every i in [0, count) on `workers` threads (the caller
// included). Every item runs even when some throw; the first failure (lowest
// index) is rethrown, prefixed with the item's name.
template <typename Body>
void run_items(size_t count, unsigned workers, const char* item, Body body) {
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  size_t failed_index = count;
  std::string failure;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        body(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (i < failed_index) {
          failed_index = i;
          failure = e.what();
        }
      }
    }
  };
  workers = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(workers, count)));
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < workers; ++w) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  if (failed_index < count) throw Error(std::string(item) + " " + std::to_string(failed_index) + ": " + failure);
}

WorkSplit split_work(const engine::Policy& policy, size_t items) {
  const unsigned threads = policy.threads ? policy.threads : engine::default_thread_count();
  WorkSplit split;
  split.workers = policy.backend == engine::Backend::Cuda ? std::max(kGpuChunksInFlight, threads) : threads;
  // Each worker gets an equal share of the CPU threads for its own item.
  split.threads_per_item =
      std::max(1u, threads / std::max<unsigned>(1, static_cast<unsigned>(std::min<size_t>(split.workers, items))));
  return split;
}

// One room a chunk, each with memory where it has room.
void check_rooms(size_t chunks, const std::vector<FrameRoom>& rooms, const char* what) {
  if (rooms.size() != chunks)
    throw Error(std::string(what) + ": " + std::to_string(rooms.size()) + " frame rooms for " +
                std::to_string(chunks) + " chunks");
  for (size_t i = 0; i < rooms.size(); ++i)
    if (rooms[i].data == nullptr && rooms[i].capacity > 0)
      throw Error(std::string(what) + ": the frame room of chunk " + std::to_string(i) + " is null");
}

// Device memory of one device for a batch's staging, given back when the
// batch is done.
struct DeviceStaging {
  uint8_t* data;
  int device;
  DeviceStaging(size_t bytes, int owner) : data(engine::allocate_device(bytes, owner)), device(owner) {}
  ~DeviceStaging() { engine::free_device(data, device); }
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;
};

// A batch's compression: the options and every chunk checked before any
// work (a bad chunk named by index), then body(i, options for one chunk) for
// each chunk on the batch's workers.
template <typename Body>
void compress_each(const std::vector<ChunkView>& chunks, const DataType& dtype, const Options& options,
                   const std::string& what, Body body) {
  validate(options, dtype);
  for (size_t i = 0; i < chunks.size(); ++i) {
    try {
      checked_chunk_dims(chunks[i].data, chunks[i].bytes, dtype, chunks[i].dims);
    } catch (const Error& e) {
      throw Error(what + ": chunk " + std::to_string(i) + ": " + e.what());
    }
  }
  const WorkSplit split = split_work(engine::resolve_policy(options), chunks.size());
  Options per_chunk = options;
  per_chunk.threads = split.threads_per_item;
  const std::string item = what + ": chunk";
  run_items(chunks.size(), split.workers, item.c_str(), [&](size_t i) { body(i, per_chunk); });
}

}  // namespace

std::vector<Bytes> compress_batch(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                  const Options& options) {
  std::vector<Bytes> frames(chunks.size());
  compress_each(chunks, dtype, options, "compress_batch", [&](size_t i, const Options& per_chunk) {
    frames[i] = compress(chunks[i].data, chunks[i].bytes, dtype, chunks[i].dims, per_chunk);
  });
  return frames;
}

std::vector<size_t> compress_batch_into(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                        const Options& options, const std::vector<FrameRoom>& rooms) {
  check_rooms(chunks.size(), rooms, "compress_batch_into");
  std::vector<size_t> lengths(chunks.size(), 0);
  compress_each(chunks, dtype, options, "compress_batch_into", [&](size_t i, const Options& per_chunk) {
    lengths[i] = compress_into(chunks[i].data, chunks[i].bytes, dtype, chunks[i].dims, per_chunk, rooms[i].data,
                               rooms[i].capacity);
  });
  return lengths;
}

std::vector<size_t> decompress_batch(const std::vector<FrameView>& frames, const Options& policy) {
  const WorkSplit split = split_work(engine::resolve_policy(policy), frames.size());
  Options per_frame = policy;
  per_frame.threads = split.threads_per_item;
  std::vector<size_t> lengths(frames.size(), 0);
  run_items(frames.size(), split.workers, "decompress_batch: frame", [&](size_t i) {
    lengths[i] = decompress_into(frames[i].frame, frames[i].frame_bytes, frames[i].out, frames[i].capacity, per_frame);
  });
  return lengths;
}

std::vector<size_t> decompress_batch_to_device(const std::vector<FrameView>& frames, const Options& policy) {
  std::vector<size_t> lengths(frames.size(), 0);
  if (frames.empty()) return lengths;
  int device = -1;
  std::vector<size_t> offsets(frames.size() + 1, 0);
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].frame == nullptr && frames[i].frame_bytes > 0)
      throw Error("decompress_batch_to_device: frame " + std::to_string(i) + " is null");
    const int owner = owning_device(frames[i].out, "decompress_batch_to_device: an output buffer");
    if (device >= 0 && owner != device)
      throw Error("decompress_batch_to_device: the output buffers are on different devices");
    device = owner;
    // 256-byte aligned frames in one allocation, as cudaMalloc aligns one.
    const size_t padded = (frames[i].frame_bytes + 255) & ~size_t{255};
    if (padded < frames[i].frame_bytes || __builtin_add_overflow(offsets[i], padded, &offsets[i + 1]))
      throw Error("decompress_batch_to_device: frames too large");
  }
  const DeviceStaging staging(offsets.back(), device);
  run_items(frames.size(), kGpuChunksInFlight, "decompress_batch_to_device: frame", [&](size_t i) {
    const DeviceSlots slot(device);
    uint8_t* frame = staging.data + offsets[i];
    engine::copy_host_to_device(static_cast<const uint8_t*>(frames[i].frame), frames[i].frame_bytes, frame, device);
    lengths[i] = decompress_on_device(frame, frames[i].frame_bytes, frames[i].out, frames[i].capacity, policy);
  });
  return lengths;
}

namespace {

// Chunks in device memory, each compressed by compress_on_device into a
// device frame room of its own (one a chunk in flight, taken from and given
// back to a stack), then handed to deliver(i, device frame, length, device),
// which copies it out. Every chunk is checked first; `fallback` runs the
// batch when no chunk holds any memory (empty chunks only: no device owns
// them).
template <typename Deliver, typename Fallback>
void compress_each_on_device(const std::vector<ChunkView>& chunks, const DataType& dtype, const Options& options,
                             const std::string& what, Deliver deliver, Fallback fallback) {
  if (chunks.empty()) return;
  validate(options, dtype);
  int device = -1;
  size_t room = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    try {
      checked_chunk_dims(chunks[i].data, chunks[i].bytes, dtype, chunks[i].dims);
      if (chunks[i].bytes == 0) continue;  // no memory to own
      const int owner = owning_device(chunks[i].data, "the chunk");
      if (device >= 0 && owner != device) throw Error("the chunks are on different devices");
      device = owner;
    } catch (const Error& e) {
      throw Error(what + ": chunk " + std::to_string(i) + ": " + e.what());
    }
    room = std::max(room, max_frame_bytes(chunks[i].bytes, std::max<size_t>(1, chunks[i].dims.size())));
  }
  if (device < 0) return fallback();
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(kGpuChunksInFlight, chunks.size()));
  const size_t padded = (room + 255) & ~size_t{255};
  if (padded < room || padded > std::numeric_limits<size_t>::max() / workers)
    throw Error(what + ": chunks too large");
  const DeviceStaging staging(padded * workers, device);
  std::mutex rooms_mutex;
  std::vector<uint8_t*> rooms;
  for (unsigned w = 0; w < workers; ++w) rooms.push_back(staging.data + w * padded);
  const std::string item = what + ": chunk";
  run_items(chunks.size(), workers, item.c_str(), [&](size_t i) {
    const DeviceSlots slot(device);
    uint8_t* frame;
    {
      std::lock_guard<std::mutex> lock(rooms_mutex);
      frame = rooms.back();
      rooms.pop_back();
    }
    struct GiveBack {
      std::mutex& mutex;
      std::vector<uint8_t*>& rooms;
      uint8_t* frame;
      ~GiveBack() {
        std::lock_guard<std::mutex> lock(mutex);
        rooms.push_back(frame);
      }
    } give_back{rooms_mutex, rooms, frame};
    const size_t length =
        compress_on_device(chunks[i].data, chunks[i].bytes, dtype, chunks[i].dims, options, frame, room);
    deliver(i, frame, length, device);
  });
}

}  // namespace

std::vector<Bytes> compress_batch_from_device(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                              const Options& options) {
  std::vector<Bytes> frames(chunks.size());
  compress_each_on_device(
      chunks, dtype, options, "compress_batch_from_device",
      [&](size_t i, const uint8_t* frame, size_t length, int device) {
        frames[i].resize(length);
        engine::copy_device_to_host(frame, length, frames[i].data(), device);
      },
      [&] { frames = compress_batch(chunks, dtype, options); });
  return frames;
}

std::vector<size_t> compress_batch_from_device_into(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                                    const Options& options, const std::vector<FrameRoom>& rooms) {
  check_rooms(chunks.size(), rooms, "compress_batch_from_device_into");
  std::vector<size_t> lengths(chunks.size(), 0);
  compress_each_on_device(
      chunks, dtype, options, "compress_batch_from_device_into",
      [&](size_t i, const uint8_t* frame, size_t length, int device) {
        if (length > rooms[i].capacity)
          throw Error("the frame is " + std::to_string(length) + " bytes, its room " +
                      std::to_string(rooms[i].capacity));
        engine::copy_device_to_host(frame, length, static_cast<uint8_t*>(rooms[i].data), device);
        lengths[i] = length;
      },
      [&] { lengths = compress_batch_into(chunks, dtype, options, rooms); });
  return lengths;
}

}  // namespace fz
