// Finding the filters a dataset needs: the H5Z-FZ plugin (through
// HDF5_PLUGIN_PATH, else the one built or installed beside this program) and,
// when a dataset cannot be read, which of its filters HDF5 cannot find, by id
// and name, with where such filters come from. h5fz read and repack share it.
#pragma once

#include <hdf5.h>

#include <string>

namespace h5fz {

// True when HDF5 can use the H5Z-FZ filter, looking beside this program
// (build/tools -> build/plugin, bin -> lib/h5z-fz/plugin) when
// HDF5_PLUGIN_PATH does not lead to it.
bool find_plugin();

// find_plugin(), or ToolError saying how to make the plugin found.
void require_plugin();

// "" when HDF5 can apply every filter of the dataset creation list `dcpl`;
// otherwise a sentence naming each missing filter (id and name) and how to
// get it (H5Z-FZ: HDF5_PLUGIN_PATH; others: hdf5plugin's folder).
std::string missing_filters(hid_t dcpl);

}  // namespace h5fz
