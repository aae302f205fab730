// The preset table (preset_table.hpp). A new preset is one family file under
// engine/src/presets/ defining its builder, plus one row here
// (docs/ADDING_A_STAGE.md, "Adding a preset").
#include "preset_table.hpp"

#include <array>
#include <cctype>
#include <cmath>

namespace fz::engine {

// The builders, one family file each.
Pipeline build_lossless(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // lossless.cpp
Pipeline build_pfpl(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // pfpl.cpp
Pipeline build_fzgpu(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // lorenzo.cpp
Pipeline build_cusz(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // lorenzo.cpp
Pipeline build_cuszhi_tp(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // cuszhi.cpp
Pipeline build_cuszhi_cr(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);  // cuszhi.cpp

namespace {

constexpr uint8_t mode_bit(ErrorMode m) { return uint8_t(1u << static_cast<unsigned>(m)); }
constexpr uint8_t kEveryMode = mode_bit(ErrorMode::Abs) | mode_bit(ErrorMode::Noa) | mode_bit(ErrorMode::Rel);
// A predictor's error is absolute: it cannot honour point-wise relative bounds,
// which need each element quantized on its own.
constexpr uint8_t kPredictorModes = mode_bit(ErrorMode::Abs) | mode_bit(ErrorMode::Noa);
constexpr const char* kPredictorRefusal = "cannot guarantee point-wise relative (REL) bounds";

struct Row {
  Preset id;
  const char* name;  // stable: h5fz and the Python helper take presets by name
  bool lossy;
  uint8_t modes;                    // mode_bit of each mode it honours strictly
  const char* refused_mode_reason;  // see PresetRow
  PipelineBuilder build;            // null: listed, not in this build yet
  bool tunes_to_range = false;      // see PresetRow
};

// One row per id, in id order (ids are stored in files: never renumber).
constexpr Row kRows[] = {
    {Preset::Default, "default", false, kEveryMode, nullptr, build_lossless},  // = lossless
    {Preset::Lossless, "lossless", false, kEveryMode, nullptr, build_lossless},
    {Preset::Pfpl, "pfpl", true, kEveryMode, nullptr, build_pfpl},
    {Preset::Fzgpu, "fzgpu", true, kPredictorModes, kPredictorRefusal, build_fzgpu},
    {Preset::Cusz, "cusz", true, kPredictorModes, kPredictorRefusal, build_cusz},
    {Preset::CuszHiTp, "cuszhi-tp", true, kPredictorModes, kPredictorRefusal, build_cuszhi_tp, true},
    {Preset::CuszHiCr, "cuszhi-cr", true, kPredictorModes, kPredictorRefusal, build_cuszhi_cr, true},
};

constexpr bool rows_in_id_order() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (static_cast<size_t>(kRows[i].id) != i) return false;
  return true;
}
static_assert(rows_in_id_order(), "kRows must hold every preset id once, in id order");

const std::vector<PresetRow>& rows() {
  static const std::vector<PresetRow> table = [] {
    std::vector<PresetRow> out;
    for (const Row& r : kRows) {
      PresetInfo info;
      info.id = r.id;
      info.name = r.name;
      info.lossy = r.lossy;
      info.available = r.build != nullptr;
      info.modes = r.modes;
      out.push_back({info, r.refused_mode_reason, r.build, r.tunes_to_range});
    }
    return out;
  }();
  return table;
}

std::string upper(const char* text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "preset 'fzgpu' cannot guarantee ...; use preset pfpl for REL, or mode abs/noa".
std::string refusal_text(const PresetRow& row, ErrorMode mode) {
  std::string instead;
  for (const PresetRow& other : rows()) {
    if (!other.info.lossy || !other.info.available || !other.info.honours(mode)) continue;
    instead += (instead.empty() ? "" : " or ") + std::string(other.info.name);
  }
  std::string modes;
  for (unsigned m = 0; m <= static_cast<unsigned>(ErrorMode::Rel); ++m) {
    if (!row.info.honours(static_cast<ErrorMode>(m))) continue;
    modes += (modes.empty() ? "" : "/") + std::string(mode_name(static_cast<ErrorMode>(m)));
  }
  std::string text = std::string("preset '") + row.info.name + "' " + row.refused_mode_reason;
  if (!instead.empty()) text += "; use preset " + instead + " for " + upper(mode_name(mode));
  return text + ", or mode " + modes;
}

// "lossless, pfpl, ...": the presets this build implements (default, which is
// lossless, left out).
std::string available_presets_text() {
  std::string list;
  for (const PresetRow& row : rows()) {
    if (!row.info.available || row.info.id == Preset::Default) continue;
    list += (list.empty() ? "" : ", ") + std::string(row.info.name);
  }
  return list;
}

}  // namespace

const PresetRow* preset_row(Preset id) {
  const size_t index = static_cast<size_t>(id);
  return index < rows().size() ? &rows()[index] : nullptr;
}

std::string known_presets_text() {
  std::string list;
  for (const PresetRow& row : rows())
    list += (list.empty() ? "" : ", ") + std::to_string(static_cast<unsigned>(row.info.id)) + " " + row.info.name;
  return list;
}

void validate_preset(const Options& options) {
  const PresetRow* row = preset_row(options.preset);
  if (!row)
    throw Error("unknown preset id " + std::to_string(static_cast<unsigned>(options.preset)) + " (known: " +
                known_presets_text() + ")");
  if (!row->info.available)
    throw Error(std::string("preset '") + row->info.name + "' is not available in this build of H5Z-FZ (available: " +
                available_presets_text() + ")");
  if (static_cast<uint8_t>(options.mode) > static_cast<uint8_t>(ErrorMode::Rel))
    throw Error("unknown error-bound mode " + std::to_string(static_cast<unsigned>(options.mode)) +
                " (known: 0 abs, 1 noa, 2 rel)");
  if (!row->info.lossy) return;
  if (!row->info.honours(options.mode)) throw Error(refusal_text(*row, options.mode));
  if (!(std::isfinite(options.bound) && options.bound > 0))
    throw Error(std::string("preset '") + row->info.name + "' needs a positive, finite error bound");
  if (options.preset != Preset::CuszHiTp && options.preset != Preset::CuszHiCr) return;
  if (static_cast<uint8_t>(options.spline_tuning) > static_cast<uint8_t>(SplineTuning::kManual))
    throw Error("unknown spline tuning " + std::to_string(static_cast<unsigned>(options.spline_tuning)) +
                " (known: 0 off, 1 ratio-first, 2 quality-first, 3 manual)");
  if (options.spline_tuning != SplineTuning::kManual) return;
  for (const double v : {options.spline_alpha, options.spline_beta})
    if (!(v >= 1 && v <= kMaxSplineAlphaBeta))
      throw Error(std::string("preset '") + row->info.name + "': manual alpha and beta must lie in [1, " +
                  std::to_string(static_cast<int>(kMaxSplineAlphaBeta)) + "], got alpha " +
                  std::to_string(options.spline_alpha) + ", beta " + std::to_string(options.spline_beta));
}

}  // namespace fz::engine

namespace fz {

const std::vector<PresetInfo>& preset_table() {
  static const std::vector<PresetInfo> table = [] {
    std::vector<PresetInfo> out;
    for (const engine::PresetRow& row : engine::rows()) out.push_back(row.info);
    return out;
  }();
  return table;
}

const PresetInfo* find_preset(Preset id) {
  const engine::PresetRow* row = engine::preset_row(id);
  return row ? &preset_table()[static_cast<size_t>(id)] : nullptr;
}

const PresetInfo* find_preset(const std::string& name) {
  for (const PresetInfo& info : preset_table())
    if (name == info.name) return &info;
  return nullptr;
}

const char* preset_name(Preset p) {
  const PresetInfo* info = find_preset(p);
  return info ? info->name : "unknown";
}

// An id this build does not know counts as lossy, as it always has: it may be
// a lossy preset of a newer version, and a lossy preset asks for a bound.
bool preset_is_lossy(Preset p) {
  const PresetInfo* info = find_preset(p);
  return info ? info->lossy : true;
}

bool preset_is_available(Preset p) {
  const PresetInfo* info = find_preset(p);
  return info && info->available;
}

}  // namespace fz
