// The stored layout (version 1), what set_local rewrites the user's values
// into: its words encoded (encode_stored) and decoded with every check
// (decode_stored), the fill value packed two words wide, and the word
// primitives both layouts use (split_bound, join_bound, ieee_fields).
// Word and bit positions are pinned by tests/filter/cd_values_test.cpp and
// docs/CD_VALUES.md: files carry them.
#include "cd_values.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sstream>
#include <tuple>
#include <vector>

#include "cd_values_internal.hpp"

namespace fz::filter {

using cd_detail::check_user_params;
using cd_detail::checked_mode;
using cd_detail::checked_preset;
using cd_detail::fail;

namespace {

// Fill value bytes travel in two words, byte i in bits 8*(i%4) of word i/4, so
// the packing does not depend on the host's byte order.
std::pair<unsigned, unsigned> pack_fill(const Bytes& fill) {
  unsigned words[2] = {0, 0};
  for (size_t i = 0; i < fill.size(); ++i) words[i / 4] |= static_cast<unsigned>(fill[i]) << (8 * (i % 4));
  return {words[0], words[1]};
}

Bytes unpack_fill(unsigned low, unsigned high, size_t size) {
  const unsigned words[2] = {low, high};
  Bytes fill(size);
  for (size_t i = 0; i < size; ++i) fill[i] = static_cast<uint8_t>(words[i / 4] >> (8 * (i % 4)));
  return fill;
}

std::string hex(unsigned value) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << value;
  return out.str();
}

// Where a field sits, for messages: "stored cd_values[1] bits 8-15".
std::string field_place(const StoredField& field) {
  std::string place = "stored cd_values[" + std::to_string(field.word) + "]";
  if (field.bits >= 32) return place;
  if (field.bits == 1) return place + " bit " + std::to_string(field.shift);
  return place + " bits " + std::to_string(field.shift) + "-" + std::to_string(field.shift + field.bits - 1);
}

// Puts `value` into its field, refusing a value the field cannot hold.
void put_field(std::vector<unsigned>& cd, const StoredField& field, uint64_t value) {
  if (value > field.max()) {
    fail("cannot store " + std::string(field.name) + " " + std::to_string(value) + ": " + field_place(field) +
         " holds at most " + std::to_string(field.max()));
  }
  cd[field.word] |= static_cast<unsigned>(value) << field.shift;
}

}  // namespace

FloatFields ieee_fields(unsigned size) {
  switch (size) {
    case 2: return {15, 10, 5, 0, 10, 15};
    case 4: return {31, 23, 8, 0, 23, 127};
    case 8: return {63, 52, 11, 0, 52, 1023};
    default: return {};
  }
}

std::pair<unsigned, unsigned> split_bound(double bound) {
  uint64_t bits = 0;
  std::memcpy(&bits, &bound, sizeof bits);
  return {static_cast<unsigned>(bits & 0xFFFFFFFFu), static_cast<unsigned>(bits >> 32)};
}

double join_bound(unsigned low, unsigned high) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 32) | static_cast<uint64_t>(low);
  double bound = 0.0;
  std::memcpy(&bound, &bits, sizeof bound);
  return bound;
}

bool is_stored_layout(const unsigned* cd, size_t n) {
  return n > 0 && cd != nullptr && (cd[kWordMarker] & kStoredMarkerMask) == kStoredMarker;
}

