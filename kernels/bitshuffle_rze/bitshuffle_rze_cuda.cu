// The fused bit-shuffle -> RZE1 coder (bitshuffle_rze_cuda.hpp): the
// elimination coder's kernels (elimination/dispatch_cuda.cuh) with a block
// policy that shuffles a full 16 KiB block on its way into shared memory and
// unshuffles it on its way out (bitshuffle/bitshuffle_block_cuda.cuh's units).
// A partial last block, which the coder takes from a 16 KiB scratch buffer
// ("tail"), is shuffled there by bitshuffle::cuda::encode before the coder
// runs, and unshuffled from there after it by a kernel that reads the
// stream's length on the device, so the host waits for nothing.
#include "bitshuffle_rze/bitshuffle_rze_cuda.hpp"

#include <cub/block/block_scan.cuh>

#include <cstring>
#include <type_traits>

#include "bitshuffle/bitshuffle_block_cuda.cuh"
#include "bitshuffle/bitshuffle_cuda.hpp"
#include "common/blocks.hpp"
#include "common/words_cuda.cuh"
#include "diffnb/diffnb_cuda.hpp"
#include "elimination/dispatch_cuda.cuh"

namespace fz::bitshuffle_rze::cuda {
namespace {

using elimination::cuda::aligned;
using elimination::cuda::load_block_vectors;
using elimination::cuda::staged_at;
using elimination::cuda::store_block_vectors;
using elimination::cuda::StagedPiece;
using elimination::cuda_detail::kThreads;
namespace block = bitshuffle::cuda_block;

// The block policy (elimination/block_helpers_cuda.cuh) of the bit-shuffle of
// W-byte words, in units of 8G words that write (read) G bytes of every plane.
// Shuffling into the coder, units of 4 groups of 8 for bytes and 2-byte words,
// 2 for 4-byte words and 1 for 8-byte words give every thread one (two for
// bytes); unshuffling, 4 groups up to 4-byte words (measured faster for them
// on the H200 than 2, though half the threads then wait) and 2 for 8-byte ones.
template <unsigned W, unsigned G>
struct ShuffleUnits {
  static constexpr unsigned kGroups = G;
  using F = block::Full<W, G>;
  // Where vector v of the word side lives in `spare`: each unit reads or
  // writes kVectors consecutive vectors after or before coalesced accesses
  // (words_cuda.cuh).
  __device__ static unsigned word_vector(unsigned v) { return cuda_detail::swizzled_vector<F::kVectors>(v); }
};

template <unsigned W>
struct ShuffledBlock {
  using In = ShuffleUnits<W, W <= 2 ? 4 : 8 / W>;
  using Out = ShuffleUnits<W, W <= 4 ? 4 : 2>;

  // The words in `spare` (In's layout) shuffled into `staged`.
  __device__ static void shuffle(const uint4* spare, uint4* staged) {
    constexpr unsigned G = In::kGroups;
    for (unsigned u = threadIdx.x; u < In::F::kUnits; u += kThreads) {
      block::encode_unit<W, G>(
          u, [&](unsigned v) { return spare[In::word_vector(v)]; },
          [&](unsigned at, uint32_t x) { staged_at<G>(staged, at) = static_cast<StagedPiece<G>>(x); });
    }
  }
  // The decoded planes unshuffled into `spare` (Out's layout).
  __device__ static void unshuffle(const uint4* decoded, uint4* spare) {
    constexpr unsigned G = Out::kGroups;
    for (unsigned u = threadIdx.x; u < Out::F::kUnits; u += kThreads) {
      block::decode_unit<W, G>(
          u, [&](unsigned at) { return static_cast<uint32_t>(staged_at<G>(decoded, at)); },
          [&](unsigned v, uint4 x) { spare[Out::word_vector(v)] = x; });
    }
  }

  __device__ static void load(const uint8_t* src, uint4* staged, uint4* spare) {
    load_block_vectors(src, spare, [](unsigned v) { return In::word_vector(v); });
    __syncthreads();
    shuffle(spare, staged);
  }

