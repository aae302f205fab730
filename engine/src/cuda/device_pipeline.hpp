// A pipeline's stages run on the device, one after the other, over device
// buffers (stage.hpp, DeviceBuffer), and the facts a preset needs of a chunk
// in device memory. Only compiled with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/chunk_work.hpp"
#include "cuda/device_context.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "value_range.hpp"

namespace fz::engine::cuda {

// Chunks of this size or more run a pipeline's independent stages side by
// side (ChunkWork::side_by_side): cuszhi-cr's three ANS stages, whose small
// code groups are each a few thousand dependent chains that leave most of the
// GPU idle for as long as the large group's stage takes (H200, 512 MiB at
// NOA 1e-3: 2.3 + 1.0 + 0.7 ms one after another; docs/PERFORMANCE.md).
// Below it, a branch's lane, events and thread would cost more than a small
// chunk's stages.
constexpr size_t kSideBySideMinBytes = size_t{1} << 20;

// `work` when a chunk of `chunk_bytes` runs its independent stages side by
// side, else nullptr.
ChunkWork* side_by_side_for(ChunkWork& work, size_t chunk_bytes);

// The first stages of a pipeline, already run on the device for one chunk
// (device_chunk_facts runs the spline pipeline's while the host chooses the
// predictor, device_choice.hpp): run_forward starts after them when its
// pipeline begins with the same stages over the same chunk.
struct DevicePrefix {
  std::shared_ptr<const Pipeline> pipeline;
  size_t nodes = 0;                   // the pipeline's first `nodes` ran
  std::vector<DeviceBuffer> buffers;  // every buffer they made, by id (the chunk's first)
};

// How many of `pipeline`'s first nodes `prefix` ran: its node count when
// they are the same stages (type, config, streams), else 0.
size_t shared_prefix_nodes(const DevicePrefix& prefix, const Pipeline& pipeline);

// The pipeline's nodes [first, last) forward, into `buffers` (by id, the
// chunk's first). With `side_by_side`, runs of independent stages go on its
// branches. With `release_consumed`, a stream in `buffers` (the chunk's
// aside) or made by these nodes goes back to `work` once no later node of the
// pipeline reads it and it is not stored (its entry's data then nullptr):
// only for a run to the pipeline's end, since a prefix may be continued by
// another pipeline (DevicePrefix).
void forward_nodes(const Pipeline& pipeline, size_t first, size_t last, std::vector<DeviceBuffer>& buffers,
                   DeviceWork& work, ChunkWork* side_by_side, bool release_consumed = false);

// Every stage's forward on the device (those `prefix` ran taken from it);
// returns every buffer of the pipeline. The prefix is used up: emptied, its
// streams this run's (released once consumed) or, when the pipeline does not
// continue it, released at once.
std::vector<DeviceBuffer> run_forward(const Pipeline& pipeline, DeviceBuffer chunk, DeviceWork& work,
                                      ChunkWork* side_by_side = nullptr, DevicePrefix* prefix = nullptr);

// Every stage's inverse on the device, from the stored streams' views (indexed
// by buffer id); returns the chunk's view. With `side_by_side`, as run_forward.
// Streams the inverses rebuild go back to `work` once consumed. With a
// `destination` (data: 256-byte aligned, size: its bytes, overlapping no
// stored stream), the stage that rebuilds the chunk writes it there when it
// fits: the returned view's data then equals destination.data.
DeviceBuffer run_inverse(const Pipeline& pipeline, std::vector<DeviceBuffer> view, ChunkWork& work,
                         size_t max_stream_bytes, ChunkWork* side_by_side = nullptr, DeviceBuffer destination = {});

// The facts a lossy preset needs of a chunk in device memory
// (presets/presets.hpp), found on the device and read back in one small copy.
FiniteRange device_chunk_values(const uint8_t* chunk, size_t bytes, const DataType& dtype, const Options& options,
                                ChunkWork& work, Lane& lane);

// device_chunk_values and cuszhi-cr's predictor choice (presets/
// predictor_choice.hpp): the sample blocks copied to the host in one
// synchronisation and chosen by the CPU's function, so the device chooses as
// the CPU does (chunk_facts). With `prefix`, a chunk of
// kSpeculativePrefixMinBytes or more runs the spline pipeline's stages up to
// the spline on the device meanwhile, kept in *prefix for run_forward
// (device_choice.cpp).
FiniteRange device_chunk_facts(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                               const std::vector<uint64_t>& dims, const Options& options, ChunkWork& work,
                               Lane& lane, DevicePrefix* prefix = nullptr);

// The choice takes about as long whatever the chunk's size (its sample is
// four blocks of 32^3, 128^2 or 16384 points: 2.1-2.6 ms on the H200
// machine's host); from this size on the device's spline takes as long or
// longer (2.7 ms at 512 MiB), and its outputs are half the chunk's bytes,
// which a chunk that chooses otherwise holds until it is done. Measured
// against 1 MiB (2026-11-29): with a thread of its own for the choice, 4 MiB
// chunks gained at NOA 1e-2 and lost at 1e-4, 1 MiB chunks lost, and so did
// h5fz.write's many chunks in flight; enqueueing the prefix first on the
// same thread does not overlap, as the prefix's launches wait for the
// device (2.7 ms at 512 MiB: 104 -> 76 GB/s).
constexpr size_t kSpeculativePrefixMinBytes = size_t{16} << 20;

}  // namespace fz::engine::cuda
