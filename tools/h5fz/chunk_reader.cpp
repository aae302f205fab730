#include "chunk_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "cli.hpp"
#include "environment.hpp"
#include "filter_params.hpp"
#include "frame_check.hpp"
#include "hdf5_handle.hpp"
#include "plugin_lookup.hpp"
#include "repack_copy.hpp"

namespace h5fz {

namespace {

// Variable-length elements (strings, sequences, anywhere in the type) are
// references to a heap, not data: their stored chunks hold heap IDs, which
// only HDF5 can turn into values.
bool variable_length(hid_t type) {
  const htri_t vlen = H5Tdetect_class(type, H5T_VLEN);
  const htri_t string = H5Tis_variable_str(type);
  if (vlen > 0 || string > 0) return true;
  const H5T_class_t type_class = H5Tget_class(type);
  if (type_class == H5T_COMPOUND) {
    const int members = H5Tget_nmembers(type);
    for (int i = 0; i < members; ++i) {
      Handle member(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
      if (member.ok() && variable_length(member.get())) return true;
    }
  } else if (type_class == H5T_ARRAY || type_class == H5T_ENUM) {
    Handle base(H5Tget_super(type), H5Tclose);
    if (base.ok() && variable_length(base.get())) return true;
  }
  H5Eclear2(H5E_DEFAULT);
  return false;
}

// The frame's header against the dataset's stored parameters, as the
// filter checks it (filter/frame_check.hpp).
fz::FrameInfo checked_header(const std::vector<unsigned>& cd, const fz::Bytes& frame, const std::string& name,
                             size_t chunk_bytes) {
  try {
    const fz::FrameInfo info = fz::inspect_header(frame.data(), frame.size());
    const fz::filter::FrameExpectation target = fz::filter::check_frame(cd.data(), cd.size(), info);
    if (!target.exact && info.original_bytes != chunk_bytes) {
      throw fz::Error("frame decodes to " + std::to_string(info.original_bytes) + " bytes, a chunk holds " +
                      std::to_string(chunk_bytes) + " (another filter before H5Z-FZ: read through HDF5)");
    }
    return info;
  } catch (const fz::Error& e) {
    throw ToolError(name + ": " + e.what());
  }
}

// Where one chunk's part of the box lies: in the result and in the chunk.
struct Piece {
  std::vector<hsize_t> offset;           // the chunk's first element in the dataset
  std::vector<hsize_t> lo, hi;           // the part inside the box, dataset coordinates
  bool contiguous = false;               // the whole chunk is one run of the result
  fz::Bytes frame;
  fz::FrameInfo info;                    // the frame's header, checked against the dataset
  uint8_t* scratch = nullptr;            // the decoded chunk when it is not contiguous
  uint8_t* target = nullptr;             // where it was decoded
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

uint64_t box_bytes(const std::vector<hsize_t>& count, size_t element, const std::string& name) {
  uint64_t elements = 1;
  bool overflow = false;
  for (hsize_t c : count) overflow |= __builtin_mul_overflow(elements, uint64_t{c}, &elements);
  uint64_t bytes = 0;
  overflow |= __builtin_mul_overflow(elements, uint64_t{element}, &bytes);
  if (overflow || bytes > SIZE_MAX)
    throw ToolError(name + ": the box [" + shape_text(std::vector<uint64_t>(count.begin(), count.end())) + "] of " +
                    std::to_string(element) + "-byte elements is over 2^64 bytes: read a smaller box (--start, --count)");
  if (bytes == 0) return 0;
  const uint64_t memory = fz::total_memory();
  if (memory != 0 && bytes > memory)
    throw ToolError(name + ": the box [" + shape_text(std::vector<uint64_t>(count.begin(), count.end())) + "] is " +
                    human_bytes(bytes) + ", more than this machine's memory (" + human_bytes(memory) +
                    "): read a smaller box (--start, --count)");
  return bytes;
}

std::string dataset_name(hid_t dataset) {
  char name[1024] = {};
  H5Iget_name(dataset, name, sizeof name);
  return name;
}

std::optional<std::vector<unsigned>> fz_alone(hid_t dcpl) {
  if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_nfilters(dcpl) != 1) return std::nullopt;
  unsigned flags = 0;
  std::vector<unsigned> cd(256);
  size_t n = cd.size();
  if (H5Pget_filter2(dcpl, 0, &flags, &n, cd.data(), 0, nullptr, nullptr) != kFzFilterId) return std::nullopt;
  cd.resize(std::min(n, cd.size()));
  return cd;
}

std::vector<hsize_t> parse_box_numbers(const std::string& option, const std::string& text) {
  std::vector<hsize_t> values;
  for (const std::string& item : split_commas(text)) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || item[0] == '-' || item[0] == '+' || *end != '\0' || errno == ERANGE)
      throw UsageError(option + " needs whole numbers below 2^64, got '" + item + "'");
    values.push_back(static_cast<hsize_t>(value));
  }
  if (values.empty()) throw UsageError(option + " needs comma-separated whole numbers");
  return values;
}

std::vector<hsize_t> dataset_dims(hid_t dataset, const std::string& name) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank <= 0) throw ToolError(name + ": not an array dataset");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

