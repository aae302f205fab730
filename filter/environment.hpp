// The H5Z_FZ_* environment variables, mapped onto the engine's policy
// (fz::Options' policy fields, fz.hpp). The engine reads no environment: the
// filter and the h5fz tools call this. README.md ("Environment") lists them:
//   H5Z_FZ_DEVICE   auto | cpu | cuda | cuda:N | cuda:local | auto:local -> Options::device
//                   (several ranks of an MPI job on one host: choose_device below)
//   H5Z_FZ_THREADS  CPU threads (a positive number)      -> Options::threads
//   H5Z_FZ_CPU      baseline: no optional x86-64 paths   -> Options::cpu_features
//   H5Z_FZ_GPU_COPY staged | direct (for measurements)   -> Options::gpu_copies
//   H5Z_FZ_VERBOSE  set (not "0"): say which backend runs and every GPU fallback
// The engine's messages go to stderr prefixed "H5Z-FZ: ": warnings always,
// information only under H5Z_FZ_VERBOSE.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "fz/fz.hpp"

namespace fz::filter {

// The device of one process of a parallel job. Ranks on one host each take a
// GPU of their own: the local rank (OMPI_COMM_WORLD_LOCAL_RANK, then
// MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, PALS_LOCAL_RANKID,
// SLURM_LOCALID) modulo the visible devices. Under "auto" (or no
// H5Z_FZ_DEVICE) that happens whenever a local rank is set and more than one
// device is visible, so one rank per GPU needs no setting; "cuda:local" and
// "auto:local" ask for it explicitly (cuda: every chunk on the GPU). Other
// strings pass through. A rank with no usable device runs on the CPU, whose
// bytes are the GPU's (docs/FORMAT.md: any backend writes the same frames).
struct DeviceChoice {
  std::string device;  // for Options::device: auto, auto:N, cpu, cuda, cuda:N
  std::string reason;  // e.g. "local rank 1 (OMPI_COMM_WORLD_LOCAL_RANK) of 2 CUDA devices"
};
// `lookup` reads one environment variable (null when unset); `device_count`
// is asked only when a local rank matters.
DeviceChoice choose_device(const char* wanted, const std::function<const char*(const char*)>& lookup,
                           const std::function<int()>& device_count);

// What this process uses, in words: the device string, why, and the CPU
// fallback when no device is usable (h5z_fz_device_in_use, reader_api.cpp).
std::string device_in_use();

// Read once per process; a value that means nothing is ignored (and said
// under H5Z_FZ_VERBOSE; the engine says a device it cannot use, always). Only the policy fields of the result are set.
const Options& policy_from_environment();

// Copies the policy fields of `policy` into `options`.
void apply_policy(const Options& policy, Options& options);

// H5Z_FZ_VERBOSE is set (and not "0").
bool verbose_environment();

// The launcher variable that makes this process a rank of a parallel job
// (the first of those choose_device reads that holds a local rank), or null.
// Read once per process.
const char* mpi_launcher_variable();

// Where a compressed chunk's frame is handed to HDF5. Parallel HDF5's
// collective filtered write keeps every chunk's buffer until one collective
// write of them all (H5Dmpio.c), so a frame left in the chunk-sized buffer it
// was written over keeps the whole chunk's memory: during a write a rank
// holds its whole share of the data a second time. A copy of the frame in a
// buffer of its own size lets HDF5 hold only the stored bytes (4 GiB per
// rank became 0.6 GiB for fzgpu on 2 x H200), at a cost in speed: the
// copies are fresh memory, and the chunk buffers a write no longer keeps are
// not there, already faulted in, for the next read's decoded chunks
// (docs/PERFORMANCE.md, "Frame-sized buffers").
//   H5Z_FZ_FRAME_BUFFERS=auto (or unset): own buffers for a rank of a
//     parallel job (mpi_launcher_variable), in place for one process (which
//     writes each chunk and frees its buffer at once: a copy is pure cost);
//   own: own buffers always; in-place: never.
// Any other value is ignored (said under H5Z_FZ_VERBOSE).
struct FrameBufferChoice {
  bool own = false;    // hand back frame-sized buffers
  std::string reason;  // said once when they are, e.g. "a rank of a parallel job (SLURM_LOCALID)"
  std::string ignored; // a value that means nothing, for the verbose message
};
FrameBufferChoice choose_frame_buffers(const char* wanted, const char* launcher);
const FrameBufferChoice& frame_buffers_from_environment();  // read once per process

// Whether this frame goes back in a buffer of its own: where buffers are own
// (FrameBufferChoice) and the frame is at most half of HDF5's buffer.
bool hand_back_frame_sized(size_t frame_bytes, size_t buffer_bytes, bool own_buffers);

}  // namespace fz::filter
