/* Does parallel HDF5 take direct chunk writes (H5Dwrite_chunk) from the ranks
 * of a job? (issue 32 item 3) Every rank stores its own chunk of a dataset
 * created collectively with deflate in its pipeline (HDF5's own filter, so
 * the probe needs no plugin): the chunk deflated here, written with filter
 * mask 0, exactly as h5fz.write stores a frame. After the file is closed,
 * rank 0 reopens it serially and reads every chunk back. Prints each rank's
 * return value and the verdict.
 *
 *     bash tools/mpi/build.sh    # builds build-mpi/direct_chunk_probe too
 *     mpirun -np 4 build-mpi/direct_chunk_probe [FILE]
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

enum { kChunk = 1024 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* path = argc > 1 ? argv[1] : "direct_chunk_probe.h5";
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);

  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const hsize_t n = (hsize_t)kChunk * (hsize_t)size, chunk = kChunk;
  hid_t space = H5Screate_simple(1, &n, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  H5Pset_deflate(dcpl, 1);
  hid_t dataset = H5Dcreate2(file, "x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);

  static float values[kChunk];
  for (int i = 0; i < kChunk; ++i) values[i] = (float)(rank * 100000 + i);
  static unsigned char frame[2 * sizeof values];
  uLongf frame_bytes = sizeof frame;
  compress2(frame, &frame_bytes, (const Bytef*)values, sizeof values, 1);
  const hsize_t offset = (hsize_t)rank * chunk;
  const herr_t written = H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, &offset, frame_bytes, frame);
  printf("HDF5 %u.%u.%u, rank %d of %d: H5Dwrite_chunk of its own chunk returned %d\n", major, minor, release, rank,
         size, (int)written);
  fflush(stdout);
  H5Dclose(dataset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
  H5Pclose(fapl);
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    int right = 0;
    H5E_BEGIN_TRY {
      hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
      hid_t d = f < 0 ? -1 : H5Dopen2(f, "x", H5P_DEFAULT);
      float* back = malloc(sizeof(float) * n);
      if (d >= 0 && back != NULL && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0) {
        for (int r = 0; r < size; ++r)
          right += back[(size_t)r * kChunk + 7] == (float)(r * 100000 + 7) ? 1 : 0;
      }
      free(back);
      if (d >= 0) H5Dclose(d);
      if (f >= 0) H5Fclose(f);
    } H5E_END_TRY;
    printf("read back serially: %d of %d ranks' chunks right: %s\n", right, size,
           right == size ? "direct chunk writes from ranks work" : "direct chunk writes from ranks are NOT usable");
  }
  MPI_Finalize();
  return 0;
}
