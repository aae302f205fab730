// SPLINE on the GPU, decode: the host dispatch (scratch layout, launches) over
// decode_kernels_cuda.cuh. Stream format: spline/spline.hpp; host interface:
// spline/spline_cuda.hpp. The side stream is validated on the device (its
// bytes may exist only there), in the CPU's terms (decode_cpu.cpp): header,
// outlier list, codes; then anchors (or the root, and with coarse levels the
// other anchors decoded in one block) and outliers are scattered and the tiles
// rebuilt with the encoder's arithmetic (spline_rules.hpp), each reading its
// codes straight from the three group streams (and checking the ones it owns).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spline/decode_kernels_cuda.cuh"
#include "spline/spline_cuda.hpp"

namespace fz::spline::cuda {
namespace {

using namespace detail;

struct DecodeLayout {
  void* header;                    // DecodeHeader<T>
  unsigned long long* zero_codes;  // predicted points with code 0
  void* anchors;                   // coarse levels: the anchors' values (T), or nullptr
  size_t total;
};

DecodeLayout decode_layout(void* scratch, const Grid& grid, bool coarse) {
  auto* base = static_cast<uint8_t*>(scratch);
  DecodeLayout l;
  size_t at = 0;
  l.anchors = nullptr;
  if (coarse) {
    l.anchors = base + at;
    at += aligned(grid.tile_count * sizeof(double));
  }
  l.header = base + at;
  at += aligned(sizeof(DecodeHeader<double>));
  l.zero_codes = reinterpret_cast<unsigned long long*>(base + at);
  at += aligned(sizeof(unsigned long long));
  l.total = at;
  return l;
}

template <typename T>
cudaError_t decode_typed(const ConstCodeStreams& code_streams, const uint8_t* side, size_t side_size,
                         const Grid& grid, const CodeFormat& format, uint8_t* out, uint32_t* status, void* scratch,
                         cudaStream_t stream) {
  const unsigned code_bytes = format.code_bytes;
  const unsigned form = static_cast<unsigned>(format.code_form);
  const bool coarse = format.coarse_levels;
  const unsigned coarse_levels = coarse ? coarse_level_count(grid) : 0;
  if (coarse_levels > kMaxDeviceCoarseLevels) return cudaErrorInvalidValue;
  const DecodeLayout l = decode_layout(scratch, grid, coarse);
  auto* header = static_cast<DecodeHeader<T>*>(l.header);
  const size_t stored_anchors = stored_anchor_count(grid, coarse);
  const SideLayout layout = side_layout(grid.rank, sizeof(T), stored_anchors, coarse_levels);
  const CodeGroups groups = code_groups(grid);
  ConstGroupStreams codes;
  for (unsigned g = 0; g < kCodeGroups; ++g) codes.at[g] = code_streams.at[g];
  // Outliers the stream's size leaves room for (and at most N): the threads
  // that check and scatter them; a good header's K is never more.
  size_t capacity = 0;
  if (side_size >= layout.indices_at) {
    capacity = (side_size - layout.indices_at) / (index_width_of(grid.elements) + sizeof(T));
    if (capacity > grid.elements) capacity = grid.elements;
  }
  if ((capacity + kCheckThreads - 1) / kCheckThreads > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(l.zero_codes, 0, sizeof(unsigned long long), stream);
  if (err != cudaSuccess) return err;
  read_header<T><<<1, 1, 0, stream>>>(side, side_size, grid, code_bytes, coarse, layout, header, status);
  if (capacity > 0)
    check_outliers<T><<<static_cast<unsigned>((capacity + kCheckThreads - 1) / kCheckThreads), kCheckThreads, 0,
                        stream>>>(side, layout.indices_at, grid, groups, codes, code_bytes, form, coarse,
                                  capacity, header, status);
  const size_t scattered = stored_anchors > capacity ? stored_anchors : capacity;
  if (scattered > 0)
    scatter<T><<<static_cast<unsigned>((scattered + kCheckThreads - 1) / kCheckThreads), kCheckThreads, 0, stream>>>(
        side, layout, grid, stored_anchors, capacity, header, out);
  T* anchors = static_cast<T*>(l.anchors);
  if (coarse && grid.tile_count > 0)
    launch_decode_coarse<T>(CoarseDecode<T, DecodeHeader<T>>{grid, groups, codes, code_bytes, form, header, out, anchors},
                            stream);
  if (grid.tile_count > 0) {
    const size_t shared = decode_shared_bytes<T>(grid.rank);
    err = allow_shared(decode_tiles<T>, shared);
    if (err != cudaSuccess) return err;
    decode_tiles<T><<<static_cast<unsigned>(grid.tile_count), kTileThreads, shared, stream>>>(
        grid, groups, codes, code_bytes, form, header, anchors, out, l.zero_codes, status);
  }
  check_zero_count<T><<<1, 1, 0, stream>>>(header, l.zero_codes, status);
  return cudaGetLastError();
}

}  // namespace

size_t decode_scratch_bytes(const std::vector<size_t>& dims, const CodeFormat& format) {
  Grid grid;
  if (grid_of(dims, grid) != GridCheck::kOk) return 0;
  return decode_layout(nullptr, grid, format.coarse_levels).total;
}

cudaError_t decode(const ConstCodeStreams& codes, const std::array<size_t, kCodeGroups>& code_sizes,
                   const uint8_t* side, size_t side_size, const std::vector<size_t>& dims, const CodeFormat& format,
                   uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (format.width != 4 && format.width != 8) return cudaErrorInvalidValue;
  if (format.code_bytes != 1 && format.code_bytes != 2) return cudaErrorInvalidValue;
  if (format.code_form != CodeForm::kOffset && format.code_form != CodeForm::kSigned &&
      format.code_form != CodeForm::kZigzag)
    return cudaErrorInvalidValue;
  Grid grid;
  if (!device_grid_of(dims, grid)) return cudaErrorInvalidValue;
  if (code_sizes != code_group_bytes(dims, format.code_bytes)) return cudaErrorInvalidValue;
  return format.width == 4
             ? decode_typed<float>(codes, side, side_size, grid, format, out, status, scratch, stream)
             : decode_typed<double>(codes, side, side_size, grid, format, out, status, scratch, stream);
}

}  // namespace fz::spline::cuda