void resolve_box(const std::vector<hsize_t>& dims, std::vector<hsize_t>& start, std::vector<hsize_t>& count,
                 const std::string& name) {
  if (start.empty() && count.empty()) {
    start.assign(dims.size(), 0);
    count = dims;
  }
  if (start.size() != dims.size() || count.size() != dims.size())
    throw ToolError(name + ": the box has " + std::to_string(start.size()) + " axes, the dataset " +
                    std::to_string(dims.size()));
  for (size_t a = 0; a < dims.size(); ++a) {
    if (start[a] > dims[a] || count[a] > dims[a] - start[a])
      throw ToolError(name + ": the box leaves the dataset in axis " + std::to_string(a));
  }
}

size_t chunk_bytes_of(const std::vector<hsize_t>& chunks, size_t element, const std::string& name) {
  // HDF5 keeps a chunk under 4 GiB; the product is checked all the same.
  size_t bytes = element;
  for (hsize_t c : chunks) {
    if (c == 0 || __builtin_mul_overflow(bytes, static_cast<size_t>(c), &bytes))
      throw ToolError(name + ": the chunk shape's size does not fit 64 bits (a damaged file)");
  }
  return bytes;
}

fz::Bytes fill_value_of(hid_t dcpl, hid_t type, size_t element) {
  fz::Bytes fill(element, 0);
  H5Pget_fill_value(dcpl, type, fill.data());
  H5Eclear2(H5E_DEFAULT);
  return fill;
}

ChunkWalk::ChunkWalk(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                     const std::vector<hsize_t>& chunks)
    : start_(start), count_(count), chunks_(chunks), first_(chunks.size()), last_(chunks.size()),
      offset_(chunks.size()), lo_(chunks.size()), hi_(chunks.size()) {
  for (size_t a = 0; a < chunks.size(); ++a) {
    if (count[a] == 0) done_ = true;
    first_[a] = start[a] / chunks[a];
    last_[a] = count[a] == 0 ? first_[a] : (start[a] + count[a] - 1) / chunks[a];
  }
  index_ = first_;
  if (!done_) place();
}

void ChunkWalk::place() {
  for (size_t a = 0; a < chunks_.size(); ++a) {
    offset_[a] = index_[a] * chunks_[a];
    lo_[a] = std::max(start_[a], offset_[a]);
    hi_[a] = std::min(start_[a] + count_[a], offset_[a] + chunks_[a]);
  }
}

void ChunkWalk::next() {
  size_t a = chunks_.size();
  while (a-- > 0) {
    if (++index_[a] <= last_[a]) break;
    index_[a] = first_[a];
  }
  done_ = a == static_cast<size_t>(-1);
  if (!done_) place();
}