  __device__ static void store(const uint4* decoded, uint8_t* dst, uint4* spare) {
    unshuffle(decoded, spare);
    __syncthreads();
    store_block_vectors(spare, [](unsigned v) { return Out::word_vector(v); }, dst);
  }
};

// DIFFNB (diffnb.hpp) of W-byte words, W = 4 or 8, before the shuffle: its
// blocks are the coder's 16 KiB sub-chunks, so each sub-chunk is a DIFFNB
// block of its own (the first word's predecessor is 0).
template <unsigned W>
using DiffWord = std::conditional_t<W == 8, uint64_t, uint32_t>;
template <typename T>
constexpr T kNegabinary = static_cast<T>(0xAAAAAAAAAAAAAAAAull);

template <unsigned W>
struct DifferencedShuffledBlock {
  using T = DiffWord<W>;
  using Shuffled = ShuffledBlock<W>;
  using In = typename Shuffled::In;
  using Out = typename Shuffled::Out;
  static constexpr unsigned kWords = 16 / W;
  static constexpr unsigned kVectorsPerThread = kBlockBytes / 16 / kThreads;  // 4

  // A vector's words as differences (the first from `previous`), negabinary.
  __device__ static uint4 differences(uint4 x, T previous) {
    T w[kWords];
    memcpy(w, &x, 16);
#pragma unroll
    for (unsigned j = 0; j < kWords; ++j) {
      const T d = static_cast<T>(w[j] - previous);
      previous = w[j];
      w[j] = static_cast<T>(static_cast<T>(d + kNegabinary<T>) ^ kNegabinary<T>);
    }
    memcpy(&x, w, 16);
    return x;
  }

  // Loaded as the plain shuffle loads (vector v = i * kThreads + thread), the
  // differences taken in registers: a vector's predecessor word is the last
  // of the vector the lane before holds (a shuffle), or for lane 0 a word the
  // warp before loaded (a cached load).
  __device__ static void load(const uint8_t* src, uint4* staged, uint4* spare) {
    const uint4* src4 = reinterpret_cast<const uint4*>(src);
    uint4 loaded[kVectorsPerThread];
#pragma unroll
    for (unsigned i = 0; i < kVectorsPerThread; ++i) loaded[i] = src4[i * kThreads + threadIdx.x];
    const unsigned lane = threadIdx.x & 31u;
#pragma unroll
    for (unsigned i = 0; i < kVectorsPerThread; ++i) {
      const unsigned v = i * kThreads + threadIdx.x;
      T last;
      memcpy(&last, reinterpret_cast<const uint8_t*>(&loaded[i]) + 16 - W, W);
      T previous = __shfl_up_sync(0xFFFFFFFFu, last, 1);
      if (lane == 0) previous = v == 0 ? T{0} : cuda_detail::load_word<T>(src + 16 * v - W);
      spare[In::word_vector(v)] = differences(loaded[i], previous);
    }
    __syncthreads();
    Shuffled::shuffle(spare, staged);
  }

