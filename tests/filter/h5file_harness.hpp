// File-level hostile-chunk harness (issue 12, item 2), shared by the libFuzzer
// target (h5file_fuzz.cpp) and the deterministic replay run under ASan in
// ctest (h5file_replay.cpp).
//
// At start it builds an HDF5 file in memory (core driver, no backing store)
// holding one filtered dataset per dtype kind and chunk shape (float32/64
// under every lossy preset and mode and lossless, big-endian floats, int8..64,
// uint8/16, h5py's bool (an enum of int8), fixed strings S1/S4, opaque V1,
// compound, array; 1-D/2-D/3-D, ragged edge chunks), writes smooth
// "real-looking" data through the filter, and collects every stored frame
// with H5Dread_chunk. A case then puts a frame into one chunk of one dataset
// with H5Dwrite_chunk -- a valid frame from any dataset, or one forged from it
// (header fields rewritten and the frame serialised again, so both CRC32C
// fields are right; raw frames of any size and dtype; byte edits with the
// CRCs recomputed; truncations) -- reads the whole dataset and a hyperslab
// with H5Dread into exactly-sized buffers, and puts the original frame back.
//
// A read may fail. It must never crash or over-read (ASan), and a read that
// succeeds through a frame the engine refuses, or one that decodes to a
// different byte count than the chunk HDF5 expects, is a violation (the
// filter handed HDF5 a buffer of the wrong size, where a corrupted,
// truncated or hostile frame must give an HDF5 read error).
//
// The filter is compiled into the program (the plugin's sources) and
// registered with H5Zregister(H5PLget_plugin_info()); its run-time binding
// must find the libhdf5 this program links. Plugin loading from
// HDF5_PLUGIN_PATH is switched off, so a plugin .so cannot stand in for it.
//
// The datasets (specs, types, data) are in h5file_datasets.hpp, the frame
// forging in h5file_forge.hpp; this file holds the cases and the checks.
#pragma once

#include <H5PLextern.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "fz/fz.hpp"
#include "h5file_datasets.hpp"
#include "h5file_forge.hpp"

