#include "chunk_writer.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "cd_values.hpp"
#include "chunk_reader.hpp"
#include "cli.hpp"
#include "frame_check.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy.hpp"

namespace h5fz {

namespace {

// Copies between the box's data and one chunk buffer, row by row: the part
// of the chunk in [lo, hi) (dataset coordinates), to_chunk or back.
void copy_part(const std::vector<hsize_t>& offset, const std::vector<hsize_t>& lo, const std::vector<hsize_t>& hi,
               const std::vector<hsize_t>& chunks, const WriteBox& box, size_t element, const uint8_t* data,
               uint8_t* chunk) {
  const size_t rank = chunks.size();
  std::vector<hsize_t> at(lo);  // walks the rows (all axes but the last)
  const size_t run = static_cast<size_t>(hi[rank - 1] - lo[rank - 1]) * element;
  while (true) {
    size_t in_chunk = 0, in_box = 0;
    for (size_t a = 0; a < rank; ++a) {
      in_chunk = in_chunk * chunks[a] + (at[a] - offset[a]);
      in_box = in_box * box.count[a] + (at[a] - box.start[a]);
    }
    std::memcpy(chunk + in_chunk * element, data + in_box * element, run);
    size_t a = rank - 1;
    while (a-- > 0) {
      if (++at[a] < hi[a]) break;
      at[a] = lo[a];
    }
    if (a == static_cast<size_t>(-1)) break;
  }
}

struct Chunk {
  std::vector<hsize_t> offset, lo, hi;
  fz::Bytes bytes;           // the chunk as the filter would get it
  fz::Bytes frame;           // a stored frame to merge into (decoded into bytes first)
  fz::FrameInfo info;
};

}  // namespace

WriteStats write_box(hid_t dataset, const WriteBox& requested, const void* data_bytes, const fz::Options& policy) {
  const std::string name = dataset_name(dataset);
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  const std::vector<hsize_t> dims = dataset_dims(dataset, name);
  WriteBox box = requested;
  resolve_box(dims, box.start, box.count, name);
  const size_t element = H5Tget_size(type.get());
  if (has_variable_length(type.get())) throw ToolError(variable_length_refusal(name));
  WriteStats stats;
  if (box_bytes(box.count, element, name) == 0) return stats;
  const std::optional<std::vector<unsigned>> cd = fz_alone(dcpl.get());
  if (!cd)
    throw ToolError(name + ": not a chunked dataset with H5Z-FZ as its only filter: write it with H5Dwrite");
  fz::Options options;
  fz::DataType dtype;
  std::vector<uint64_t> chunk_dims;
  try {
    const fz::filter::StoredParams params = fz::filter::decode_stored(cd->data(), cd->size());
    if (!params.dataset.first_filter) throw fz::Error("its chunks reach the filter as bytes");
    options = fz::filter::dataset_options(params);  // HDF5's fill value and the missing value, as the filter
    dtype = params.dataset.dtype;
    chunk_dims.assign(params.dataset.chunk_dims.begin(), params.dataset.chunk_dims.end());
  } catch (const fz::Error& e) {
    throw ToolError(name + ": " + e.what());
  }
  options.threads = policy.threads;
  options.device = policy.device;
  std::vector<hsize_t> chunks(dims.size());
  H5Pget_chunk(dcpl.get(), static_cast<int>(dims.size()), chunks.data());
  const size_t chunk_bytes = chunk_bytes_of(chunks, element, name);
  if (dtype.size != element || chunk_dims.size() != chunks.size() ||
      !std::equal(chunks.begin(), chunks.end(), chunk_dims.begin()))
    throw ToolError(name + ": the filter's stored parameters do not match the dataset (a damaged file)");
  const fz::Bytes fill = fill_value_of(dcpl.get(), type.get(), element);
  const auto* data = static_cast<const uint8_t*>(data_bytes);

  ChunkWalk walk(box.start, box.count, chunks);
  const size_t per_group = std::max<size_t>(1, (size_t{256} << 20) / chunk_bytes);
  while (!walk.done()) {
    std::vector<Chunk> group;
    std::vector<size_t> to_decode;
    for (; !walk.done() && group.size() < per_group; walk.next()) {
      Chunk c;
      c.offset = walk.offset();
      c.lo = walk.lo();
      c.hi = walk.hi();
      bool covered = true;  // every element of the chunk inside the dataset is in the box
      for (size_t a = 0; a < dims.size(); ++a)
        covered &= c.lo[a] == c.offset[a] && c.hi[a] == std::min(dims[a], c.offset[a] + chunks[a]);
      ++stats.chunks;
      hsize_t stored = 0;
      const bool written =
          !covered && H5Dget_chunk_storage_size(dataset, c.offset.data(), &stored) >= 0 && stored > 0;
      H5Eclear2(H5E_DEFAULT);
      bool edge = false;
      for (size_t a = 0; a < dims.size(); ++a) edge |= c.offset[a] + chunks[a] > dims[a];
      if (!written) {
        // The fill value around the part (an edge chunk's padding, or a
        // chunk never written), as HDF5 builds it; a whole inner chunk is
        // all data.
        c.bytes.resize(chunk_bytes);
        if (!covered || edge)
          for (size_t at = 0; at < chunk_bytes; at += element) std::memcpy(c.bytes.data() + at, fill.data(), element);
      } else {
        ++stats.merged;
        if (stored > fz::max_frame_bytes(chunk_bytes, dims.size()))
          throw ToolError(name + ": a stored chunk of " + std::to_string(stored) +
                          " bytes is longer than any frame of a " + std::to_string(chunk_bytes) +
                          "-byte chunk (a damaged file)");
        c.frame.resize(static_cast<size_t>(stored));
        uint32_t mask = 0;
        require_hdf5(H5Dread_chunk(dataset, H5P_DEFAULT, c.offset.data(), &mask, c.frame.data()),
                     name + ": cannot read a chunk to merge into");
        if (mask & 1u) {  // stored unfiltered by HDF5: its bytes are the chunk
          if (c.frame.size() < chunk_bytes) throw ToolError(name + ": an unfiltered chunk is short");
          c.bytes.assign(c.frame.begin(), c.frame.begin() + static_cast<std::ptrdiff_t>(chunk_bytes));
          c.frame.clear();
        } else {
          try {
            c.info = fz::inspect_header(c.frame.data(), c.frame.size());
            fz::filter::check_frame(cd->data(), cd->size(), c.info);
          } catch (const fz::Error& e) {
            throw ToolError(name + ": a stored chunk to merge into: " + e.what());
          }
          c.bytes.resize(chunk_bytes);
          to_decode.push_back(group.size());
        }
      }
      group.push_back(std::move(c));
    }
    if (!to_decode.empty()) {
      std::vector<fz::FrameView> views;
      for (size_t i : to_decode) views.push_back({group[i].frame.data(), group[i].frame.size(), group[i].bytes.data(),
                                                  chunk_bytes});
      try {
        const std::vector<size_t> lengths = fz::decompress_batch(views, options);
        for (size_t k = 0; k < to_decode.size(); ++k) {
          if (lengths[k] != chunk_bytes)
            throw fz::Error("a stored frame decodes to " + std::to_string(lengths[k]) + " bytes, a chunk holds " +
                            std::to_string(chunk_bytes));
          Chunk& c = group[to_decode[k]];
          fz::filter::check_decoded(cd->data(), cd->size(), c.info, c.bytes.data(), chunk_bytes, options.threads);
          c.frame = fz::Bytes();
        }
      } catch (const fz::Error& e) {
        throw ToolError(name + ": a stored chunk to merge into: " + e.what());
      }
    }
    std::vector<fz::ChunkView> views;
    for (Chunk& c : group) {
      copy_part(c.offset, c.lo, c.hi, chunks, box, element, data, c.bytes.data());
      views.push_back({c.bytes.data(), chunk_bytes, chunk_dims});
    }
    std::vector<fz::Bytes> frames;
    try {
      frames = fz::compress_batch(views, dtype, options);
    } catch (const fz::Error& e) {
      throw ToolError(name + ": " + e.what());
    }
    for (size_t i = 0; i < group.size(); ++i) {
      require_hdf5(H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, group[i].offset.data(), frames[i].size(), frames[i].data()),
                   name + ": cannot store a chunk");
      stats.frame_bytes += frames[i].size();
    }
  }
  return stats;
}

}  // namespace h5fz
