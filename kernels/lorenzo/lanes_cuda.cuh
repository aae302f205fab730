// Rows held by a warp with each lane's K elements side by side (x = lane K
// + j), as the LORENZO CUDA encoder's one-pass front and the decoder's row
// sums use them: a lane's part of a row loaded and stored in 16-byte vectors
// where the row allows. Internal to the LORENZO CUDA sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/words_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

// The lane's K words of one row (row: its first byte) into `bits`, those past
// the row's end as copies of its last word: a row's last r and t are then
// repeated in the encoder, so its deltas there are 0 and no spurious record
// appears (neither is ever stored). Vectors when `vectors` (the row and the
// words 16-byte aligned, nx a multiple of 16 / sizeof(Word)): each then lies
// wholly inside or outside the row.
template <typename Word, unsigned K>
__device__ __forceinline__ void load_lane(const uint8_t* row, unsigned x0, unsigned nx, bool vectors,
                                          Word (&bits)[K]) {
  constexpr unsigned kPer = 16 / sizeof(Word);
  if constexpr (K % kPer == 0) {
    if (vectors) {
#pragma unroll
      for (unsigned v = 0; v < K / kPer; ++v) {
        if (x0 + v * kPer < nx) {
          const uint4 w = *reinterpret_cast<const uint4*>(row + sizeof(Word) * (x0 + v * kPer));
          memcpy(&bits[v * kPer], &w, 16);
        } else {
          const Word last = *reinterpret_cast<const Word*>(row + sizeof(Word) * (nx - 1));
#pragma unroll
          for (unsigned k = 0; k < kPer; ++k) bits[v * kPer + k] = last;
        }
      }
      return;
    }
  }
#pragma unroll
  for (unsigned j = 0; j < K; ++j)
    bits[j] = fz::cuda_detail::load_word<Word>(row + sizeof(Word) * min(x0 + j, nx - 1));
}

// The lane's K words into their row, those inside it; vectors under
// load_lane's condition.
template <typename Word, unsigned K>
__device__ __forceinline__ void store_lane(uint8_t* row, unsigned x0, unsigned nx, bool vectors,
                                           const Word (&words)[K]) {
  constexpr unsigned kPer = 16 / sizeof(Word);
  if constexpr (K % kPer == 0) {
    if (vectors) {
#pragma unroll
      for (unsigned v = 0; v < K / kPer; ++v) {
        if (x0 + v * kPer < nx) {
          uint4 w;
          memcpy(&w, &words[v * kPer], 16);
          *reinterpret_cast<uint4*>(row + sizeof(Word) * (x0 + v * kPer)) = w;
        }
      }
      return;
    }
  }
#pragma unroll
  for (unsigned j = 0; j < K; ++j)
    if (x0 + j < nx) fz::cuda_detail::store_word<Word>(row + sizeof(Word) * (x0 + j), words[j]);
}

}  // namespace fz::lorenzo::cuda::detail
