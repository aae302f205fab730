// FILLMASK on the GPU: the stream format of fillmask.hpp, byte for byte the CPU's.
//
// Device pointers, any alignment; work is enqueued on `stream`; nothing is
// allocated: temporary memory comes from `scratch` (256-byte aligned, as
// cudaMalloc returns) of the size encode_scratch_bytes gives. The return value
// reports bad arguments (cudaErrorInvalidValue, where the CPU throws
// UsageError: a width other than 1, 2, 4, 8, fill bits above the width, an
// input that is not whole elements) and launch errors only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::fillmask::cuda {

// ceil(n / 8) for n elements: the mask stream's length.
size_t mask_bytes(size_t elements);

size_t encode_scratch_bytes(size_t in_size, unsigned width);

// in: in_size bytes (a multiple of width). values: in_size bytes. mask:
// mask_bytes(in_size / width) bytes.
cudaError_t encode(const uint8_t* in, size_t in_size, unsigned width, uint64_t fill, uint8_t* values,
                   uint8_t* mask, void* scratch, cudaStream_t stream);

// Decode status bits: 0 exactly when fillmask::decode accepts the streams.
enum DecodeStatus : uint32_t {
  kValuesNotWholeElements = 1u << 0,
  kDecodedSizeTooLarge = 1u << 1,   // values_size > max_out
  kMaskSizeMismatch = 1u << 2,      // mask_size != mask_bytes(values_size / width)
  kPaddingBitsSet = 1u << 3,        // bits past the last element in the last mask byte
};

// values (values_size bytes) and mask (mask_size bytes) as stored; out holds
// max_out bytes and nothing outside out[0, min(values_size, max_out)) is
// written, nothing outside the inputs read. *status (device) receives 0 for
// consistent streams, else the OR of the DecodeStatus bits of the failed
// checks (the size checks are made on the host; a failed one leaves out
// untouched). out's content is unspecified when *status != 0; otherwise it
// holds values_size bytes.
cudaError_t decode(const uint8_t* values, size_t values_size, const uint8_t* mask, size_t mask_size,
                   unsigned width, uint64_t fill, uint8_t* out, size_t max_out, uint32_t* status,
                   cudaStream_t stream);

}  // namespace fz::fillmask::cuda
