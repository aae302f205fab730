/* fz_mpi bench: collective writes and reads of wmag91 rows tiled over the
 * ranks (weak or strong scaling), per preset: the seconds and rates, the
 * filter's and the file system's share, the memory each phase took, every
 * chunk compared with one process's frame; the tables go to stdout and, from
 * rank 0, to --json. */
#include "fz_mpi_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double write_s, read_s, compress_s, decompress_s;  /* slowest rank's */
  WritePhases phases;                                /* of the best write, slowest rank's each */
  double write_memory[2], read_memory[2];            /* memory_since: largest rank's each */
} Timing;

static void split_commas(char *list, char **items, int *count, int capacity) {
  *count = 0;
  char *save = NULL;
  for (char *item = strtok_r(list, ",", &save); item && *count < capacity; item = strtok_r(NULL, ",", &save))
    items[(*count)++] = item;
}

int run_bench(const char *out, const char *data_dir, char *preset_list, const char *mode, double bound,
              double mib_per_rank, double total_mib, double chunk_mib, int reps, int verify,
              int first_write, const char *json_path) {
  float *field = load_field(data_dir, "wmag91.float", 91 * 91 * 91 * 4);
  Shape s = {3, {0, 91, 91}, {0, 91, 91}, H5T_NATIVE_FLOAT, 4};
  const size_t row_bytes = 91 * 91 * 4;
  hsize_t chunk_rows = (hsize_t)(chunk_mib * 1048576.0 / row_bytes + 0.5);
  if (chunk_rows < 1) chunk_rows = 1;
  s.chunks[0] = chunk_rows;
  /* Whole chunks per rank; strong scaling: the same chunks split over the ranks
   * (the total rounded to a multiple of 4 chunks, so 1, 2 and 4 ranks share it). */
  hsize_t chunks_per_rank;
  const char *scaling = total_mib > 0 ? "strong" : "weak";
  if (total_mib > 0) {
    hsize_t total_chunks = (hsize_t)(total_mib * 1048576.0 / (chunk_rows * row_bytes) + 0.5);
    total_chunks = (total_chunks + 3) / 4 * 4;
    if (total_chunks % (hsize_t)g_size) die("--total-mib: %llu chunks do not split over %d ranks",
                                            (unsigned long long)total_chunks, g_size);
    chunks_per_rank = total_chunks / g_size;
  } else {
    chunks_per_rank = (hsize_t)(mib_per_rank * 1048576.0 / (chunk_rows * row_bytes) + 0.5);
  }
  if (chunks_per_rank < 1) chunks_per_rank = 1;
  const hsize_t rows_per_rank = chunks_per_rank * chunk_rows, first = rows_per_rank * g_rank;
  s.dims[0] = rows_per_rank * g_size;
  const size_t slab_bytes = rows_per_rank * row_bytes;
  /* Row r holds the field's plane r mod 91: real values, and chunks that repeat
   * only every 91 chunks, so one period written by one process is a reference
   * for every chunk. */
  char *slab = xmalloc(slab_bytes), *back = xmalloc(slab_bytes);
  /* Touched before any timing: otherwise the first preset's read pays for
   * faulting in its whole destination (seconds per GiB on the GPU machines'
   * sandbox), and only that preset. */
  memset(back, 0, slab_bytes);
  for (hsize_t r = 0; r < rows_per_rank; ++r) memcpy(slab + r * row_bytes, field + ((first + r) % 91) * 91 * 91, row_bytes);
  FILE *json = NULL;
  int first_key = 1;
  if (g_rank == 0 && json_path && !(json = fopen(json_path, "w"))) die("cannot write %s", json_path);
  if (json) fprintf(json, "{\"ranks\": %d, \"scaling\": \"%s\", ", g_size, scaling);
  print_devices(json, &first_key);
  if (json) fprintf(json, ", ");
  char *presets[16];
  static char phase_lines[4096], memory_lines[4096];
  phase_lines[0] = memory_lines[0] = '\0';
  int count = 0, pass = 1;
  split_commas(preset_list, presets, &count, 16);
  char path[4096], reference[4096];
  snprintf(path, sizeof path, "%s/bench-%d.h5", out, g_size);
  snprintf(reference, sizeof reference, "%s/bench-reference-%d.h5", out, g_size);
  char raw_path[4096];
  snprintf(raw_path, sizeof raw_path, "%s/bench-raw-%d.bin", out, g_size);
  hid_t fapl = mpio_fapl();
  /* The untimed first write (see the top of fz_mpi.c). Measured on 2 x H200,
   * 8 GiB from one rank: without it the first two filtered presets wrote in
   * 10.3-10.7 s and the next three in 4.9-6.3 s, HDF5's own share 2.6-2.8x. */
  double first_write_s = 0;
  for (int p = 0; p < count && first_write; ++p) {
    if (strcmp(presets[p], "none") == 0) continue;
    const int preset = preset_id(presets[p]);
    if (preset < 0) die("unknown preset %s", presets[p]);
    hid_t dcpl = filtered_dcpl(&s, preset, mode_id(mode), bound);
    warm_up(&s, dcpl, slab);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now();
    write_dataset(path, fapl, &s, dcpl, slab, first, rows_per_rank);
    read_rows(path, fapl, &s, back, first, rows_per_rank);
    first_write_s = now() - start;
    MPI_Allreduce(MPI_IN_PLACE, &first_write_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
      remove(path);
      printf("untimed first write and read of the whole slab (%s): %.3f s\n", presets[p], first_write_s);
    }
    H5Pclose(dcpl);
    MPI_Barrier(MPI_COMM_WORLD);
    break;
  }
  if (g_rank == 0)
    printf("\n%s scaling, %d rank(s), %.1f MiB per rank (%.1f MiB in all), chunks %llu x 91 x 91 (%.2f MiB), %s %g\n"
           "%-10s %5s %7s | %8s %8s %9s %8s %8s | %8s %8s %9s %8s %8s | %s\n",
           scaling, g_size, slab_bytes / 1048576.0, g_size * slab_bytes / 1048576.0, (unsigned long long)chunk_rows,
           chunk_rows * row_bytes / 1048576.0, mode, bound, "preset", "ranks", "ratio", "write s", "GB/s", "GB/s/rank",
           "filter s", "rest s", "read s", "GB/s", "GB/s/rank", "filter s", "rest s", "frames");
  if (json) fprintf(json, "\"first_write_s\": %.6f, ", first_write_s);
  /* glibc's allocator settings and the filter's frame buffers as this rank
   * sees them (the memory A/Bs of tools/mpi/multi_gpu_run.sh are only A/Bs
   * if they reach the ranks) */
  const char *settings[][2] = {{"glibc_tunables", "GLIBC_TUNABLES"}, {"frame_buffers", "H5Z_FZ_FRAME_BUFFERS"}};
  for (int i = 0; json && i < 2; ++i) {
    const char *value = getenv(settings[i][1]);
    fprintf(json, "\"%s\": \"", settings[i][0]);
    for (const char *c = value ? value : ""; *c; ++c)
      if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, json);
    fprintf(json, "\", ");
  }
  if (json) fprintf(json, "\"results\": [");
  for (int p = 0; p < count; ++p) {
    const int preset = strcmp(presets[p], "none") == 0 ? -1 : preset_id(presets[p]);
    if (preset < 0 && strcmp(presets[p], "none") != 0) die("unknown preset %s", presets[p]);
    hid_t dcpl = filtered_dcpl(&s, preset, mode_id(mode), bound);
    if (preset >= 0) warm_up(&s, dcpl, slab);
    Timing best = {1e300, 1e300, 0, 0, {0, 0, 0}, {0, 0}, {0, 0}};
    for (int rep = 0; rep < reps; ++rep) {
      Timing t;
      double c0 = filter_seconds(0), d0 = filter_seconds(1);
      MemoryMark mark = memory_mark();
      MPI_Barrier(MPI_COMM_WORLD);
      double start = now();
      WritePhases phases;
      write_dataset_timed(path, fapl, &s, dcpl, slab, first, rows_per_rank, &phases);
      double mine = now() - start, compress = filter_seconds(0) - c0;
      memory_since(mark, t.write_memory);
      MPI_Allreduce(MPI_IN_PLACE, &phases, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t.phases = phases;
      mark = memory_mark();
      MPI_Barrier(MPI_COMM_WORLD);
      start = now();
      read_rows(path, fapl, &s, back, first, rows_per_rank);
      double mine_read = now() - start, decompress = filter_seconds(1) - d0;
      memory_since(mark, t.read_memory);
      MPI_Allreduce(&mine, &t.write_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&mine_read, &t.read_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&compress, &t.compress_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&decompress, &t.decompress_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (t.write_s < best.write_s) {
        best.write_s = t.write_s, best.compress_s = t.compress_s, best.phases = t.phases;
        memcpy(best.write_memory, t.write_memory, sizeof t.write_memory);
      }
      if (t.read_s < best.read_s) {
        best.read_s = t.read_s, best.decompress_s = t.decompress_s;
        memcpy(best.read_memory, t.read_memory, sizeof t.read_memory);
      }
    }
    /* The file system's share, measured after the checks below (its read
     * lands in `back`): the stored bytes, split over the ranks, through plain
     * MPI-IO. */
    double stored = 0, raw_write_s = 0, raw_read_s = 0;
    if (g_rank == 0) stored = stored_bytes(path);
    MPI_Bcast(&stored, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* Checks: the values read back are the one-process file's (lossless: the
     * input), and every chunk is the one-process frame. */
    long differ = 0;
    int values_equal = 1;
    if (preset < 0 || preset <= 1) {
      values_equal = memcmp(back, slab, slab_bytes) == 0;
    } else if (verify) {
      const hsize_t period_chunks = 91;  /* chunk c holds the planes of chunk c mod 91 */
      Shape ref = s;
      ref.dims[0] = period_chunks * chunk_rows;
      if (g_rank == 0) {
        char *rows = xmalloc(ref.dims[0] * row_bytes);
        for (hsize_t r = 0; r < ref.dims[0]; ++r) memcpy(rows + r * row_bytes, field + (r % 91) * 91 * 91, row_bytes);
        hid_t ref_dcpl = filtered_dcpl(&ref, preset, mode_id(mode), bound);
        write_dataset(reference, H5P_DEFAULT, &ref, ref_dcpl, rows, 0, ref.dims[0]);
        H5Pclose(ref_dcpl);
        free(rows);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      hsize_t seen = 0;
      differ = compare_frames(path, reference, g_rank == 0, (hsize_t)g_size, (hsize_t)g_rank, &seen);
      if (seen != chunks_per_rank * g_size) differ = -1;
      /* this rank's decoded rows against the reference's decoded chunks; the
       * reference period is read once (91 chunks, 364 MiB at 4 MiB chunks),
       * not once for each of this rank's chunks */
      char *ref_rows = xmalloc(ref.dims[0] * row_bytes);
      read_rows(reference, H5P_DEFAULT, &ref, ref_rows, 0, ref.dims[0]);
      for (hsize_t c = 0; c < chunks_per_rank && values_equal; ++c) {
        const hsize_t global_chunk = first / chunk_rows + c;
        values_equal = memcmp(back + c * chunk_rows * row_bytes,
                              ref_rows + (global_chunk % period_chunks) * chunk_rows * row_bytes,
                              chunk_rows * row_bytes) == 0;
      }
      free(ref_rows);
    }
    /* differ < 0: the chunk counts or the filter do not match at all */
    long frames_bad = differ != 0, any_frames_bad = 0;
    int all_equal = 0;
    MPI_Allreduce(&frames_bad, &any_frames_bad, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&values_equal, &all_equal, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    const int checked = preset > 1 && verify;
    const int ok = all_equal && (!checked || !any_frames_bad);
    pass &= ok;
    {
      size_t share = (size_t)(stored / g_size);
      if (share > slab_bytes) share = slab_bytes;
      raw_io(raw_path, back, share, &raw_write_s, &raw_read_s);
    }
    if (g_rank == 0) {
      const double total = (double)g_size * slab_bytes, ratio = total / stored_bytes(path);
      const char *verdict = !ok ? "DIFFER" : checked ? "equal" : preset <= 1 ? "lossless" : "unchecked";
      snprintf(phase_lines + strlen(phase_lines), sizeof phase_lines - strlen(phase_lines),
               "%-10s %5d | %8.3f %10.3f %8.3f | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f\n", presets[p], g_size,
               best.phases.create_s, best.phases.write_s, best.phases.close_s, best.compress_s, raw_write_s,
               best.write_s, best.decompress_s, raw_read_s, best.read_s);
      snprintf(memory_lines + strlen(memory_lines), sizeof memory_lines - strlen(memory_lines),
               "%-10s %5d | %10.0f %10.0f | %10.0f %10.0f\n", presets[p], g_size, best.write_memory[0] / 1000,
               best.write_memory[1], best.read_memory[0] / 1000, best.read_memory[1]);
      printf("%-10s %5d %7.2f | %8.3f %8.2f %9.2f %8.3f %8.3f | %8.3f %8.2f %9.2f %8.3f %8.3f | %s\n", presets[p],
             g_size, ratio, best.write_s, total / best.write_s / 1e9, slab_bytes / best.write_s / 1e9, best.compress_s,
             best.write_s - best.compress_s, best.read_s, total / best.read_s / 1e9, slab_bytes / best.read_s / 1e9,
             best.decompress_s, best.read_s - best.decompress_s, verdict);
      fflush(stdout);
      if (json)
        fprintf(json,
                "%s{\"preset\": \"%s\", \"ranks\": %d, \"bytes_per_rank\": %zu, \"ratio\": %.4f, \"write_s\": %.6f, "
                "\"read_s\": %.6f, \"compress_s\": %.6f, \"decompress_s\": %.6f, \"write_gbs\": %.4f, "
                "\"read_gbs\": %.4f, \"create_s\": %.6f, \"h5dwrite_s\": %.6f, \"close_s\": %.6f, "
                "\"fs_write_s\": %.6f, \"fs_read_s\": %.6f, \"write_faults\": %.0f, \"write_rss_mib\": %.1f, "
                "\"read_faults\": %.0f, \"read_rss_mib\": %.1f, \"checked\": %s, \"equal\": %s}",
                p ? ", " : "", presets[p], g_size, slab_bytes, ratio, best.write_s, best.read_s, best.compress_s,
                best.decompress_s, total / best.write_s / 1e9, total / best.read_s / 1e9, best.phases.create_s,
                best.phases.write_s, best.phases.close_s, raw_write_s, raw_read_s, best.write_memory[0],
                best.write_memory[1], best.read_memory[0], best.read_memory[1], checked ? "true" : "false",
                ok ? "true" : "false");
      remove(path);
      remove(reference);
    }
    H5Pclose(dcpl);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (g_rank == 0)
    printf("where the time goes (slowest rank each, s): H5Fcreate+H5Dcreate, H5Dwrite, H5Dclose+H5Fclose; the\n"
           "filter's share, the file system's (the stored bytes through plain MPI-IO) and the whole write; the same\n"
           "for the read\n%-10s %5s | %8s %10s %8s | %8s %8s %8s | %8s %8s %8s\n%s",
           "preset", "ranks", "create", "H5Dwrite", "close", "filter", "fs", "write", "filter", "fs", "read",
           phase_lines);
  if (g_rank == 0)
    printf("memory (the largest rank each): thousands of minor page faults and MiB of resident memory above the\n"
           "rank's start (its slabs), during the write and during the read\n%-10s %5s | %10s %10s | %10s %10s\n%s",
           "preset", "ranks", "w faults k", "w MiB", "r faults k", "r MiB", memory_lines);
  if (json) {
    fprintf(json, "], \"passed\": %s}\n", pass ? "true" : "false");
    fclose(json);
  }
  H5Pclose(fapl);
  free(slab);
  free(back);
  free(field);
  return pass;
}