std::vector<unsigned> encode_stored(const StoredParams& params) {
  const UserParams& user = params.user;
  const DatasetInfo& dataset = params.dataset;
  if (dataset.chunk_dims.size() > kMaxRank) fail("chunk rank " + std::to_string(dataset.chunk_dims.size()) + " is above 32");
  check_user_params(user);
  if (dataset.fill_value.size() > kMaxFillBytes) fail("fill values above 8 bytes are not stored");
  if (!dataset.fill_value.empty() && dataset.fill_value.size() != dataset.dtype.size) {
    fail("the fill value is " + std::to_string(dataset.fill_value.size()) + " bytes, the element " +
         std::to_string(dataset.dtype.size));
  }
  std::vector<unsigned> cd(kStoredFixedWords, 0u);
  cd[kWordMarker] = kStoredMarker;
  put_field(cd, kFieldLayoutVersion, kStoredLayoutVersion);
  put_field(cd, kFieldPreset, static_cast<unsigned>(user.preset));
  put_field(cd, kFieldMode, static_cast<unsigned>(user.mode));
  put_field(cd, kFieldTuningCount, user.tuning.size());
  put_field(cd, kFieldRank, dataset.chunk_dims.size());
  std::tie(cd[kWordBoundLow], cd[kWordBoundHigh]) = split_bound(user.bound);
  put_field(cd, kFieldElementClass, static_cast<unsigned>(dataset.dtype.element_class));
  put_field(cd, kFieldByteOrder, static_cast<unsigned>(dataset.dtype.order));
  put_field(cd, kFieldHdf5Sign, dataset.hdf5_sign);
  put_field(cd, kFieldFillDefined, dataset.fill_value.empty() ? 0u : 1u);
  put_field(cd, kFieldFirstFilter, dataset.first_filter ? 1u : 0u);
  put_field(cd, kFieldHdf5Class, dataset.hdf5_class);
  cd[kWordElementSize] = dataset.dtype.size;
  put_field(cd, kFieldFloatSignPos, dataset.float_fields.sign_pos);
  put_field(cd, kFieldFloatExpPos, dataset.float_fields.exp_pos);
  put_field(cd, kFieldFloatExpSize, dataset.float_fields.exp_size);
  put_field(cd, kFieldFloatMantPos, dataset.float_fields.mant_pos);
  put_field(cd, kFieldFloatMantSize, dataset.float_fields.mant_size);
  put_field(cd, kFieldFloatExpBias, dataset.float_fields.exp_bias);
  std::tie(cd[kWordFillLow], cd[kWordFillHigh]) = pack_fill(dataset.fill_value);
  cd.insert(cd.end(), dataset.chunk_dims.begin(), dataset.chunk_dims.end());
  cd.insert(cd.end(), user.tuning.begin(), user.tuning.end());
  return cd;
}