BoxCommand open_box_command(const ParsedArgs& parsed, unsigned access) {
  BoxCommand c;
  c.policy = fz::Options();
  fz::filter::apply_policy(fz::filter::policy_from_environment(), c.policy);
  if (parsed.has("--threads")) c.policy.threads = parse_unsigned("--threads", parsed.get("--threads"));
  if (parsed.has("--device")) c.policy.device = parsed.get("--device");
  const std::string& path = parsed.positional.at(0);
  const std::string& name = parsed.positional.at(1);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  c.file = Handle(H5Fopen(path.c_str(), access, H5P_DEFAULT), H5Fclose);
  if (!c.file.ok())
    throw ToolError("cannot open " + path + (access == H5F_ACC_RDWR ? " for writing" : "") + ": " +
                    hdf5_error_text("not HDF5"));
  c.dataset = Handle(H5Dopen2(c.file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!c.dataset.ok()) throw ToolError("no dataset " + name + ": " + hdf5_error_text("?"));
  c.space = Handle(H5Dget_space(c.dataset.get()), H5Sclose);
  c.type = Handle(H5Dget_type(c.dataset.get()), H5Tclose);
  c.dims = dataset_dims(c.dataset.get(), name);
  const size_t rank = c.dims.size();
  c.start.assign(rank, 0);
  if (parsed.has("--start")) c.start = parse_box_numbers("--start", parsed.get("--start"));
  if (c.start.size() != rank) throw UsageError("--start needs " + std::to_string(rank) + " values");
  c.count.resize(rank);
  for (size_t a = 0; a < rank; ++a) c.count[a] = c.start[a] <= c.dims[a] ? c.dims[a] - c.start[a] : 0;
  if (parsed.has("--count")) {
    c.count = parse_box_numbers("--count", parsed.get("--count"));
    if (c.count.size() != rank) throw UsageError("--count needs " + std::to_string(rank) + " values");
  }
  for (size_t a = 0; a < rank; ++a) {
    if (c.start[a] > c.dims[a] || c.count[a] > c.dims[a] - c.start[a])
      throw UsageError("the box leaves the dataset in axis " + std::to_string(a) + " (extent " +
                       std::to_string(c.dims[a]) + ")");
  }
  return c;
}

std::string variable_length_refusal(const std::string& name) {
  return name + " has a variable-length type (strings or sequences): its chunks hold references into the file's "
         "heap, not values, and no raw bytes stand for it; read it with h5py or h5dump";
}

bool has_variable_length(hid_t type) { return variable_length(type); }

ReadStats read_box(hid_t dataset, const ReadBox& requested, void* out_bytes, const fz::Options& policy) {
  const std::string name = dataset_name(dataset);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  const std::vector<hsize_t> dims = dataset_dims(dataset, name);
  const int rank = static_cast<int>(dims.size());
  ReadBox box = requested;
  resolve_box(dims, box.start, box.count, name);
  ReadStats stats;
  const size_t element = H5Tget_size(type.get());
  if (variable_length(type.get())) throw ToolError(variable_length_refusal(name));
  if (box_bytes(box.count, element, name) == 0) return stats;
  auto* out = static_cast<uint8_t*>(out_bytes);
  const std::optional<std::vector<unsigned>> cd = fz_alone(dcpl.get());
  if (!cd) {
    stats.through_filter = true;
    Handle memory(H5Screate_simple(rank, box.count.data(), nullptr), H5Sclose);
    require_hdf5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, box.start.data(), nullptr, box.count.data(), nullptr),
                 name + ": cannot select the box");
    if (H5Dread(dataset, type.get(), memory.get(), space.get(), H5P_DEFAULT, out) < 0) {
      const std::string missing = missing_filters(dcpl.get());
      require_hdf5(-1, "cannot read " + name + (missing.empty() ? std::string() : ": " + missing));
    }
    return stats;
  }
  std::vector<hsize_t> chunks(dims.size());
  H5Pget_chunk(dcpl.get(), rank, chunks.data());
  const size_t chunk_bytes = chunk_bytes_of(chunks, element, name);
  const fz::Bytes fill = fill_value_of(dcpl.get(), type.get(), element);

  // The chunks in row-major order, a group at a time (about 256 MiB decoded).
  ChunkWalk walk(box.start, box.count, chunks);
  const size_t per_group = std::max<size_t>(1, (size_t{256} << 20) / chunk_bytes);
  // Chunks only partly in the box are decoded into these, reused from group
  // to group (fresh memory per chunk would cost its page faults every time).
  std::vector<std::unique_ptr<uint8_t[]>> scratch_pool;
  fz::Bytes filled;
  while (!walk.done()) {
    std::vector<Piece> group;
    for (; !walk.done() && group.size() < per_group; walk.next()) {
      Piece piece;
      piece.offset = walk.offset();
      piece.lo = walk.lo();
      piece.hi = walk.hi();
      bool whole = true;
      for (size_t a = 0; a < dims.size(); ++a) whole &= piece.hi[a] - piece.lo[a] == chunks[a];
      piece.contiguous = whole;
      for (size_t a = 1; a < dims.size(); ++a) piece.contiguous &= chunks[a] == box.count[a];
      ++stats.chunks;
      hsize_t stored = 0;
      const bool written = H5Dget_chunk_storage_size(dataset, piece.offset.data(), &stored) >= 0 && stored > 0;
      H5Eclear2(H5E_DEFAULT);
      if (!written) {
        // Never written: HDF5's fill value (one chunk of it, made once).
        if (filled.empty()) {
          filled.resize(chunk_bytes);
          for (size_t at = 0; at < chunk_bytes; at += element) std::memcpy(filled.data() + at, fill.data(), element);
        }
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
          piece.info = checked_header(*cd, piece.frame, name, chunk_bytes);
          group.push_back(std::move(piece));
        }
      }
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
      piece.target = target;
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
      try {
        fz::filter::check_decoded(cd->data(), cd->size(), group[i].info, group[i].target, chunk_bytes,
                                  policy.threads);
      } catch (const fz::Error& e) {
        throw ToolError(name + ": " + e.what());
      }
      if (!group[i].contiguous) place(group[i], group[i].scratch, chunks, box, element, out);
    }
    stats.decoded += group.size();
  }
  return stats;
}

}  // namespace h5fz
