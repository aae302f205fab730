/* The C interface libH5Zfz.so exports beside HDF5's plugin entry points: many
   chunks decoded or encoded at once (all cores or the GPU), for programs that
   read or store a dataset's chunks themselves (H5Dread_chunk /
   H5Dwrite_chunk). Each call is defined, with the whole of its contract, in
   filter/reader_api.cpp or filter/writer_api.cpp, which include this header,
   so the declarations here are the definitions'.

   Use: link the plugin (-L<dir> -l:libH5Zfz.so, with <dir> on the runtime
   library path) or dlopen it and look the names up. Check
   h5z_fz_reader_version() / h5z_fz_writer_version() first.

   Every int-returning call returns 0 on success and -1 on failure, with a
   NUL-terminated message (cut to error_capacity) in `error`; it never throws
   or aborts. Sizes are checked, never trusted: a frame that does not belong
   to the dataset (the *_dataset_* calls) or a buffer too small is an error
   naming the chunk. */
#ifndef H5Z_FZ_H
#define H5Z_FZ_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Reading (reader interface version 3) ---- */

int h5z_fz_reader_version(void);
/* 1 when a CUDA device is usable by this build, else 0. */
int h5z_fz_device_available(void);
/* The device the filter uses in this process, in words. */
int h5z_fz_device_in_use(char* words, size_t capacity);
/* Seconds and chunks the filter callback has spent on each way; any pointer may be null. */
void h5z_fz_filter_totals(double* compress_seconds, double* decompress_seconds,
                          unsigned long long* compressed_chunks, unsigned long long* decompressed_chunks);
/* `count` frames (host memory) into host buffers; device "auto", "cpu",
   "cuda", "cuda:N" (NULL = "auto"); threads 0 = all. */
int h5z_fz_decode_batch(size_t count, const void* const* frames, const size_t* frame_bytes, void* const* outputs,
                        const size_t* capacities, size_t* decoded, const char* device, unsigned threads,
                        char* error, size_t error_capacity);
/* The same into GPU memory of one device. */
int h5z_fz_decode_batch_to_device(size_t count, const void* const* frames, const size_t* frame_bytes,
                                  void* const* device_outputs, const size_t* capacities, size_t* decoded,
                                  char* error, size_t error_capacity);
/* The same, each frame checked against a dataset's stored cd_values as the
   filter checks it (H5Pget_filter2 on the dataset's creation properties). */
int h5z_fz_decode_dataset_batch(size_t cd_count, const unsigned* cd_values, size_t count, const void* const* frames,
                                const size_t* frame_bytes, void* const* outputs, const size_t* capacities,
                                size_t* decoded, const char* device, unsigned threads, char* error,
                                size_t error_capacity);
int h5z_fz_decode_dataset_batch_to_device(size_t cd_count, const unsigned* cd_values, size_t count,
                                          const void* const* frames, const size_t* frame_bytes,
                                          void* const* device_outputs, const size_t* capacities, size_t* decoded,
                                          char* error, size_t error_capacity);

/* The bytes a frame decodes to, from its checked header (version 3). */
int h5z_fz_frame_decoded_bytes(const void* frame, size_t frame_bytes, unsigned long long* decoded_bytes,
                               char* error, size_t error_capacity);

/* ---- Writing (writer interface version 3) ---- */

int h5z_fz_writer_version(void);
/* A frame capacity that always suffices for a chunk of chunk_bytes bytes and rank `rank` (0 on overflow). */
size_t h5z_fz_max_frame_bytes(size_t chunk_bytes, size_t rank);
/* `count` whole chunks of one dataset (host memory; edge chunks padded as
   HDF5 pads them) into the frames the filter writes for them under the
   dataset's stored cd_values, in host buffers; encoded[i] each length. */
int h5z_fz_encode_dataset_batch(size_t cd_count, const unsigned* cd_values, size_t count, const void* const* chunks,
                                const size_t* chunk_bytes, void* const* frames, const size_t* capacities,
                                size_t* encoded, const char* device, unsigned threads, char* error,
                                size_t error_capacity);
/* The same for chunks in GPU memory of one device, which encodes them; only
   the frames are copied to the host buffers, straight from the device (at
   PCIe speed when the buffers are page-locked: cudaHostAlloc, CuPy's pinned
   memory). The caller's work on the chunks must be finished (its stream
   synchronised) before the call (version 2). */
int h5z_fz_encode_dataset_batch_from_device(size_t cd_count, const unsigned* cd_values, size_t count,
                                            const void* const* device_chunks, const size_t* chunk_bytes,
                                            void* const* frames, const size_t* capacities, size_t* encoded,
                                            char* error, size_t error_capacity);

/* The stored cd_values the filter writes for a dataset of numbers chunked as
   dims[rank] under the user's words (compression_opts), for writers with no
   HDF5 dataset (the Zarr codec). kind 'f' (IEEE float of 2, 4 or 8 bytes),
   'i' or 'u' (integers of 1, 2, 4 or 8 bytes); fill_value: one element in
   the data's byte order, or NULL for none (version 3). */
int h5z_fz_chunk_cd_values(size_t user_count, const unsigned* user, char kind, size_t element_size, int big_endian,
                           size_t rank, const unsigned long long* dims, const void* fill_value, unsigned* stored,
                           size_t capacity, size_t* stored_count, char* error, size_t error_capacity);

#ifdef __cplusplus
}
#endif

#endif /* H5Z_FZ_H */
