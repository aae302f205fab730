#include "plugin_lookup.hpp"

#include <string>

#include "cli.hpp"
#include "filter_params.hpp"

namespace h5fz {

bool find_plugin() {
  if (H5Zfilter_avail(kFzFilterId) > 0) return true;
  H5Eclear2(H5E_DEFAULT);
  const std::string beside = plugin_dir_beside_program();
  if (beside.empty()) return false;
  H5PLprepend(beside.c_str());
  const bool found = H5Zfilter_avail(kFzFilterId) > 0;
  H5Eclear2(H5E_DEFAULT);
  return found;
}

void require_plugin() {
  if (!find_plugin())
    throw ToolError("the H5Z-FZ plugin (libH5Zfz.so) was not found: set HDF5_PLUGIN_PATH to the folder that holds it");
}

std::string missing_filters(hid_t dcpl) {
  const int count = H5Pget_nfilters(dcpl);
  std::string text;
  bool other = false;
  for (int i = 0; i < count; ++i) {
    unsigned flags = 0;
    size_t values = 0;
    char name[256] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name,
                                           name, nullptr);
    if (id < 0) continue;
    if (id == kFzFilterId && find_plugin()) continue;
    if (H5Zfilter_avail(id) > 0) continue;
    H5Eclear2(H5E_DEFAULT);
    if (!text.empty()) text += "; ";
    text += "filter " + std::to_string(id) + (name[0] ? " (" + std::string(name) + ")" : std::string(" (no name)")) +
            " is not available";
    if (id == kFzFilterId) {
      text += ": set HDF5_PLUGIN_PATH to the folder that holds libH5Zfz.so";
    } else {
      other = true;
    }
  }
  H5Eclear2(H5E_DEFAULT);
  if (other) {
    text += ". HDF5 loads filters from the folders HDF5_PLUGIN_PATH names; many (SZ, SZ3, zfp, Blosc, LZ4, Zstd, "
            "bitshuffle...) come with hdf5plugin: pip install hdf5plugin, then HDF5_PLUGIN_PATH=$(python3 -c "
            "'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)')";
  }
  return text;
}

}  // namespace h5fz
