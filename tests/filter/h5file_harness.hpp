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
#pragma once

#include <H5PLextern.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "crc32c.hpp"  // engine/src
#include "frame.hpp"   // engine/src
#include "fz/fz.hpp"

namespace fz::h5file {

constexpr H5Z_filter_t kFilterId = 32850;

[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "h5file harness: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

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

// ---- the datasets -------------------------------------------------------------

// How a dataset's bytes are generated, in the file type's own representation
// (reads and writes use the file type as memory type: no conversion).
enum class Gen { Float, Double, Int, Bool, Text, Opaque, Compound, FloatArray };

struct Spec {
  const char* name;
  Gen gen;
  int rank;
  std::array<hsize_t, 3> dims;
  std::array<hsize_t, 3> chunk;
  std::vector<unsigned> cd;  // user layout
  bool fill_marker = false;  // float with a user fill value (-1e34) present in the data
  // With fill_marker: a missing value (-999, cd_values[4..5]) present too, so
  // chunks hold two special values (two chained fillmask stages).
  bool missing_marker = false;
};


inline std::vector<unsigned> lossy(unsigned preset, unsigned mode, double bound) {
  uint64_t bits = 0;
  std::memcpy(&bits, &bound, sizeof bits);
  return {preset, mode, static_cast<unsigned>(bits & 0xFFFFFFFFu), static_cast<unsigned>(bits >> 32)};
}

// lossy() with the missing value's two words (cd[4..5]).
inline std::vector<unsigned> lossy_missing(unsigned preset, unsigned mode, double bound, double missing) {
  std::vector<unsigned> cd = lossy(preset, mode, bound);
  uint64_t bits = 0;
  std::memcpy(&bits, &missing, sizeof bits);
  cd.push_back(static_cast<unsigned>(bits & 0xFFFFFFFFu));
  cd.push_back(static_cast<unsigned>(bits >> 32));
  return cd;
}

struct Dataset {
  Spec spec;
  hid_t id = -1;
  hid_t type = -1;  // the file type, also used as memory type
  size_t element_size = 0;
  size_t chunk_bytes = 0;  // what HDF5 expects a chunk to decode to (edge chunks too)
  std::vector<std::array<hsize_t, 3>> chunk_offsets;
  std::vector<std::vector<uint8_t>> frames;  // the stored frame of each chunk, as written
  std::vector<uint8_t> data;                 // what was written
};

// Which frame of which dataset.
struct FrameRef {
  size_t dataset = 0;
  size_t chunk = 0;
};

// A rewrite of a frame's header (and maybe payload). The frame is parsed, its
// fields replaced, and serialised again with the engine's frame writer, so
// both CRCs match whatever it claims.
struct Forge {
  enum class Size { Keep, MinusOne, PlusOne, Double, Half, Tiny, Zero, Target, Value };
  bool raw = false;                  // replace stages by a raw payload (decodes trivially)
  Size size = Size::Keep;            // decoded byte count
  uint64_t size_value = 0;           // for Size::Value
  int element_size = -1;             // -1 keep
  int element_class = -1;            // -1 keep
  int byte_order = -1;               // -1 keep
  int preset = -1;                   // -1 keep
  int truncate_by = 0;               // bytes cut from the end after forging (CRCs then recomputed)
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

// Recomputes both CRC32C fields of a frame whose header size field is sane;
// leaves anything else alone (the engine then refuses it on other grounds).
inline void fix_crcs(std::vector<uint8_t>& frame) {
  if (frame.size() < 12 || std::memcmp(frame.data(), engine::kFrameMagic, 4) != 0) return;
  const uint32_t header = load_le<uint32_t>(frame.data() + 8);
  if (header < 16 || header > frame.size()) return;
  store_le<uint32_t>(frame.data() + header - 8, engine::crc32c(frame.data() + header, frame.size() - header));
  store_le<uint32_t>(frame.data() + header - 4, engine::crc32c(frame.data(), header - 4));
}

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

  static std::vector<Spec> specs() {
    using G = Gen;
    return {
        {"f32_lossless_1d", G::Float, 1, {1000, 1, 1}, {256, 1, 1}, {1}},
        {"f32_pfpl_abs_2d", G::Float, 2, {30, 20, 1}, {16, 8, 1}, lossy(2, 0, 1e-3)},
        {"f32_pfpl_noa_fill_1d", G::Float, 1, {700, 1, 1}, {200, 1, 1}, lossy(2, 1, 1e-3), true},
        {"f32_cuszhi_noa_fill_missing_1d", G::Float, 1, {700, 1, 1}, {200, 1, 1}, lossy_missing(6, 1, 1e-3, -999.0),
         true, true},
        {"f32_fzgpu_noa_3d", G::Float, 3, {9, 10, 11}, {4, 4, 4}, lossy(3, 1, 1e-3)},
        {"f32_fzgpu_abs_1d", G::Float, 1, {600, 1, 1}, {250, 1, 1}, lossy(3, 0, 1e-2)},
        {"f32_cusz_abs_2d", G::Float, 2, {33, 17, 1}, {16, 16, 1}, lossy(4, 0, 1e-2)},
        {"f32_cusz_noa_1d", G::Float, 1, {900, 1, 1}, {512, 1, 1}, lossy(4, 1, 1e-4)},
        {"f64_lossless_3d", G::Double, 3, {5, 6, 7}, {4, 4, 4}, {1}},
        {"f64_pfpl_abs_1d", G::Double, 1, {700, 1, 1}, {128, 1, 1}, lossy(2, 0, 1e-6)},
        {"f64_fzgpu_abs_2d", G::Double, 2, {20, 20, 1}, {8, 16, 1}, lossy(3, 0, 1e-5)},
        {"f64_cusz_noa_3d", G::Double, 3, {6, 6, 6}, {4, 4, 4}, lossy(4, 1, 1e-3)},
        {"f32be_pfpl_abs_1d", G::Float, 1, {500, 1, 1}, {128, 1, 1}, lossy(2, 0, 1e-3)},
        {"f64be_lossless_2d", G::Double, 2, {12, 13, 1}, {8, 8, 1}, {1}},
        {"i8_1d", G::Int, 1, {1000, 1, 1}, {300, 1, 1}, {1}},
        {"i16_2d", G::Int, 2, {40, 30, 1}, {16, 16, 1}, {1}},
        {"i32_fzgpu_3d", G::Int, 3, {8, 8, 8}, {4, 4, 4}, lossy(3, 0, 1.0)},
        {"i64_1d", G::Int, 1, {300, 1, 1}, {64, 1, 1}, {1}},
        {"u8_2d", G::Int, 2, {50, 50, 1}, {32, 32, 1}, {1}},
        {"u16be_1d", G::Int, 1, {300, 1, 1}, {100, 1, 1}, {1}},
        {"bool_16", G::Bool, 1, {16, 1, 1}, {16, 1, 1}, {1}},
        {"bool_big_1d", G::Bool, 1, {100000, 1, 1}, {65536, 1, 1}, {1}},
        {"bool_2d", G::Bool, 2, {50, 40, 1}, {32, 32, 1}, {1}},
        {"s1_1d", G::Text, 1, {1000, 1, 1}, {256, 1, 1}, {1}},
        {"s4_2d", G::Text, 2, {20, 20, 1}, {8, 8, 1}, {1}},
        {"v1_1d", G::Opaque, 1, {2000, 1, 1}, {1024, 1, 1}, {1}},
        {"v1_3d", G::Opaque, 3, {10, 10, 10}, {8, 8, 8}, {1}},
        {"compound_1d", G::Compound, 1, {100, 1, 1}, {32, 1, 1}, {1}},
        {"array_f32x3_1d", G::FloatArray, 1, {100, 1, 1}, {40, 1, 1}, lossy(2, 0, 1e-3)},
    };
  }

  // The file type for a spec (the name says which variant).
  static hid_t make_type(const Spec& spec) {
    const std::string name = spec.name;
    auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
    if (starts("f32be")) return H5Tcopy(H5T_IEEE_F32BE);
    if (starts("f64be")) return H5Tcopy(H5T_IEEE_F64BE);
    if (starts("f32")) return H5Tcopy(H5T_IEEE_F32LE);
    if (starts("f64")) return H5Tcopy(H5T_IEEE_F64LE);
    if (starts("i8")) return H5Tcopy(H5T_STD_I8LE);
    if (starts("i16")) return H5Tcopy(H5T_STD_I16LE);
    if (starts("i32")) return H5Tcopy(H5T_STD_I32LE);
    if (starts("i64")) return H5Tcopy(H5T_STD_I64LE);
    if (starts("u8")) return H5Tcopy(H5T_STD_U8LE);
    if (starts("u16be")) return H5Tcopy(H5T_STD_U16BE);
    if (starts("bool")) {  // h5py's bool
      const hid_t type = H5Tenum_create(H5T_NATIVE_INT8);
      int8_t value = 0;
      H5Tenum_insert(type, "FALSE", &value);
      value = 1;
      H5Tenum_insert(type, "TRUE", &value);
      return type;
    }
    if (starts("s1") || starts("s4")) {  // h5py's fixed-length bytes
      const hid_t type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, starts("s1") ? 1 : 4);
      H5Tset_strpad(type, H5T_STR_NULLPAD);
      return type;
    }
    if (starts("v1")) {
      const hid_t type = H5Tcreate(H5T_OPAQUE, 1);
      H5Tset_tag(type, "V1");
      return type;
    }
    if (starts("compound")) {  // packed, as h5py writes a numpy record
      const hid_t type = H5Tcreate(H5T_COMPOUND, 12);
      H5Tinsert(type, "depth", 0, H5T_STD_I32LE);
      H5Tinsert(type, "value", 4, H5T_IEEE_F64LE);
      return type;
    }
    if (starts("array")) {
      const hsize_t n = 3;
      return H5Tarray_create2(H5T_IEEE_F32LE, 1, &n);
    }
    die(std::string("no type for ") + spec.name);
  }

  // Smooth fields with a little noise, ramps, runs, text: what real chunks
  // look like, so lossy presets take their real (non-raw) paths.
  static std::vector<uint8_t> make_data(const Spec& spec, hid_t type, size_t elements) {
    const size_t size = H5Tget_size(type);
    const bool big = H5Tget_class(type) != H5T_COMPOUND && H5Tget_class(type) != H5T_ARRAY &&
                     H5Tget_order(type) == H5T_ORDER_BE;
    std::vector<uint8_t> out(elements * size);
    uint32_t noise = 12345;
    auto rand01 = [&] {
      noise = noise * 1664525u + 1013904223u;
      return (noise >> 8) / double(1u << 24);
    };
    auto field = [&](size_t i) {
      const double x = double(i % 97), y = double(i / 97);
      return 20.0 * std::sin(0.11 * x) * std::cos(0.07 * y) + 0.05 * i / double(elements) + 0.01 * rand01();
    };
    auto put = [&](size_t at, const void* value, size_t bytes) {
      std::memcpy(out.data() + at, value, bytes);
      if (big) std::reverse(out.begin() + at, out.begin() + at + bytes);
    };
    static const char text[] = "sea surface temperature, salinity and chlorophyll a; ";
    for (size_t i = 0; i < elements; ++i) {
      switch (spec.gen) {
        case Gen::Float: {
          float v = static_cast<float>(field(i));
          if (spec.fill_marker && i % 37 == 5) v = -1e34f;
          if (spec.missing_marker && i % 41 == 7) v = -999.0f;
          put(i * size, &v, 4);
          break;
        }
        case Gen::Double: {
          const double v = field(i);
          put(i * size, &v, 8);
          break;
        }
        case Gen::Int: {
          const int64_t v = static_cast<int64_t>(i / 3) + static_cast<int64_t>(5 * rand01()) - 2;
          put(i * size, &v, size);  // little-endian low bytes (wraps for narrow types)
          break;
        }
        case Gen::Bool:
          out[i] = ((i / 7) % 3 == 0) ? 1 : 0;
          break;
        case Gen::Text:
          for (size_t k = 0; k < size; ++k) out[i * size + k] = static_cast<uint8_t>(text[(i * size + k) % (sizeof text - 1)]);
          break;
        case Gen::Opaque:
          out[i] = static_cast<uint8_t>((i * 7) ^ (i >> 5) ^ static_cast<size_t>(rand01() * 4));
          break;
        case Gen::Compound: {
          const int32_t depth = static_cast<int32_t>(i * 10);
          const double value = field(i);
          std::memcpy(out.data() + i * size, &depth, 4);
          std::memcpy(out.data() + i * size + 4, &value, 8);
          break;
        }
        case Gen::FloatArray:
          for (size_t k = 0; k < 3; ++k) {
            const float v = static_cast<float>(field(3 * i + k));
            std::memcpy(out.data() + i * size + 4 * k, &v, 4);
          }
          break;
      }
    }
    return out;
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

  // Parses `source`, rewrites what `f` says, serialises it again (CRCs right).
  // Empty when the source cannot be parsed (never for collected frames).
  static std::vector<uint8_t> forge(const std::vector<uint8_t>& source, const Forge& f, size_t target_bytes) {
    engine::ParsedFrame parsed;
    try {
      parsed = engine::parse_frame(source.data(), source.size());
    } catch (const std::exception&) {
      return {};
    }
    FrameInfo info = parsed.info;
    std::vector<Bytes> stored;
    if (f.raw) {
      Bytes decoded(info.original_bytes);
      try {
        fz::decompress_into(source.data(), source.size(), decoded.data(), decoded.size());
      } catch (const std::exception&) {
        return {};
      }
      stored.push_back(std::move(decoded));
      info.flags = engine::kFlagRaw;
      info.stages.clear();
    } else {
      for (const ByteSpan& span : parsed.stored) stored.emplace_back(span.data, span.data + span.size);
    }
    if (f.element_size > 0) info.dtype.size = static_cast<uint32_t>(f.element_size);
    if (f.element_class >= 0) info.dtype.element_class = static_cast<ElementClass>(f.element_class);
    if (f.byte_order >= 0) info.dtype.order = static_cast<ByteOrder>(f.byte_order);
    if (f.preset >= 0) info.preset = static_cast<Preset>(f.preset);

    uint64_t bytes = info.original_bytes;
    switch (f.size) {
      case Forge::Size::Keep: break;
      case Forge::Size::MinusOne: bytes = bytes > 0 ? bytes - 1 : 0; break;
      case Forge::Size::PlusOne: bytes += 1; break;
      case Forge::Size::Double: bytes *= 2; break;
      case Forge::Size::Half: bytes /= 2; break;
      case Forge::Size::Tiny: bytes = 1; break;
      case Forge::Size::Zero: bytes = 0; break;
      case Forge::Size::Target: bytes = target_bytes; break;
      case Forge::Size::Value: bytes = f.size_value; break;
    }
    // Keep the header self-consistent (dims x element size = size), or the
    // parser stops it before the filter's checks: the dims are the old ones
    // with the slowest extent changed when that works, else one axis.
    info.original_bytes = bytes;
    uint64_t inner = info.dtype.size;
    for (size_t d = 1; d < info.dims.size(); ++d) inner *= info.dims[d];
    if (!info.dims.empty() && inner != 0 && bytes % inner == 0) {
      info.dims[0] = bytes / inner;
    } else {
      if (bytes % info.dtype.size != 0) info.dtype.size = 1;
      info.dims = {bytes / info.dtype.size};
    }
    if (f.raw) stored[0].resize(bytes, 0x5A);

    Bytes frame = engine::write_frame(info, stored);
    if (f.truncate_by > 0) {
      frame.resize(frame.size() > static_cast<size_t>(f.truncate_by) ? frame.size() - f.truncate_by : 1);
      fix_crcs(frame);
    }
    return frame;
  }

  hid_t file_ = -1;
  std::vector<Dataset> datasets_;
  std::vector<FrameRef> frames_;
};

}  // namespace fz::h5file
