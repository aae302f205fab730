#include "filter_params.hpp"

#include "cd_values.hpp"

namespace h5fz {

std::vector<unsigned> user_cd_values(const fz::Options& options) { return fz::filter::user_cd_values(options); }

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
