// The text of `h5fz repack --help`.
#pragma once

#include <string>

namespace h5fz {

std::string repack_help_text();

}  // namespace h5fz
