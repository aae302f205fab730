#include "chunk_reader.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "cli.hpp"
#include "filter_params.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy.hpp"

namespace h5fz {

namespace {

std::string name_of(hid_t dataset) {
  char name[1024] = {};
  H5Iget_name(dataset, name, sizeof name);
  return name;
}

bool fz_alone(hid_t dcpl) {
  if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_nfilters(dcpl) != 1) return false;
  unsigned flags = 0;
  size_t n = 0;
  return H5Pget_filter2(dcpl, 0, &flags, &n, nullptr, 0, nullptr, nullptr) == kFzFilterId;
}

// Where one chunk's part of the box lies: in the result and in the chunk.
struct Piece {
  std::vector<hsize_t> offset;           // the chunk's first element in the dataset
  std::vector<hsize_t> lo, hi;           // the part inside the box, dataset coordinates
  bool contiguous = false;               // the whole chunk is one run of the result
  fz::Bytes frame;
  uint8_t* scratch = nullptr;            // the decoded chunk when it is not contiguous
};

// Copies the part of a whole decoded chunk into the result.
void place(const Piece& piece, const uint8_t* chunk, const std::vector<hsize_t>& chunks, const ReadBox& box,
           size_t element, uint8_t* out) {
  const size_t rank = chunks.size();
  std::vector<hsize_t> at(piece.lo);  // walks the rows (all axes but the last)
  const size_t run = static_cast<size_t>(piece.hi[rank - 1] - piece.lo[rank - 1]) * element;
  while (true) {
    size_t src = 0, dst = 0;
    for (size_t a = 0; a < rank; ++a) {
      src = src * chunks[a] + (at[a] - piece.offset[a]);
      dst = dst * box.count[a] + (at[a] - box.start[a]);
    }
    std::memcpy(out + dst * element, chunk + src * element, run);
    size_t a = rank - 1;
    while (a-- > 0) {
      if (++at[a] < piece.hi[a]) break;
      at[a] = piece.lo[a];
    }
    if (a == static_cast<size_t>(-1)) break;
  }
}

}  // namespace

