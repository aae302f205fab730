/* filter/h5z_fz.h is C: this file is compiled (not run) in every build, so a
   declaration C cannot take fails the build. The plugin's own sources include
   the header too, so the declarations match the definitions. */
#include "h5z_fz.h"

typedef int (*h5z_fz_encode_from_device_fn)(size_t, const unsigned*, size_t, const void* const*, const size_t*,
                                            void* const*, const size_t*, size_t*, char*, size_t);

h5z_fz_encode_from_device_fn h5z_fz_c_header_check(void) { return &h5z_fz_encode_dataset_batch_from_device; }
