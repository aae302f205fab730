// Whether a frame is a chunk of a dataset: the checks the filter makes when
// it decodes, in one place, so that every reader that decodes frames itself
// (h5fz read, h5fz.read through the plugin's reader interface) refuses what
// the filter refuses, with the same message. No HDF5 here: the dataset is
// known by its stored cd_values.
//
// Two steps. Before decoding, the frame's header against the stored
// parameters: element type, decoded size, preset, error-bound mode and (for
// ABS and REL, which a frame records exactly) the bound. After decoding,
// NOA's bound, which a frame records only as the absolute bound it enforced
// over the chunk's value range: that is checked against the decoded values'
// range. A chunk written with other parameters than the dataset stores (the
// ranks of a parallel write passing different bounds: each rank's filter
// codes with its own, the file keeps one rank's) is an Error naming both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fz/fz.hpp"

namespace fz::filter {

// What the frame must decode to for this dataset.
struct FrameExpectation {
  // The chunk's bytes when known: the output buffer is never smaller, so a
  // caller copying a whole chunk out of it cannot read past it even when the
  // frame is allowed to be shorter (another filter runs first).
  std::optional<uint64_t> chunk;
  // The frame must decode to exactly `chunk` bytes.
  bool exact = false;
};

// The header checks. Throws Error naming what the frame says and what the
// dataset's cd_values say. cd_values in a later layout than this version
// knows: nothing is checked (the frame alone says how to decode it).
FrameExpectation check_frame(const unsigned cd[], size_t cd_count, const FrameInfo& info);

// The check after decoding `decoded` (the chunk, `bytes` long, in the
// dataset's byte order): a NOA frame's enforced bound against the range of
// the decoded values. It flags only what the decoded values prove: a bound
// looser than the stored one beyond what the coding error could explain, or
// tighter. Throws Error as check_frame. Cheap for every other frame (no pass
// over the data). The pass over a NOA chunk runs on `threads` of the
// engine's CPU threads (0 = all cores, as Options::threads); without it, on
// as many as H5Z_FZ_THREADS says (the filter's policy_from_environment).
void check_decoded(const unsigned cd[], size_t cd_count, const FrameInfo& info, const void* decoded, size_t bytes,
                   unsigned threads);
void check_decoded(const unsigned cd[], size_t cd_count, const FrameInfo& info, const void* decoded, size_t bytes);

// True when check_decoded would look at the data (a NOA frame of a lossy
// stage): a reader whose output is in device memory cannot, and says so.
bool needs_decoded_check(const unsigned cd[], size_t cd_count, const FrameInfo& info);

}  // namespace fz::filter