ReadStats read_box(hid_t dataset, const ReadBox& requested, void* out_bytes, const fz::Options& policy) {
  const std::string name = name_of(dataset);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank <= 0) throw ToolError(name + ": not an array dataset");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  ReadBox box = requested;
  if (box.start.empty() && box.count.empty()) {
    box.start.assign(dims.size(), 0);
    box.count = dims;
  }
  if (box.start.size() != dims.size() || box.count.size() != dims.size())
    throw ToolError(name + ": the box has " + std::to_string(box.start.size()) + " axes, the dataset " +
                    std::to_string(dims.size()));
  for (size_t a = 0; a < dims.size(); ++a) {
    if (box.start[a] > dims[a] || box.count[a] > dims[a] - box.start[a])
      throw ToolError(name + ": the box leaves the dataset in axis " + std::to_string(a));
  }
  ReadStats stats;
  uint64_t elements = 1;
  for (hsize_t c : box.count) elements *= c;
  if (elements == 0) return stats;
  const size_t element = H5Tget_size(type.get());
  auto* out = static_cast<uint8_t*>(out_bytes);
  if (!fz_alone(dcpl.get())) {
    stats.through_filter = true;
    Handle memory(H5Screate_simple(rank, box.count.data(), nullptr), H5Sclose);
    require_hdf5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, box.start.data(), nullptr, box.count.data(), nullptr),
                 name + ": cannot select the box");
    require_hdf5(H5Dread(dataset, type.get(), memory.get(), space.get(), H5P_DEFAULT, out), "cannot read " + name);
    return stats;
  }
  std::vector<hsize_t> chunks(dims.size());
  H5Pget_chunk(dcpl.get(), rank, chunks.data());
  size_t chunk_bytes = element;
  for (hsize_t c : chunks) chunk_bytes *= static_cast<size_t>(c);
  fz::Bytes fill(element, 0);
  H5Pget_fill_value(dcpl.get(), type.get(), fill.data());
  H5Eclear2(H5E_DEFAULT);

  // The chunks in row-major order, a group at a time (about 256 MiB decoded).
  std::vector<hsize_t> first(dims.size()), last(dims.size()), index(dims.size());
  for (size_t a = 0; a < dims.size(); ++a) {
    first[a] = box.start[a] / chunks[a];
    last[a] = (box.start[a] + box.count[a] - 1) / chunks[a];
  }
  index = first;
  const size_t per_group = std::max<size_t>(1, (size_t{256} << 20) / chunk_bytes);
  // Chunks only partly in the box are decoded into these, reused from group
  // to group (fresh memory per chunk would cost its page faults every time).
  std::vector<std::unique_ptr<uint8_t[]>> scratch_pool;
  bool more = true;
  while (more) {
    std::vector<Piece> group;
    while (more && group.size() < per_group) {
      Piece piece;
      piece.offset.resize(dims.size());
      piece.lo.resize(dims.size());
      piece.hi.resize(dims.size());
      bool whole = true;
      for (size_t a = 0; a < dims.size(); ++a) {
        piece.offset[a] = index[a] * chunks[a];
        piece.lo[a] = std::max(box.start[a], piece.offset[a]);
        piece.hi[a] = std::min(box.start[a] + box.count[a], piece.offset[a] + chunks[a]);
        whole &= piece.hi[a] - piece.lo[a] == chunks[a];
      }
      piece.contiguous = whole;
      for (size_t a = 1; a < dims.size(); ++a) piece.contiguous &= chunks[a] == box.count[a];
      ++stats.chunks;
      hsize_t stored = 0;
      const bool written = H5Dget_chunk_storage_size(dataset, piece.offset.data(), &stored) >= 0 && stored > 0;
      H5Eclear2(H5E_DEFAULT);
      if (!written) {
        // Never written: HDF5's fill value.
        fz::Bytes filled(chunk_bytes);
        for (size_t at = 0; at < chunk_bytes; at += element) std::memcpy(filled.data() + at, fill.data(), element);
        place(piece, filled.data(), chunks, box, element, out);
      } else {
        // The size comes from the file: no frame of a chunk is longer than
        // its raw frame, so a larger one is refused before it is allocated.
        if (stored > fz::max_frame_bytes(chunk_bytes, dims.size()))
          throw ToolError(name + ": a stored chunk of " + std::to_string(stored) + " bytes is longer than any frame of a " +
                          std::to_string(chunk_bytes) + "-byte chunk (a damaged file)");
        piece.frame.resize(static_cast<size_t>(stored));
        uint32_t mask = 0;
        require_hdf5(H5Dread_chunk(dataset, H5P_DEFAULT, piece.offset.data(), &mask, piece.frame.data()),
                     name + ": cannot read a chunk");
        stats.frame_bytes += stored;
        if (mask & 1u) {
          // Stored without the filter (it failed on this chunk when written).
          if (piece.frame.size() < chunk_bytes) throw ToolError(name + ": an unfiltered chunk is short");
          place(piece, piece.frame.data(), chunks, box, element, out);
        } else {
          group.push_back(std::move(piece));
        }
      }
      size_t a = dims.size();
      while (a-- > 0) {
        if (++index[a] <= last[a]) break;
        index[a] = first[a];
      }
      more = a != static_cast<size_t>(-1);
    }
    if (group.empty()) continue;
    std::vector<fz::FrameView> views;
    size_t scratch_used = 0;
    for (Piece& piece : group) {
      uint8_t* target;
      if (piece.contiguous) {
        size_t dst = 0;
        for (size_t a = 0; a < dims.size(); ++a) dst = dst * box.count[a] + (piece.lo[a] - box.start[a]);
        target = out + dst * element;
      } else {
        if (scratch_used == scratch_pool.size()) scratch_pool.emplace_back(new uint8_t[chunk_bytes]);
        piece.scratch = scratch_pool[scratch_used++].get();
        target = piece.scratch;
      }
      views.push_back({piece.frame.data(), piece.frame.size(), target, chunk_bytes});
    }
    std::vector<size_t> lengths;
    try {
      lengths = fz::decompress_batch(views, policy);
    } catch (const fz::Error& e) {
      throw ToolError(name + ": " + e.what());
    }
    for (size_t i = 0; i < group.size(); ++i) {
      if (lengths[i] != chunk_bytes)
        throw ToolError(name + ": a frame decoded to " + std::to_string(lengths[i]) + " bytes, a chunk holds " +
                        std::to_string(chunk_bytes));
      if (!group[i].contiguous) place(group[i], group[i].scratch, chunks, box, element, out);
    }
    stats.decoded += group.size();
  }
  return stats;
}

}  // namespace h5fz
