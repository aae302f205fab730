// cd_values for the H5Z-FZ filter as h5fz needs them, through the filter's own
// conversion (fz_filter_core, filter/cd_values.hpp), so the tool and the plugin
// can never disagree.
#pragma once

#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

constexpr unsigned kFzFilterId = 32850;

// The user layout selecting `options` (h5py compression_opts, h5repack UD=).
std::vector<unsigned> user_cd_values(const fz::Options& options);
// The same, with the missing value (when `missing` is given) and, when
// `spell_tuning`, options' spline tuning spelled out even if it is the
// default (presets 5 and 6; after the "no missing value" placeholder when
// there is no missing value). Throws fz::Error with the filter's message.
std::vector<unsigned> user_cd_values(const fz::Options& options, const double* missing, bool spell_tuning);

// One line in words for a dataset's H5Z-FZ cd_values (user or stored layout);
// a malformed set is described as such, never thrown.
std::string describe_fz_cd_values(const std::vector<unsigned>& cd_values);

}  // namespace h5fz
