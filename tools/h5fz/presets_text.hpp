// What h5fz says about presets (help texts, parsing messages, `h5fz presets`),
// all read from the engine's preset table (fz::preset_table), so a preset
// added there appears here with nothing to edit.
#pragma once

#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

// "lossless pfpl fzgpu cusz cuszhi-tp cuszhi-cr, or 0..6": what --preset takes
// (default, the alias of lossless, is accepted but not listed).
std::string preset_choices_text();

// "lossless (default), pfpl, fzgpu, ..., or 0..6": --preset's help line.
std::string preset_help_text();

// "pfpl": the available lossy presets that honour `mode`, joined by `glue`;
// or, with honouring false, those that refuse it.
std::string lossy_presets_text(fz::ErrorMode mode, bool honouring, const char* glue);

// "pfpl (2) modes abs, noa, rel; fzgpu (3) and cusz (4) modes abs, noa": the
// available lossy presets grouped by the modes they honour (h5fz --help).
std::string lossy_presets_summary();

// `h5fz presets [--python]`: the table for people, or as the Python module
// tools/python/h5fz_presets.py (generated from it, never written by hand).
int run_presets(const std::vector<std::string>& args);

}  // namespace h5fz
