/* A filter that does nothing, for measuring HDF5's own cost per chunk.
 *
 * A benchmark helper, not part of H5Z-FZ (issue 30: which part of a small
 * chunk's read and write time through h5py is the codec's). It hands every
 * chunk back as it came (returns nbytes, buffer untouched), so HDF5 runs its
 * whole filter pipeline around it (chunk buffers allocated, copied, indexed)
 * and the codec costs nothing. tools/bench/chunk_floor.py compiles it with
 * the system C compiler into a temporary plugin directory:
 *
 *     cc -shared -fPIC -O2 -o DIR/libH5Znoop.so tools/bench/noop_filter.c
 *
 * It needs no HDF5 header or library: the plugin entry points and the filter
 * class (H5Z_class2_t, version 1 of the class struct) are declared here with
 * the layout HDF5 1.8 to 2.0 use. Filter id 400 lies in the range HDF5
 * reserves for testing (256-511), so it never clashes with a registered one.
 */
#include <stddef.h>

typedef int h5_herr_t;
typedef long long h5_hid_t;
typedef int h5_htri_t;
typedef int h5_filter_t;

typedef struct {
  int version;            /* H5Z_CLASS_T_VERS = 1 */
  h5_filter_t id;
  unsigned encoder_present;
  unsigned decoder_present;
  const char* name;
  h5_htri_t (*can_apply)(h5_hid_t, h5_hid_t, h5_hid_t);
  h5_herr_t (*set_local)(h5_hid_t, h5_hid_t, h5_hid_t);
  size_t (*filter)(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
                   void** buf);
} noop_class_t;

static size_t noop(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
                   void** buf) {
  (void)flags;
  (void)cd_nelmts;
  (void)cd_values;
  (void)buf_size;
  (void)buf;
  return nbytes;
}

static const noop_class_t noop_class = {1, 400, 1, 1, "noop (benchmark floor)", NULL, NULL, noop};

int H5PLget_plugin_type(void) { return 0; /* H5PL_TYPE_FILTER */ }
const void* H5PLget_plugin_info(void) { return &noop_class; }
