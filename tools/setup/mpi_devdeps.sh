#!/bin/bash
# Prepares Debian's Open MPI and parallel HDF5 (1.10, the openmpi flavour) for
# the GPU machines, which can install nothing: the packages are downloaded
# here, unpacked into the git-ignored .mpideps/ and carried with a device run
# (carry [".devdeps", ".mpideps"]). There, after `source .devdeps/env.sh`:
#
#     source .mpideps/env.sh      # mpirun, mpicc, h5pcc's headers and libraries
#     bash tools/mpi/build.sh build-mpi   # the MPI check and benchmark (tools/mpi)
#
# An unpacked Open MPI finds its parts through OPAL_PREFIX (and its
# configuration through OPAL_SYSCONFDIR); root must be allowed explicitly.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
dest=$top/.mpideps
grep -qxF '/.mpideps/' "$top/.git/info/exclude" 2>/dev/null || echo '/.mpideps/' >> "$top/.git/info/exclude"
rm -rf "$dest"; mkdir -p "$dest/debs" "$dest/root"
# Open MPI, its transports' libraries, parallel HDF5 and what they link.
pkgs="openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libhdf5-openmpi-103-1 libhdf5-openmpi-dev
      libhdf5-openmpi-hl-100 libpmix2 libhwloc15 libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7
      libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200
      libmunge2 libnuma1 libxnvctrl0 libcurl3-gnutls libsz2 libaec0"
( cd "$dest/debs" && apt-get download $pkgs >/dev/null 2>&1 ) || { apt-get update -qq >/dev/null 2>&1; cd "$dest/debs" && apt-get download $pkgs >/dev/null; }
for d in "$dest"/debs/*.deb; do dpkg -x "$d" "$dest/root"; done
# Keep what a build and an MPI run need (every carried run is limited to 64 MiB in all).
rm -rf "$dest/debs" "$dest/root/usr/share/doc" "$dest/root/usr/share/man" "$dest/root/usr/share/lintian"
find "$dest/root" \( -name '*.a' -o -name '*fortran*' -o -name '*.mod' -o -name '*java*' -o -name '*oshmem*' \
                     -o -name '*_cpp*' -o -name 'libmpi_usempi*' -o -name 'libmpi_mpifh*' \) -exec rm -rf {} + 2>/dev/null || true
cat > "$dest/env.sh" <<'ENV'
# source this on the GPU machine, from the repository root (after .devdeps/env.sh)
_md=$(pwd)/.mpideps/root
_ml=$_md/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$_md/usr
export OPAL_SYSCONFDIR=$_md/etc/openmpi
# PMIx (Open MPI's launcher interface) is relocated the same way; its plugins
# are named outright, since a machine with a newer PMIx of its own under /usr
# would otherwise lend them (seen: "undefined symbol: pmix_output_info").
export PMIX_INSTALL_PREFIX=$_ml/pmix2
export PMIX_MCA_mca_base_component_path=$_ml/pmix2/lib/pmix PMIX_MCA_pcompress_base_silence_warning=1
export PATH=$_md/usr/bin:$PATH
export LD_LIBRARY_PATH=$_ml/openmpi/lib:$_ml/hdf5/openmpi:$_ml/pmix2/lib:$_ml:${LD_LIBRARY_PATH:-}
# tools/mpi/build.sh compiles against these.
export FZ_MPI_INCLUDE=$_ml/openmpi/include
export FZ_MPI_LIB=$_ml/openmpi/lib
export FZ_PHDF5_INCLUDE=$_md/usr/include/hdf5/openmpi
export FZ_PHDF5_LIB=$_ml/hdf5/openmpi
# The machines run as root, in a sandbox: shared memory between ranks on one
# host, no kernel-assisted single copy, no fabric probing.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc=sm,pt2pt OMPI_MCA_rmaps_base_oversubscribe=1
ln -sf mpirun.openmpi "$_md/usr/bin/mpirun" 2>/dev/null || true
ENV
du -sh "$dest" | awk '{print "prepared", $2, "(" $1 "); carry it with .devdeps and source .mpideps/env.sh after .devdeps/env.sh"}'
