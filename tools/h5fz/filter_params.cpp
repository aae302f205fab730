#include "filter_params.hpp"

#include "cd_values.hpp"

namespace h5fz {

std::vector<unsigned> user_cd_values(const fz::Options& options) { return fz::filter::user_cd_values(options); }

std::vector<unsigned> user_cd_values(const fz::Options& options, const double* missing, bool spell_tuning) {
  fz::filter::UserParams params;
  params.preset = options.preset;
  params.mode = options.mode;
  params.bound = options.bound;
  fz::filter::SplineChoice spline;
  spline.given = true;
  spline.tuning = options.spline_tuning;
  if (options.spline_tuning == fz::SplineTuning::kManual) {
    spline.alpha = options.spline_alpha;
    spline.beta = options.spline_beta;
  }
  const bool with_tuning = fz::filter::takes_spline_tuning(options.preset) &&
                           (spell_tuning || options.spline_tuning != fz::Options{}.spline_tuning);
  params.tuning = fz::filter::make_tuning_words(options.preset, missing, with_tuning ? &spline : nullptr);
  return fz::filter::user_cd_values(params);
}

std::string describe_fz_cd_values(const std::vector<unsigned>& cd) {
  try {
    if (fz::filter::is_stored_layout(cd.data(), cd.size()))
      return fz::filter::describe(fz::filter::decode_stored(cd.data(), cd.size()));
    return fz::filter::describe(fz::filter::parse_user_layout(cd.data(), cd.size()));
  } catch (const fz::Error& e) {
    return std::string("cannot decode: ") + e.what();
  }
}

}  // namespace h5fz