namespace fz::h5file {

// ---- fuzz input reader: zeros once the input is used up ---------------------

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  bool empty() const { return pos_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Which frame of which dataset.
struct FrameRef {
  size_t dataset = 0;
  size_t chunk = 0;
};

// One case: which frame goes where, and what is done to it.
struct Case {
  size_t target = 0;        // dataset
  size_t target_chunk = 0;  // chunk index in that dataset
  FrameRef source;
  enum class Kind { AsIs, Forged, Edited, EditedNoCrc, Truncated } kind = Kind::AsIs;
  Forge forge;
  std::vector<std::pair<uint32_t, uint8_t>> edits;  // (offset, xor value) for Edited*
  uint32_t truncate_to = 0;                         // for Truncated
  // The hyperslab read: start inside the target chunk, extent in elements.
  std::array<hsize_t, 3> slab_start_in_chunk{0, 0, 0};
  std::array<hsize_t, 3> slab_count{1, 1, 1};
};

struct Outcome {
  bool skipped = false;  // HDF5 would not store the frame in this chunk
  bool whole_ok = false;
  bool slab_ok = false;
  bool violation = false;
  std::string message;
};

class Harness {
 public:
  // Built once per process; aborts if the filter cannot be registered or a
  // dataset cannot be written (the harness itself is broken then).
  static Harness& instance() {
    static Harness* const harness = new Harness;  // never destroyed: HDF5 closes at exit
    return *harness;
  }

  size_t dataset_count() const { return datasets_.size(); }
  const Dataset& dataset(size_t i) const { return datasets_[i]; }
  const std::vector<FrameRef>& frames() const { return frames_; }
  size_t frame_count() const { return frames_.size(); }

  // The fuzz entry: the input picks the case.
  Outcome run_input(const uint8_t* data, size_t size) {
    Input in(data, size);
    Case c;
    c.target = in.u8() % datasets_.size();
    const Dataset& target = datasets_[c.target];
    c.target_chunk = in.u8() % target.frames.size();
    c.source = frames_[in.u16() % frames_.size()];
    const unsigned kind = in.u8() % 8;
    switch (kind) {
      case 0: c.kind = Case::Kind::AsIs; break;
      case 1: case 2: case 3: {
        c.kind = Case::Kind::Forged;
        const uint8_t which = in.u8();
        c.forge.raw = kind != 1;
        c.forge.size = static_cast<Forge::Size>(in.u8() % 9);
        c.forge.size_value = in.u32() % (4 * target.chunk_bytes + 64);
        if (which & 1) c.forge.element_size = 1 + in.u8() % 16;
        if (which & 2) c.forge.element_class = in.u8() % 4;
        if (which & 4) c.forge.byte_order = in.u8() % 2;
        if (which & 8) c.forge.preset = 1 + in.u8() % 6;
        if (which & 16) c.forge.truncate_by = 1 + in.u8() % 8;
        break;
      }
      case 4: case 5: {
        c.kind = kind == 4 ? Case::Kind::Edited : Case::Kind::EditedNoCrc;
        const unsigned count = 1 + in.u8() % 16;
        for (unsigned i = 0; i < count && !in.empty(); ++i) {
          const uint16_t offset = in.u16();
          const uint8_t value = in.u8();
          c.edits.emplace_back(offset, value != 0 ? value : uint8_t{0x80});  // a change, never a no-op
        }
        break;
      }
      default:
        c.kind = Case::Kind::Truncated;
        c.truncate_to = in.u16();
        break;
    }
    for (int d = 0; d < target.spec.rank; ++d) {
      c.slab_start_in_chunk[d] = in.u8() % target.spec.chunk[d];
      c.slab_count[d] = 1 + in.u8() % (target.spec.chunk[d] + 2);
    }
    return run(c);
  }

  // Every chunk given back its own frame must read, whole and as a slab: a
  // harness whose reads all fail would find nothing. Dies otherwise.
  void self_check() {
    for (size_t d = 0; d < datasets_.size(); ++d) {
      for (size_t k = 0; k < datasets_[d].frames.size(); ++k) {
        Case c;
        c.target = d;
        c.target_chunk = k;
        c.source = {d, k};
        for (int axis = 0; axis < datasets_[d].spec.rank; ++axis) c.slab_count[axis] = datasets_[d].spec.chunk[axis];
        const Outcome outcome = run(c);
        if (outcome.skipped || !outcome.whole_ok || !outcome.slab_ok || outcome.violation) {
          die(std::string("self-check: ") + datasets_[d].spec.name + " chunk " + std::to_string(k) +
              " does not read back with its own frame");
        }
      }
    }
  }

  // The frame a case writes (empty = none could be made: the case is skipped).
  std::vector<uint8_t> frame_for(const Case& c) const {
    const std::vector<uint8_t>& source = datasets_[c.source.dataset].frames[c.source.chunk];
    std::vector<uint8_t> frame = source;
    const size_t target_bytes = datasets_[c.target].chunk_bytes;
    switch (c.kind) {
      case Case::Kind::AsIs:
        break;
      case Case::Kind::Forged:
        frame = forge(source, c.forge, target_bytes);
        break;
      case Case::Kind::Edited:
      case Case::Kind::EditedNoCrc:
        for (const auto& [offset, value] : c.edits) frame[offset % frame.size()] ^= value;
        if (c.kind == Case::Kind::Edited) fix_crcs(frame);
        break;
      case Case::Kind::Truncated:
        frame.resize(c.truncate_to % frame.size());
        fix_crcs(frame);
        break;
    }
    return frame;
  }

  Outcome run(const Case& c) {
    Outcome outcome;
    Dataset& target = datasets_[c.target];
    std::vector<uint8_t> frame = frame_for(c);
    if (frame.empty()) frame.push_back(0);  // HDF5 refuses zero-byte chunks
    const auto& offset = target.chunk_offsets[c.target_chunk];
    // HDF5 refuses a stored chunk too large for its size field (which it
    // sizes from the chunk's own byte count): nothing to read then.
    if (H5Dwrite_chunk(target.id, H5P_DEFAULT, 0, offset.data(), frame.size(), frame.data()) < 0) {
      outcome.skipped = true;
      return outcome;
    }

    // The whole dataset, into a buffer of exactly its size.
    std::vector<uint8_t> whole(target.data.size());
    outcome.whole_ok = H5Dread(target.id, target.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, whole.data()) >= 0;
    if (!outcome.whole_ok && trace()) H5Eprint2(H5E_DEFAULT, stderr);

    // A hyperslab starting inside the target chunk.
    std::array<hsize_t, 3> start{0, 0, 0}, count{1, 1, 1};
    size_t slab_elements = 1;
    for (int d = 0; d < target.spec.rank; ++d) {
      start[d] = std::min(offset[d] + c.slab_start_in_chunk[d], target.spec.dims[d] - 1);
      count[d] = std::max<hsize_t>(1, std::min(c.slab_count[d], target.spec.dims[d] - start[d]));
      slab_elements *= count[d];
    }
    std::vector<uint8_t> slab(slab_elements * target.element_size);
    const hid_t file_space = H5Dget_space(target.id);
    const hid_t memory_space = H5Screate_simple(target.spec.rank, count.data(), nullptr);
    if (file_space < 0 || memory_space < 0 ||
        H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) {
      die("hyperslab selection failed");
    }
    outcome.slab_ok = H5Dread(target.id, target.type, memory_space, file_space, H5P_DEFAULT, slab.data()) >= 0;
    H5Sclose(memory_space);
    H5Sclose(file_space);

    // Put the original frame back, so every case starts from the same file.
    const std::vector<uint8_t>& original = target.frames[c.target_chunk];
    if (H5Dwrite_chunk(target.id, H5P_DEFAULT, 0, offset.data(), original.size(), original.data()) < 0) {
      die("H5Dwrite_chunk (restore) failed for " + std::string(target.spec.name));
    }

    if (trace()) {
      std::fprintf(stderr, "h5file: %s chunk %zu <- %s chunk %zu, case kind %d, %zu-byte frame: whole %s, slab %s\n",
                   target.spec.name, c.target_chunk, datasets_[c.source.dataset].spec.name, c.source.chunk,
                   static_cast<int>(c.kind), frame.size(), outcome.whole_ok ? "read" : "failed",
                   outcome.slab_ok ? "read" : "failed");
    }

    // A successful read through this chunk must have decoded a frame the
    // engine accepts, to exactly the chunk's byte count.
    // (The slab starts inside the chunk, so it read through it too.)
    if (outcome.whole_ok || outcome.slab_ok) {
      std::string why;
      try {
        const FrameInfo info = fz::inspect(frame.data(), frame.size());
        if (info.original_bytes != target.chunk_bytes) {
          why = "frame decodes to " + std::to_string(info.original_bytes) + " bytes, a chunk is " +
                std::to_string(target.chunk_bytes);
        }
      } catch (const std::exception& e) {
        why = std::string("the engine refuses the frame (") + e.what() + ")";
      }
      if (!why.empty()) {
        outcome.violation = true;
        outcome.message = std::string("H5Dread succeeded on ") + target.spec.name + " chunk " +
                          std::to_string(c.target_chunk) + " (frame from " +
                          datasets_[c.source.dataset].spec.name + " chunk " + std::to_string(c.source.chunk) +
                          ") but " + why;
      }
    }
    return outcome;
  }

 private:
  // H5FILE_TRACE=1: one line per case on stderr (for replaying a crash).
  static bool trace() {
    static const bool on = std::getenv("H5FILE_TRACE") != nullptr;
    return on;
  }

  Harness() {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    // Only the filter compiled into this program: no plugin from HDF5_PLUGIN_PATH.
    H5PLset_loading_state(0);
    const void* info = H5PLget_plugin_info();
    if (info == nullptr) die("H5PLget_plugin_info found no HDF5 (the run-time binding failed)");
    if (H5Zregister(info) < 0) die("H5Zregister failed");
    if (H5Zfilter_avail(kFilterId) <= 0) die("filter 32850 not available after H5Zregister");

    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 20, 0);
    file_ = H5Fcreate("h5file_harness.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (file_ < 0) die("H5Fcreate (core driver) failed");

    for (const Spec& spec : specs()) add(spec);
    for (size_t d = 0; d < datasets_.size(); ++d) {
      for (size_t k = 0; k < datasets_[d].frames.size(); ++k) frames_.push_back({d, k});
    }
  }

  void add(const Spec& spec) {
    Dataset ds;
    ds.spec = spec;
    ds.type = make_type(spec);
    ds.element_size = H5Tget_size(ds.type);
    size_t elements = 1, chunk_elements = 1;
    for (int d = 0; d < spec.rank; ++d) {
      elements *= spec.dims[d];
      chunk_elements *= spec.chunk[d];
    }
    ds.chunk_bytes = chunk_elements * ds.element_size;

    const hid_t space = H5Screate_simple(spec.rank, spec.dims.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, spec.rank, spec.chunk.data());
    if (spec.fill_marker) {
      const float fill = -1e34f;
      H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
    }
    if (H5Pset_filter(dcpl, kFilterId, H5Z_FLAG_MANDATORY, spec.cd.size(), spec.cd.data()) < 0) {
      die(std::string("H5Pset_filter failed for ") + spec.name);
    }
    // No chunk cache: every read runs the filter on what is stored now.
    const hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 0, 0, 1.0);
    ds.id = H5Dcreate2(file_, spec.name, ds.type, space, H5P_DEFAULT, dcpl, dapl);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Sclose(space);
    if (ds.id < 0) die(std::string("H5Dcreate2 failed for ") + spec.name + " (set_local refused?)");

    ds.data = make_data(spec, ds.type, elements);
    if (H5Dwrite(ds.id, ds.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.data.data()) < 0) {
      die(std::string("H5Dwrite failed for ") + spec.name);
    }
    H5Fflush(file_, H5F_SCOPE_LOCAL);

    // Every chunk's offset and stored frame.
    std::array<hsize_t, 3> offset{0, 0, 0};
    while (true) {
      hsize_t stored = 0;
      if (H5Dget_chunk_storage_size(ds.id, offset.data(), &stored) < 0 || stored == 0) {
        die(std::string("no stored chunk in ") + spec.name);
      }
      std::vector<uint8_t> frame(stored);
      uint32_t mask = 0;
      if (H5Dread_chunk(ds.id, H5P_DEFAULT, offset.data(), &mask, frame.data()) < 0 || mask != 0) {
        die(std::string("H5Dread_chunk failed (or the filter was skipped) in ") + spec.name);
      }
      try {
        const FrameInfo info = fz::inspect(frame.data(), frame.size());
        if (info.original_bytes != ds.chunk_bytes) die(std::string("stored frame of the wrong size in ") + spec.name);
      } catch (const std::exception& e) {
        die(std::string("stored chunk of ") + spec.name + " is not a valid frame: " + e.what());
      }
      ds.chunk_offsets.push_back(offset);
      ds.frames.push_back(std::move(frame));
      int d = spec.rank - 1;
      for (; d >= 0; --d) {
        offset[d] += spec.chunk[d];
        if (offset[d] < spec.dims[d]) break;
        offset[d] = 0;
      }
      if (d < 0) break;
    }
    datasets_.push_back(std::move(ds));
  }

  hid_t file_ = -1;
  std::vector<Dataset> datasets_;
  std::vector<FrameRef> frames_;
};

}  // namespace fz::h5file
