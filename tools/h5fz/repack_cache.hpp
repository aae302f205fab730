// The chunk cache repack opens an input dataset with. The output's chunks
// are read one at a time (a hyperslab each); when they differ from the
// input's (--chunks auto or a shape), each input chunk is shared by several
// output chunks, and with HDF5's default cache (1 MiB) it is read and
// decompressed again for every one of them: 19x slower than h5repack on a
// gzip input. The cache holds the input chunks a batch spans instead.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <vector>

namespace h5fz {

struct ChunkCacheSize {
  size_t slots = 0, bytes = 0;  // bytes 0: HDF5's default cache will do
};

// For an input dataset with creation properties `in_dcpl`, extent `dims`
// and `element` bytes per element, read as output chunks `out_chunks` in
// row-major order, `per_batch` at a time: the bytes of the input chunks
// those reads keep coming back to (the input chunks crossing one layer of
// output chunks along the slowest axis), at most those one batch spans or
// `batch_bytes`, whichever is larger. Counts are overflow-checked.
ChunkCacheSize input_chunk_cache(hid_t in_dcpl, const std::vector<hsize_t>& dims,
                                 const std::vector<hsize_t>& out_chunks, size_t element, size_t per_batch,
                                 size_t batch_bytes);

// A dataset access property list with that cache (H5P_DEFAULT's copy when
// bytes is 0); the caller closes it.
hid_t chunk_cache_access(const ChunkCacheSize& size);

}  // namespace h5fz
