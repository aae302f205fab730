// cd_values <-> fz::Options: the two layouts the H5Z-FZ filter understands
// (docs/CD_VALUES.md describes them word by word). Pure code, no HDF5, so that
// tools (h5fz params) and tests can build and check filter parameters.
//
// User layout (h5py compression_opts, h5repack UD=): what a person writes.
//   [preset, mode, bound low 32 bits, bound high 32 bits, tuning...]
// Stored layout: what set_local rewrites it into, adding what it learned from
// HDF5 (element type, fill value, chunk shape). Starts with a marker holding
// the layout version, so a second set_local recognises it and rewrites it
// idempotently. Word and bit positions are stable forever: files carry them.
//
// Every function that checks something throws fz::Error with a message that
// names the problem in words a user of h5py or h5repack can act on.
//
// The code, one seam a file: cd_values.cpp parses the user layout,
// cd_values_tuning.cpp the tuning words (missing value, spline tuning),
// cd_values_layout.cpp the stored layout, cd_values_describe.cpp turns a
// choice into Options, user cd_values and text; cd_values_internal.hpp holds
// the checks and wording they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fz/fz.hpp"

namespace fz::filter {

constexpr unsigned kFilterId = 32850;
constexpr const char* kFilterName = "H5Z-FZ error-bounded compression";

// User layout positions.
constexpr size_t kUserPreset = 0;
constexpr size_t kUserMode = 1;
constexpr size_t kUserBoundLow = 2;
constexpr size_t kUserBoundHigh = 3;
constexpr size_t kUserTuning = 4;
// h5repack accepts at most 20 values after UD=id,flag,n.
constexpr size_t kMaxUserValues = 20;
constexpr size_t kMaxTuningValues = kMaxUserValues - kUserTuning;

// Stored layout (version 1): 10 fixed words, the chunk dims, the tuning words.
// Compact on purpose: older tools mangle long cd_values (h5py before 3.16
// past 16 words, h5dump 1.10 past 20), and 10 + rank stays within 16 words up
// to rank 6. Small fields share words; a field is (word, lowest bit, bits).
constexpr unsigned kStoredMarker = 0x5A46CD00u;      // "FZ" + "cd"; far above any preset id
constexpr unsigned kStoredMarkerMask = 0xFFFFFF00u;  // the low byte of word 0 is the layout version
constexpr unsigned kStoredLayoutVersion = 1;
enum StoredWord : size_t {
  kWordMarker = 0,        // kStoredMarker | layout version
  kWordChoice = 1,        // preset, mode, tuning count, rank (fields below)
  kWordBoundLow = 2,
  kWordBoundHigh = 3,
  kWordType = 4,          // element class, byte order, HDF5 sign, fill defined, HDF5 class
  kWordElementSize = 5,   // bytes, the whole word
  kWordFloatFields = 6,   // H5Tget_fields positions and exponent size, floats only (else 0)
  kWordFloatMantBias = 7, // mantissa size, H5Tget_ebias
  kWordFillLow = 8,       // fill value bytes 0..3 (byte i in bits 8*i)
  kWordFillHigh = 9,      // fill value bytes 4..7
  kWordChunkDims = 10,    // rank words (slowest first), then the tuning words
};
struct StoredField {
  size_t word;
  unsigned shift;
  unsigned bits;
  const char* name;
  constexpr unsigned max() const { return bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1u; }
  constexpr unsigned mask() const { return max() << shift; }
};
constexpr StoredField kFieldLayoutVersion{kWordMarker, 0, 8, "layout version"};
constexpr StoredField kFieldPreset{kWordChoice, 0, 8, "preset"};
constexpr StoredField kFieldMode{kWordChoice, 8, 8, "error-bound mode"};
constexpr StoredField kFieldTuningCount{kWordChoice, 16, 8, "tuning count"};
constexpr StoredField kFieldRank{kWordChoice, 24, 8, "rank"};
constexpr StoredField kFieldElementClass{kWordType, 0, 4, "element class"};   // fz::ElementClass
constexpr StoredField kFieldByteOrder{kWordType, 4, 1, "byte order"};         // fz::ByteOrder
constexpr StoredField kFieldHdf5Sign{kWordType, 5, 1, "HDF5 sign"};           // H5T_sign_t: 1 two's complement
constexpr StoredField kFieldFillDefined{kWordType, 6, 1, "fill-value flag"};  // user-defined fill value stored
// 1: H5Z-FZ is the first filter of the dataset's pipeline, so on reading its
// output is the chunk itself and must be exactly one chunk's bytes. 0: another
// filter runs before it, or a layout written before this bit existed.
constexpr StoredField kFieldFirstFilter{kWordType, 7, 1, "first-filter flag"};
constexpr StoredField kFieldHdf5Class{kWordType, 8, 8, "HDF5 class"};         // H5T_class_t, for the record
constexpr unsigned kTypeReservedMask = 0xFFFF0000u;                           // bits 16-31: 0
constexpr StoredField kFieldFloatSignPos{kWordFloatFields, 0, 8, "float sign position"};
constexpr StoredField kFieldFloatExpPos{kWordFloatFields, 8, 8, "float exponent position"};
constexpr StoredField kFieldFloatExpSize{kWordFloatFields, 16, 8, "float exponent size"};
constexpr StoredField kFieldFloatMantPos{kWordFloatFields, 24, 8, "float mantissa position"};
constexpr StoredField kFieldFloatMantSize{kWordFloatMantBias, 0, 8, "float mantissa size"};
constexpr StoredField kFieldFloatExpBias{kWordFloatMantBias, 8, 24, "float exponent bias"};

constexpr size_t kStoredFixedWords = kWordChunkDims;
constexpr size_t kMaxRank = 32;  // H5S_MAX_RANK
constexpr size_t kMaxFillBytes = 8;
constexpr size_t kMaxStoredValues = kStoredFixedWords + kMaxRank + kMaxTuningValues;

// A field's value in a stored word.
constexpr unsigned stored_field(const unsigned* cd, const StoredField& field) {
  return (cd[field.word] >> field.shift) & field.max();
}

// The user's choice: preset, mode, bound and tuning words.
struct UserParams {
  Preset preset = Preset::Default;
  ErrorMode mode = ErrorMode::Abs;
  double bound = 0.0;
  std::vector<unsigned> tuning;
};

// IEEE-754 field layout as HDF5 describes it (H5Tget_fields, H5Tget_ebias).
struct FloatFields {
  unsigned sign_pos = 0, exp_pos = 0, exp_size = 0, mant_pos = 0, mant_size = 0, exp_bias = 0;
  bool operator==(const FloatFields& o) const {
    return sign_pos == o.sign_pos && exp_pos == o.exp_pos && exp_size == o.exp_size &&
           mant_pos == o.mant_pos && mant_size == o.mant_size && exp_bias == o.exp_bias;
  }
};
// The standard binary16/32/64 layout for an element of `size` bytes; all zero
// for other sizes.
FloatFields ieee_fields(unsigned size);

// What set_local learned from HDF5 about the dataset.
struct DatasetInfo {
  DataType dtype;
  unsigned hdf5_class = 0;
  unsigned hdf5_sign = 0;
  FloatFields float_fields;
  Bytes fill_value;  // one element in the data's byte order; empty = none
  std::vector<uint32_t> chunk_dims;
  // H5Z-FZ is the first filter of the pipeline (kFieldFirstFilter): every
  // frame must then decode to exactly chunk_dims x element size bytes.
  bool first_filter = false;
};

struct StoredParams {
  UserParams user;
  DatasetInfo dataset;
};

// The bound as two 32-bit words, bit for bit (cd[2] low, cd[3] high).
std::pair<unsigned, unsigned> split_bound(double bound);
double join_bound(unsigned low, unsigned high);

// Parses and checks a user layout: count, known preset and mode, a positive
// finite bound for lossy presets, no tuning a preset does not take. Does not
// check that the preset is built in (see require_available). n == 0 is lossless.
UserParams parse_user_layout(const unsigned* cd, size_t n);

// True when cd starts with the stored layout's marker (any layout version).
bool is_stored_layout(const unsigned* cd, size_t n);

// Either layout -> the user's choice (what a second set_local starts from).
UserParams parse_any_layout(const unsigned* cd, size_t n);

// Throws unless `preset` is implemented in this build (fz::preset_is_available).
void require_available(Preset preset);

// Stored layout encode/decode. Encode refuses a value that does not fit its
// field; decode checks marker, version, lengths, reserved bits and the user
// fields, so a corrupt or future layout gives a message instead of garbage.
std::vector<unsigned> encode_stored(const StoredParams& params);
StoredParams decode_stored(const unsigned* cd, size_t n);

// The user layout that selects `options` (h5py compression_opts, h5repack UD=):
// lossless -> {preset}; lossy -> {preset, mode, bound low, bound high}, and
// for presets 5 and 6 with a spline tuning other than the default
// (ratio-first) the placeholder "no missing value" and the tuning words
// (options.fill_value is not a user choice and is left out).
std::vector<unsigned> user_cd_values(const Options& options);
std::vector<unsigned> user_cd_values(const UserParams& params);
// "UD=32850,<flag>,<n>,<values...>" for h5repack -f.
std::string h5repack_filter_argument(const Options& options, bool optional = false);

// The engine options a user choice selects: preset, mode, bound and, for
// presets 5 and 6, the spline tuning (fill value and policy left empty).
Options to_options(const UserParams& params);
UserParams from_options(const Options& options);
// The engine options a dataset's chunks are compressed with: to_options of
// the user's choice, with HDF5's fill value (dataset.fill_value) and the
// missing value (cd[4..5], as an element of the dataset's type) as the two
// special values; neither displaces the other (policy left empty). Throws
// as missing_value_element does.
Options dataset_options(const StoredParams& params);

// The element type HDF5 would describe for the 1-D byte fallback.
DataType bytes_type();

// One line describing a parameter set, for H5Z_FZ_VERBOSE and h5fz.
std::string describe(const UserParams& params);
std::string describe(const StoredParams& params);
std::string describe(const DataType& dtype);

// How many tuning words a preset takes at most: lossless none; lossy presets
// two, the optional missing value (exactly 0 or 2 words are accepted);
// presets 5 and 6 seven, the missing value then the spline tuning (exactly
// 0, 2, 3 or 7).
size_t max_tuning_values(Preset preset);

// Lossy presets' tuning words cd[4], cd[5] (user layout; stored after the
// chunk dims): a "missing value" as an IEEE-754 double, low/high 32 bits split
// like the bound. It is kept exactly and left out of NOA's range beside
// HDF5's fill value, which it never displaces (the fill value pads edge
// chunks and never-written elements: docs/FORMAT.md section 0, rule 6).
constexpr size_t kTuningMissingLow = 0;
constexpr size_t kTuningMissingHigh = 1;
constexpr size_t kMissingValueWords = 2;
// Both missing-value words 0xFFFFFFFF (the double's bits all ones, a NaN):
// the placeholder for "no missing value", so that the spline tuning can
// follow without one. Accepted for every lossy preset.
constexpr unsigned kNoMissingValueWord = 0xFFFFFFFFu;
// True when cd[4], cd[5] hold a missing value (not the placeholder).
bool has_missing_value(const UserParams& params);
double missing_value(const UserParams& params);  // requires has_missing_value
// The missing value as one element of `dtype`, in its byte order: float32 when
// the double converts exactly (NaN: the cast of the double NaN), else throws
// "... not representable as float32"; float64 its bits; empty for any other
// element type (lossless there, the value does not matter) or without one.
Bytes missing_value_element(const UserParams& params, const DataType& dtype);

// Presets 5 and 6 (cuszhi-tp, cuszhi-cr) only: the spline tuning after the
// missing value (user layout cd[6..10]; stored after the chunk dims like
// every tuning word). cd[6] = fz::SplineTuning id (0 off, 1 ratio-first,
// 2 quality-first, 3 manual); with 3, cd[7], cd[8] = alpha and cd[9],
// cd[10] = beta, IEEE-754 doubles split low/high like the bound, finite and
// in [1, kMaxSplineAlphaBeta]. So these presets take exactly 0, 2, 3 (tuning
// 0..2) or 7 (tuning 3) tuning words; without cd[6] the engine's default
// (ratio-first) applies. Decoding never needs them (frames say everything).
constexpr size_t kTuningSpline = 2;      // cd[6]
constexpr size_t kTuningAlphaLow = 3;    // cd[7]
constexpr size_t kTuningAlphaHigh = 4;   // cd[8]
constexpr size_t kTuningBetaLow = 5;     // cd[9]
constexpr size_t kTuningBetaHigh = 6;    // cd[10]
constexpr size_t kSplineTuningWords = 3;  // missing value (or placeholder) + tuning id
constexpr size_t kSplineManualWords = 7;  // ... + alpha + beta
bool takes_spline_tuning(Preset preset);  // presets 5 and 6
struct SplineChoice {
  bool given = false;  // cd[6] present (else the default below applies)
  SplineTuning tuning = SplineTuning::kRatioFirst;
  double alpha = 1.0;  // manual only; 1 otherwise
  double beta = 1.0;
};
// The spline tuning a (checked) user choice selects; the default for presets
// that take none or when cd[6] is absent.
SplineChoice spline_choice(const UserParams& params);
// The tuning words (user layout cd[4..]) for a missing value and a spline
// tuning: none, {missing low, high}, or {missing or placeholder, tuning id
// [, alpha low, high, beta low, high]}. A tuning for a preset other than 5
// and 6, alpha/beta other than 1 without manual, or out-of-range values
// throw fz::Error with the filter's message.
std::vector<unsigned> make_tuning_words(Preset preset, const double* missing, const SplineChoice* spline);

}  // namespace fz::filter
