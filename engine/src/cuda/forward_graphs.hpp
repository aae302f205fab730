// Forward pipelines replayed as CUDA graphs, kept per lane. Only compiled
// with CUDA.
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
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/device_context.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "value_range.hpp"

namespace fz::engine::cuda {

constexpr size_t kHostFactsBytes = size_t{256} << 10;
// Beyond this size launches are a small share of a chunk's time. Measured on
// the H100 machine: with graphs up to 1 MiB, batches of 1 MiB NOA chunks whose
// keys came back now and then compressed at 4 GB/s, against 18 without graphs
// (capturing, instantiating and evicting them cost more than they saved).
constexpr size_t kGraphMaxChunkBytes = kHostFactsBytes;
static_assert(kGraphMaxChunkBytes <= kHostFactsBytes, "a graph's chunk is uploaded once its facts are known");

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

// A graph's key: its chunk's length and its pipeline's key.
std::string forward_key(size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        const FiniteRange& values);

// The lane's graph for `key`: kept from before, or captured now when the key
// came lately; nothing when it did not or the pipeline cannot be captured.
CapturedForward* forward_graph(const Pipeline& pipeline, size_t bytes, Lane& lane, const std::string& key);

}  // namespace fz::engine::cuda
