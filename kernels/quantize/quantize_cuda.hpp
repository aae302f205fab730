// QUANTIZE on the GPU: the stream format of quantize.hpp, byte for byte the
// CPU's (codes, outliers and params), for float32 and float64.
//
// Encode covers the modes that need no pass over the data before the plan:
// ABS (what the engine resolves NOA into) and REL. NOA itself needs the
// chunk's range first and is refused (cudaErrorInvalidValue). The plan (step,
// inverse, exact-test bound, the LOSSLESS fall-back when the bound cannot be
// represented) is the CPU's own host code (quantize_plan.hpp); every element
// is coded by the CPU reference's rule (encode_abs_element / encode_rel_block)
// with the same IEEE operations, one rounding each (built with -fmad=false).
// Outliers land in element order at positions given by prefix sums over
// per-block outlier counts (the 16 KiB block grid of common/blocks.hpp).
//
// All buffer pointers are device pointers, any alignment; work is enqueued on
// `stream`; nothing is allocated: temporary memory comes from `scratch`
// (256-byte aligned, as cudaMalloc returns) of the size *_scratch_bytes gives.
// The return value reports bad arguments (cudaErrorInvalidValue) and launch
// errors only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "quantize/quantize.hpp"

namespace fz::quantize::cuda {

// The method encode() will choose for `config` (ABS/REL: decided by the bound
// alone), so a caller can size and route the streams without reading back.
// Throws nothing; for a config encode() refuses it returns kLossless.
Method encode_method(const Config& config);

size_t encode_scratch_bytes(size_t in_size, unsigned width);

// in: in_size bytes (a multiple of config.width). codes: in_size bytes
// (untouched when the method is LOSSLESS). outliers: in_size bytes at most are
// written. params: kParamsBytes bytes. stream_sizes (device, 2 words) receives
// the codes length and the outliers length in bytes (their count is
// stream_sizes[1] / width). Refused (cudaErrorInvalidValue) where the CPU
// encoder throws UsageError, and for mode NOA.
cudaError_t encode(const uint8_t* in, size_t in_size, const Config& config, uint8_t* codes, uint8_t* outliers,
                   uint8_t* params, uint64_t* stream_sizes, void* scratch, cudaStream_t stream);
// Where the outliers go and the bytes they may take there.
struct OutlierRoom {
  uint8_t* data = nullptr;
  size_t capacity = 0;
};
// encode() with the outliers' room chosen once their length is known:
// `outlier_room` is called (on the host, once, before any outlier is
// written) when stream_sizes holds both lengths on the device, so a caller
// may read them back and allocate just that; outliers longer than the room
// are not written (stream_sizes[1] still says how long they are). encode() is
// this with a room of in_size bytes.
cudaError_t encode_with_outlier_room(const uint8_t* in, size_t in_size, const Config& config, uint8_t* codes,
                                     const std::function<OutlierRoom()>& outlier_room, uint8_t* params,
                                     uint64_t* stream_sizes, void* scratch, cudaStream_t stream);

// Decode status bits: 0 exactly when the CPU decoder would accept the streams.
enum DecodeStatus : uint32_t {
  kCodesSizeMismatch = 1u << 0,     // codes length is not count * width (or not 0 for LOSSLESS)
  kOutliersSizeMismatch = 1u << 1,  // outliers length not whole elements / not count*width for LOSSLESS
  kCodeOutOfRange = 1u << 2,        // a code beyond the format's limit (CONSTANT: other than 0, 1)
  kCodeLeavesExponentRange = 1u << 3,  // REL: Pw of the code is not a finite normal
  kOutlierCountMismatch = 1u << 4,  // zero codes != outliers in the stream
};

// params: as read_params() returns them from the params stream (the caller has
// the 40 bytes on the host and has validated them and their decoded size,
// decoded_bytes(), against its limits). Every method and mode is decoded.
size_t decode_scratch_bytes(const Params& params);

// codes (codes_size bytes) and outliers (outliers_size bytes) as stored; out
// holds count * width bytes and nothing outside it is written, nothing outside
// the inputs read. *status (device) receives 0 for consistent streams, else the
// OR of the DecodeStatus bits of every failed check (deterministic). out's
// content is unspecified when *status != 0. cudaErrorInvalidValue for params
// that read_params would not return (width, method) or a size that overflows.
cudaError_t decode(const uint8_t* codes, size_t codes_size, const uint8_t* outliers, size_t outliers_size,
                   const Params& params, uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream);

}  // namespace fz::quantize::cuda