  // Unshuffled into `spare`, then the running sums: each thread sums its 64
  // contiguous bytes and one block scan adds what the threads before hold.
  __device__ static void store(const uint4* decoded, uint8_t* dst, uint4* spare) {
    using Scan = cub::BlockScan<T, kThreads>;
    __shared__ typename Scan::TempStorage scan;
    Shuffled::unshuffle(decoded, spare);
    __syncthreads();
    T sums[kVectorsPerThread * kWords];
    T running = 0;
#pragma unroll
    for (unsigned i = 0; i < kVectorsPerThread; ++i) {
      const uint4 x = spare[Out::word_vector(threadIdx.x * kVectorsPerThread + i)];
      T w[kWords];
      memcpy(w, &x, 16);
#pragma unroll
      for (unsigned j = 0; j < kWords; ++j) {
        running += static_cast<T>(static_cast<T>(w[j] ^ kNegabinary<T>) - kNegabinary<T>);
        sums[i * kWords + j] = running;
      }
    }
    T before;
    Scan(scan).ExclusiveSum(running, before);
#pragma unroll
    for (unsigned i = 0; i < kVectorsPerThread; ++i) {
      T w[kWords];
#pragma unroll
      for (unsigned j = 0; j < kWords; ++j) w[j] = static_cast<T>(sums[i * kWords + j] + before);
      uint4 x;
      memcpy(&x, w, 16);
      spare[Out::word_vector(threadIdx.x * kVectorsPerThread + i)] = x;
    }
    __syncthreads();
    store_block_vectors(spare, [](unsigned v) { return Out::word_vector(v); }, dst);
  }
};

// After the coder's decode: the partial last block of a valid-sized stream,
// decoded into `tail`, unshuffled to its place in `out`. The length is the
// stream's header (read here: the host never waits for it); nothing is
// written for a header that says more than max_out (the decode refused it).
template <unsigned W>
__global__ void __launch_bounds__(kThreads)
    unshuffle_tail(const uint8_t* in, size_t in_size, size_t max_out, const uint8_t* tail, uint8_t* out) {
  __shared__ __align__(16) uint8_t source[kBlockBytes];
  __shared__ __align__(16) uint8_t coded[kBlockBytes];
  if (in_size < 8) return;
  const uint64_t n = cuda_detail::load_word<uint64_t>(in);
  const unsigned rest = static_cast<unsigned>(n % kBlockBytes);
  if (n > max_out || rest == 0) return;
  block::code_any_block<W, false>(tail, rest, out + (n - rest), source, coded);
}

// The same with DIFFNB: once unshuffled, the partial block's words summed in
// place (words [t * per, (t + 1) * per) by thread t, a block scan between
// two passes over them); a trailing partial word stays as it is.
template <unsigned W>
__global__ void __launch_bounds__(kThreads) unshuffle_differenced_tail(const uint8_t* in, size_t in_size,
                                                                        size_t max_out, const uint8_t* tail,
                                                                        uint8_t* out) {
  using T = DiffWord<W>;
  using Scan = cub::BlockScan<T, kThreads>;
  __shared__ __align__(16) uint8_t source[kBlockBytes];
  __shared__ __align__(16) uint8_t coded[kBlockBytes];
  __shared__ typename Scan::TempStorage scan;
  if (in_size < 8) return;
  const uint64_t n = cuda_detail::load_word<uint64_t>(in);
  const unsigned rest = static_cast<unsigned>(n % kBlockBytes);
  if (n > max_out || rest == 0) return;
  uint8_t* dst = out + (n - rest);
  block::code_any_block<W, false>(tail, rest, dst, source, coded);
  __syncthreads();  // the block's global writes, seen by all its threads
  const unsigned words = rest / W;
  const unsigned per = (words + kThreads - 1) / kThreads;
  const unsigned first = threadIdx.x * per;
  auto delta = [&](unsigned i) {
    const T d = cuda_detail::load_word<T>(dst + static_cast<size_t>(i) * W);
    return static_cast<T>(static_cast<T>(d ^ kNegabinary<T>) - kNegabinary<T>);
  };
  T running = 0;
  for (unsigned i = first; i < first + per && i < words; ++i) running += delta(i);
  T acc;
  Scan(scan).ExclusiveSum(running, acc);  // (a barrier: every first pass is done)
  for (unsigned i = first; i < first + per && i < words; ++i) {
    acc += delta(i);
    cuda_detail::store_word<T>(dst + static_cast<size_t>(i) * W, acc);
  }
}

bool valid_width(unsigned w) { return w == 1 || w == 2 || w == 4 || w == 8; }
bool valid_differenced_width(unsigned w) { return w == 4 || w == 8; }

template <unsigned W>
cudaError_t encode_width(const uint8_t* in, size_t n, uint8_t* out, uint64_t* encoded_size, void* scratch,
                         cudaStream_t stream) {
  const size_t rest = n % kBlockBytes;
  uint8_t* tail = static_cast<uint8_t*>(scratch) + aligned(elimination::cuda::encode_scratch_bytes(n));
  if (rest > 0) {
    const cudaError_t err = bitshuffle::cuda::encode(in + (n - rest), rest, W, tail, stream);
    if (err != cudaSuccess) return err;
  }
  return elimination::cuda::encode_typed<uint8_t, false, ShuffledBlock<W>>(
      in, elimination::cuda::InputLength{n, nullptr, n}, out, encoded_size, scratch, stream, tail);
}

template <unsigned W>
cudaError_t decode_width(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out, uint64_t* decoded_size,
                         uint32_t* status, void* scratch, cudaStream_t stream) {
  uint8_t* tail = static_cast<uint8_t*>(scratch) + aligned(elimination::cuda::decode_scratch_bytes(in_size, max_out));
  const cudaError_t err = elimination::cuda::decode_typed<uint8_t, false, ShuffledBlock<W>>(
      in, in_size, out, max_out, decoded_size, status, scratch, stream, tail);
  if (err != cudaSuccess) return err;
  unshuffle_tail<W><<<1, kThreads, 0, stream>>>(in, in_size, max_out, tail, out);
  return cudaGetLastError();
}

// DIFFNB first: full blocks differenced on their way in (DifferencedShuffledBlock);
// the partial last one differenced into the second 16 KiB of scratch after
// the coder's, then shuffled into the first, before the coder runs.
template <unsigned W>
cudaError_t encode_differenced_width(const uint8_t* in, size_t n, uint8_t* out, uint64_t* encoded_size,
                                     void* scratch, cudaStream_t stream) {
  const size_t rest = n % kBlockBytes;
  uint8_t* tail = static_cast<uint8_t*>(scratch) + aligned(elimination::cuda::encode_scratch_bytes(n));
  if (rest > 0) {
    uint8_t* differenced = tail + kBlockBytes;
    cudaError_t err = diffnb::cuda::encode(in + (n - rest), rest, W, differenced, stream);
    if (err != cudaSuccess) return err;
    err = bitshuffle::cuda::encode(differenced, rest, W, tail, stream);
    if (err != cudaSuccess) return err;
  }
  return elimination::cuda::encode_typed<uint8_t, false, DifferencedShuffledBlock<W>>(
      in, elimination::cuda::InputLength{n, nullptr, n}, out, encoded_size, scratch, stream, tail);
}

template <unsigned W>
cudaError_t decode_differenced_width(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out,
                                     uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  uint8_t* tail = static_cast<uint8_t*>(scratch) + aligned(elimination::cuda::decode_scratch_bytes(in_size, max_out));
  const cudaError_t err = elimination::cuda::decode_typed<uint8_t, false, DifferencedShuffledBlock<W>>(
      in, in_size, out, max_out, decoded_size, status, scratch, stream, tail);
  if (err != cudaSuccess) return err;
  unshuffle_differenced_tail<W><<<1, kThreads, 0, stream>>>(in, in_size, max_out, tail, out);
  return cudaGetLastError();
}

}  // namespace

size_t encode_differenced_scratch_bytes(size_t n) { return encode_scratch_bytes(n) + kBlockBytes; }

cudaError_t encode_differenced(const uint8_t* in, size_t n, unsigned width, uint8_t* out, uint64_t* encoded_size,
                               void* scratch, cudaStream_t stream) {
  if (!valid_differenced_width(width) || !takes_pointer(in)) return cudaErrorInvalidValue;
  return width == 4 ? encode_differenced_width<4>(in, n, out, encoded_size, scratch, stream)
                    : encode_differenced_width<8>(in, n, out, encoded_size, scratch, stream);
}

cudaError_t decode_differenced(const uint8_t* in, size_t in_size, unsigned width, uint8_t* out, size_t max_out,
                               uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (!valid_differenced_width(width) || !takes_pointer(out)) return cudaErrorInvalidValue;
  return width == 4 ? decode_differenced_width<4>(in, in_size, out, max_out, decoded_size, status, scratch, stream)
                    : decode_differenced_width<8>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
}

size_t encode_scratch_bytes(size_t n) { return aligned(elimination::cuda::encode_scratch_bytes(n)) + kBlockBytes; }

size_t decode_scratch_bytes(size_t in_size, size_t max_out) {
  return aligned(elimination::cuda::decode_scratch_bytes(in_size, max_out)) + kBlockBytes;
}

cudaError_t encode(const uint8_t* in, size_t n, unsigned width, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream) {
  if (!valid_width(width) || !takes_pointer(in)) return cudaErrorInvalidValue;
  switch (width) {
    case 1: return encode_width<1>(in, n, out, encoded_size, scratch, stream);
    case 2: return encode_width<2>(in, n, out, encoded_size, scratch, stream);
    case 4: return encode_width<4>(in, n, out, encoded_size, scratch, stream);
    default: return encode_width<8>(in, n, out, encoded_size, scratch, stream);
  }
}

cudaError_t decode(const uint8_t* in, size_t in_size, unsigned width, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (!valid_width(width) || !takes_pointer(out)) return cudaErrorInvalidValue;
  switch (width) {
    case 1: return decode_width<1>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 2: return decode_width<2>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 4: return decode_width<4>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    default: return decode_width<8>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
  }
}

}  // namespace fz::bitshuffle_rze::cuda