namespace {

StoredParams decode_stored_words(const unsigned* cd, size_t n) {
  if (!is_stored_layout(cd, n)) fail("cd_values are not in the stored layout (no marker in cd_values[0])");
  const unsigned version = stored_field(cd, kFieldLayoutVersion);
  if (version != kStoredLayoutVersion) {
    fail("stored cd_values layout version " + std::to_string(version) +
         " is not understood by this H5Z-FZ (it reads version " + std::to_string(kStoredLayoutVersion) +
         "); upgrade the plugin");
  }
  if (n < kStoredFixedWords) {
    fail("stored cd_values are truncated: " + std::to_string(n) + " values, at least " +
         std::to_string(kStoredFixedWords) + " expected");
  }
  const unsigned rank = stored_field(cd, kFieldRank);
  const unsigned tuning = stored_field(cd, kFieldTuningCount);
  if (rank > kMaxRank || tuning > kMaxTuningValues || n != kStoredFixedWords + rank + tuning) {
    fail("stored cd_values are inconsistent: " + std::to_string(n) + " values for rank " +
         std::to_string(rank) + " and " + std::to_string(tuning) + " tuning values");
  }
  if (cd[kWordType] & kTypeReservedMask) {
    fail("stored cd_values[4] has reserved bits set (" + hex(cd[kWordType] & kTypeReservedMask) +
         "); written by a later H5Z-FZ or damaged");
  }
  StoredParams params;
  UserParams& user = params.user;
  user.preset = checked_preset(stored_field(cd, kFieldPreset), field_place(kFieldPreset).c_str());
  user.mode = checked_mode(stored_field(cd, kFieldMode), field_place(kFieldMode).c_str());
  user.bound = join_bound(cd[kWordBoundLow], cd[kWordBoundHigh]);
  user.tuning.assign(cd + kStoredFixedWords + rank, cd + n);
  check_user_params(user);

  DatasetInfo& dataset = params.dataset;
  const unsigned element_class = stored_field(cd, kFieldElementClass);
  if (element_class > static_cast<unsigned>(ElementClass::Float)) {
    fail("stored cd_values hold an unknown element class " + std::to_string(element_class));
  }
  if (cd[kWordElementSize] == 0) fail("stored cd_values hold an element size of 0");
  // The byte order is one bit: 0 little, 1 big (both known).
  static_assert(static_cast<unsigned>(ByteOrder::Big) == kFieldByteOrder.max(), "byte order field");
  dataset.dtype.element_class = static_cast<ElementClass>(element_class);
  dataset.dtype.size = cd[kWordElementSize];
  dataset.dtype.order = static_cast<ByteOrder>(stored_field(cd, kFieldByteOrder));
  dataset.hdf5_class = stored_field(cd, kFieldHdf5Class);
  dataset.hdf5_sign = stored_field(cd, kFieldHdf5Sign);
  dataset.first_filter = stored_field(cd, kFieldFirstFilter) == 1;
  dataset.float_fields = {stored_field(cd, kFieldFloatSignPos),  stored_field(cd, kFieldFloatExpPos),
                          stored_field(cd, kFieldFloatExpSize),  stored_field(cd, kFieldFloatMantPos),
                          stored_field(cd, kFieldFloatMantSize), stored_field(cd, kFieldFloatExpBias)};
  if (stored_field(cd, kFieldFillDefined) == 1) {
    if (dataset.dtype.size > kMaxFillBytes) {
      fail("stored cd_values hold a fill value for a " + std::to_string(dataset.dtype.size) +
           "-byte element (at most 8)");
    }
    dataset.fill_value = unpack_fill(cd[kWordFillLow], cd[kWordFillHigh], dataset.dtype.size);
  }
  // Bytes past the fill value (or any, without one) are 0, as encode writes them.
  if (pack_fill(dataset.fill_value) != std::make_pair(cd[kWordFillLow], cd[kWordFillHigh])) {
    fail("stored cd_values[8..9] hold fill value bytes beyond " +
         (dataset.fill_value.empty() ? std::string("an absent fill value (fill-value flag 0)")
                                     : "the " + std::to_string(dataset.dtype.size) + "-byte element"));
  }
  dataset.chunk_dims.assign(cd + kStoredFixedWords, cd + kStoredFixedWords + rank);
  return params;
}

// The last layout decoded and what it gave. The filter decodes the same
// dataset's words on every chunk, up to three times (the chunk callback,
// check_frame, check_decoded), and the checks build their message fragments
// as they go: about 1 us of a small chunk's read (issue 30). The result
// depends on the words alone, so a layout equal to the last one gives the
// last result; a layout that fails is never kept (it fails again, with the
// same message). Leaked on purpose, like the engine's caches: a plugin
// unloaded at exit may still be decoding on another thread.
struct LastDecoded {
  std::mutex mutex;
  std::vector<unsigned> words;
  StoredParams params;
  bool valid = false;
};

LastDecoded& last_decoded() {
  static auto* last = new LastDecoded();
  return *last;
}

}  // namespace

StoredParams decode_stored(const unsigned* cd, size_t n) {
  LastDecoded& last = last_decoded();
  {
    std::lock_guard<std::mutex> lock(last.mutex);
    if (last.valid && last.words.size() == n && (n == 0 || std::equal(cd, cd + n, last.words.begin())))
      return last.params;
  }
  StoredParams params = decode_stored_words(cd, n);  // throws on a bad layout: nothing kept
  std::lock_guard<std::mutex> lock(last.mutex);
  last.words.assign(cd, cd + n);
  last.params = params;
  last.valid = true;
  return params;
}

}  // namespace fz::filter
