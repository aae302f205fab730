/* fz_mpi check, second part: the rules parallel HDF5 sets for a filtered
 * dataset, tried one by one (allocation and fill times, an independent
 * write, a second collective write over part of the rows). Apart from
 * fz_mpi_check.c because each rule is a small program of its own. */
#include "fz_mpi_common.h"

#include <stdio.h>
#include <stdlib.h>

/* The rules parallel HDF5 sets, tried: every allocation time and fill time
 * with a collective write, and an independent write. Prints what HDF5 says;
 * returns 1 when the outcome is the documented one (README.md, "Parallel
 * HDF5"): collective writes work under every combination, an independent
 * write is refused, and nothing is stored unfiltered. */
int check_rules(const char *out, const char *data_dir, FILE *json) {
  Shape s = {3, {91, 91, 91}, {10, 40, 91}, H5T_NATIVE_FLOAT, 4};
  float *field = load_field(data_dir, "wmag91.float", 91 * 91 * 91 * 4);
  const hsize_t first = 91 * (hsize_t)g_rank / g_size, last = 91 * (hsize_t)(g_rank + 1) / g_size;
  const size_t row_bytes = row_elements(&s) * 4;
  static const H5D_alloc_time_t allocs[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY, H5D_ALLOC_TIME_INCR,
                                            H5D_ALLOC_TIME_LATE};
  static const char *alloc_names[] = {"default", "early", "incr", "late"};
  static const H5D_fill_time_t fills[] = {H5D_FILL_TIME_IFSET, H5D_FILL_TIME_ALLOC, H5D_FILL_TIME_NEVER};
  static const char *fill_names[] = {"ifset", "alloc", "never"};
  char path[4096];
  snprintf(path, sizeof path, "%s/rules-%d.h5", out, g_size);
  int pass = 1, first_row = 1;
  hid_t fapl = mpio_fapl();
  if (g_rank == 0) printf("allocation / fill time, collective write of fzgpu noa 1e-3:\n");
  if (g_rank == 0 && json) fprintf(json, "\"rules\": [");
  for (int a = 0; a < 4; ++a) {
    for (int f = 0; f < 3; ++f) {
      hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
      CHECK_H5(H5Pset_alloc_time(dcpl, allocs[a]));
      CHECK_H5(H5Pset_fill_time(dcpl, fills[f]));
      int ok = 1;
      H5E_BEGIN_TRY {
        hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t space = H5Screate_simple(3, s.dims, NULL);
        hid_t dataset = file < 0 ? -1 : H5Dcreate2(file, "x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hid_t file_space = -1, memory_space = -1, dxpl = collective_dxpl();
        if (dataset >= 0) {
          row_spaces(dataset, 3, s.dims, first, last - first, &file_space, &memory_space);
          ok = H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl, (char *)field + first * row_bytes) >= 0;
          H5Sclose(file_space);
          H5Sclose(memory_space);
          ok = H5Dclose(dataset) >= 0 && ok;
        } else {
          ok = 0;
        }
        H5Pclose(dxpl);
        H5Sclose(space);
        if (file >= 0) ok = H5Fclose(file) >= 0 && ok;
      }
      H5E_END_TRY;
      int all_ok = 0;
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      long differ = 0;
      if (g_rank == 0 && all_ok) {
        /* what was stored decodes within the bound, and is filtered */
        float *back = xmalloc(91 * 91 * 91 * 4);
        read_rows(path, H5P_DEFAULT, &s, back, 0, 91);
        differ = violations(&s, field, back, "noa", 1e-3);
        hsize_t chunks = 0;
        hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT), space = H5Dget_space(dataset);
        H5Dget_num_chunks(dataset, space, &chunks);
        for (hsize_t i = 0; i < chunks; ++i) {
          hsize_t offset[3];
          unsigned mask = 0;
          haddr_t addr;
          hsize_t size;
          H5Dget_chunk_info(dataset, space, i, offset, &mask, &addr, &size);
          if (mask != 0) ++differ;  /* a chunk stored without the filter */
        }
        H5Sclose(space);
        H5Dclose(dataset);
        H5Fclose(file);
        free(back);
      }
      if (g_rank == 0) {
        printf("  alloc %-7s fill %-5s  %s\n", alloc_names[a], fill_names[f],
               !all_ok ? "refused by HDF5" : differ ? "WRONG DATA" : "works");
        if (json)
          fprintf(json, "%s{\"alloc\": \"%s\", \"fill\": \"%s\", \"works\": %s, \"bad\": %ld}", first_row ? "" : ", ",
                  alloc_names[a], fill_names[f], all_ok ? "true" : "false", differ);
        first_row = 0;
      }
      /* Every combination is expected to work; wrong data never. */
      if (!all_ok || differ) pass = 0;
      H5Pclose(dcpl);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  /* An independent write of a filtered dataset: HDF5 refuses it, and says so. */
  int refused = 0;
  {
    hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(3, s.dims, NULL);
    hid_t dataset = H5Dcreate2(file, "x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t file_space, memory_space, dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT));
    row_spaces(dataset, 3, s.dims, first, last - first, &file_space, &memory_space);
    H5E_BEGIN_TRY { refused = H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl,
                                       (char *)field + first * row_bytes) < 0; }
    H5E_END_TRY;
    H5Pclose(dxpl);
    H5Sclose(file_space);
    H5Sclose(memory_space);
    H5E_BEGIN_TRY { H5Dclose(dataset); H5Sclose(space); H5Fclose(file); }
    H5E_END_TRY;
    H5Pclose(dcpl);
  }
  int all_refused = 0;
  MPI_Allreduce(&refused, &all_refused, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("  independent write of a filtered dataset: %s\n", all_refused ? "refused by HDF5" : "ACCEPTED");
    if (json) fprintf(json, "], \"independent_write_refused\": %s", all_refused ? "true" : "false");
  }
  if (!all_refused) pass = 0;
  /* A second collective write over part of the rows (a checkpoint updated in
   * place): HDF5 decodes the chunks the band cuts, merges and encodes them
   * again. The file must equal one process doing the same two writes. */
  {
    const hsize_t band_first = 23, band_rows = 41;  /* cuts chunks 2 and 6 of 10 rows */
    const hsize_t mine_first = band_first + band_rows * (hsize_t)g_rank / g_size;
    const hsize_t mine_last = band_first + band_rows * (hsize_t)(g_rank + 1) / g_size;
    float *update = xmalloc(91 * 91 * 91 * 4);
    for (size_t i = 0; i < (size_t)91 * 91 * 91; ++i) update[i] = 2.0f * field[(i + 7919) % ((size_t)91 * 91 * 91)];
    char serial[4096];
    snprintf(serial, sizeof serial, "%s/rules-one-%d.h5", out, g_size);
    hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
    write_dataset(path, fapl, &s, dcpl, (char *)field + first * row_bytes, first, last - first);
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, fapl);
    hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT);
    hid_t file_space, memory_space, dxpl = collective_dxpl();
    row_spaces(dataset, 3, s.dims, mine_first, mine_last - mine_first, &file_space, &memory_space);
    CHECK_H5(H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl, (char *)update + mine_first * row_bytes));
    H5Pclose(dxpl);
    H5Sclose(file_space);
    H5Sclose(memory_space);
    H5Dclose(dataset);
    H5Fclose(file);
    long differ = 0;
    if (g_rank == 0) {
      write_dataset(serial, H5P_DEFAULT, &s, dcpl, field, 0, 91);
      file = H5Fopen(serial, H5F_ACC_RDWR, H5P_DEFAULT);
      dataset = H5Dopen2(file, "x", H5P_DEFAULT);
      row_spaces(dataset, 3, s.dims, band_first, band_rows, &file_space, &memory_space);
      CHECK_H5(H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, H5P_DEFAULT,
                        (char *)update + band_first * row_bytes));
      H5Sclose(file_space);
      H5Sclose(memory_space);
      H5Dclose(dataset);
      H5Fclose(file);
      hsize_t chunks = 0;
      differ = compare_frames(path, serial, 1, 1, 0, &chunks);
      printf("  a second collective write over rows %llu-%llu (chunks re-encoded): %s\n",
             (unsigned long long)band_first, (unsigned long long)(band_first + band_rows - 1),
             differ == 0 ? "frames equal one process" : "FRAMES DIFFER");
      if (json) fprintf(json, ", \"overwrite_frames_equal\": %s", differ == 0 ? "true" : "false");
      remove(serial);
      remove(path);
    }
    MPI_Bcast(&differ, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (differ != 0) pass = 0;
    H5Pclose(dcpl);
    free(update);
  }
  H5Pclose(fapl);
  free(field);
  return pass;
}
