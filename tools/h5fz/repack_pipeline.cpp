// The batch pipeline of `h5fz repack`: a compressed dataset's chunks never
// pass through HDF5's one-chunk-at-a-time filter call. They are read a batch
// at a time, compressed together through the engine's batch API (several
// chunks in flight on the GPU, all cores otherwise) into the frames the
// filter would write, optionally decoded again in memory to measure the
// errors, and stored with H5Dwrite_chunk; reading the next batch and writing
// the last one overlap the compression. And --verify, which reads every
// compressed dataset back through the filter and checks it chunk by chunk.
#include <algorithm>
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "environment.hpp"
#include "hdf5_handle.hpp"
#include "quality.hpp"
#include "repack_cache.hpp"
#include "repack_output.hpp"
#include "repack_run.hpp"

namespace h5fz {

namespace {

// One chunk on its way through the pipeline: where it lies, its bytes, its frame.
struct ChunkJob {
  std::vector<hsize_t> offset;
  fz::Bytes data;   // the chunk as the filter sees it: edge chunks padded with HDF5's fill value
  fz::Bytes frame;
};

template <typename Body>
void parallel_for(size_t count, Body body) {
  const size_t workers = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) body(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

void account(DatasetReport& report, const ChunkCheck& check) {
  report.max_abs_error = std::max(report.max_abs_error, check.max_abs_error);
  report.violations += check.violations;
  report.mismatches += check.mismatches;
}

}  // namespace

void Repack::write_chunks(hid_t in, hid_t out, const ChunkPlan& plan, const fz::Options& options,
                          DatasetReport& report) {
  const ChunkGrid grid(plan.dims, plan.chunks);
  const size_t per_batch = std::max<size_t>(1, settings_.batch_bytes / plan.chunk_bytes);
  const std::vector<uint64_t> chunk_dims(plan.chunks.begin(), plan.chunks.end());
  // Bytes of the dataset inside its extent, per chunk, for the progress line.
  auto inside_bytes = [&](const std::vector<hsize_t>& offset) {
    uint64_t bytes = plan.dtype.size;
    for (size_t i = 0; i < offset.size(); ++i) bytes *= std::min(plan.chunks[i], plan.dims[i] - offset[i]);
    return bytes;
  };

  auto read_batch = [&](uint64_t first) {
    std::vector<ChunkJob> batch;
    for (uint64_t index = first; index < std::min<uint64_t>(grid.count(), first + per_batch); ++index) {
      check_interrupted();
      ChunkJob job;
      job.offset = grid.offset(index);
      read_chunk(in, plan, job.offset, job.data, report.path);
      batch.push_back(std::move(job));
    }
    return batch;
  };
  // Compression, and the errors measured on a decode in memory: no HDF5 here,
  // so it runs beside the HDF5 reads and writes of the main thread.
  struct Measured {
    double max_abs_error = 0;
    uint64_t violations = 0, mismatches = 0;
  };
  auto compress = [&](std::vector<ChunkJob>* batch) {
    std::vector<fz::ChunkView> views;
    for (const ChunkJob& job : *batch) views.push_back({job.data.data(), job.data.size(), chunk_dims});
    std::vector<fz::Bytes> frames = fz::compress_batch(views, plan.dtype, options);
    for (size_t i = 0; i < batch->size(); ++i) (*batch)[i].frame = std::move(frames[i]);
    if (!settings_.measure_errors) return;
    std::vector<fz::Bytes> decoded(batch->size(), fz::Bytes(plan.chunk_bytes));
    std::vector<fz::FrameView> frame_views;
    for (size_t i = 0; i < batch->size(); ++i) {
      frame_views.push_back({(*batch)[i].frame.data(), (*batch)[i].frame.size(), decoded[i].data(), plan.chunk_bytes});
    }
    fz::Options policy;
    fz::filter::apply_policy(options, policy);
    fz::decompress_batch(frame_views, policy);
    std::vector<ChunkCheck> checks(batch->size());
    parallel_for(batch->size(), [&](size_t i) { checks[i] = check_chunk((*batch)[i].data, decoded[i], plan.dtype, options); });
    for (const ChunkCheck& check : checks) account(report, check);
    report.errors_measured = true;
  };
  auto write_batch = [&](std::vector<ChunkJob>& batch) {
    // A full disk is found here, before HDF5 meets it halfway through a
    // chunk (its error path has crashed there).
    uint64_t frame_bytes = 0;
    for (const ChunkJob& job : batch) frame_bytes += job.frame.size();
    if (frame_bytes) require_free_space(out_path_, frame_bytes, report.path);
    for (ChunkJob& job : batch) {
      require_hdf5(H5Dwrite_chunk(out, H5P_DEFAULT, 0, job.offset.data(), job.frame.size(), job.frame.data()),
                   report.path + ": cannot write a chunk");
      report.stored_bytes += job.frame.size();
      progress_->advance(inside_bytes(job.offset), report.path);
    }
    batch.clear();
  };

  std::vector<ChunkJob> next = read_batch(0), working, done;
  for (uint64_t first = 0; first < grid.count(); first += per_batch) {
    working = std::move(next);
    std::future<void> compressing = std::async(std::launch::async, compress, &working);
    try {
      write_batch(done);
      next = first + per_batch < grid.count() ? read_batch(first + per_batch) : std::vector<ChunkJob>{};
    } catch (...) {
      compressing.wait();
      throw;
    }
    compressing.get();
    done = std::move(working);
  }
  write_batch(done);
}

void Repack::verify(hid_t written_file, Progress& progress) {
  for (DatasetReport& report : reports_) {
    if (!report.compressed) continue;
    Handle in(H5Dopen2(in_file_, report.path.c_str(), H5P_DEFAULT), H5Dclose);
    Handle out(H5Dopen2(written_file, report.path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!in.ok() || !out.ok()) throw ToolError("--verify: cannot open " + report.path + ": " + hdf5_error_text("?"));
    Handle type(H5Dget_type(out.get()), H5Tclose);
    const WrittenAs written = written_as(out.get(), type.get(), "--verify: " + report.path);
    const fz::Options& options = written.options;
    const ChunkPlan& plan = written.plan;
    {  // IN is read as OUT's chunks: with the cache write_chunks has
      Handle in_dcpl(H5Dget_create_plist(in.get()), H5Pclose);
      Handle dapl(chunk_cache_access(input_chunk_cache(in_dcpl.get(), plan.dims, plan.chunks, plan.dtype.size, 1,
                                                       settings_.batch_bytes)),
                  H5Pclose);
      in.reset();  // closed first: HDF5 takes new access properties only on a first open
      in = Handle(H5Dopen2(in_file_, report.path.c_str(), dapl.get()), H5Dclose);
      if (!in.ok()) throw ToolError("--verify: cannot open " + report.path + ": " + hdf5_error_text("?"));
    }
    const ChunkGrid grid(plan.dims, plan.chunks);
    fz::Bytes original, decoded;
    DatasetReport check;
    for (uint64_t index = 0; index < grid.count(); ++index) {
      check_interrupted();
      const std::vector<hsize_t> offset = grid.offset(index);
      read_chunk(in.get(), plan, offset, original, report.path);
      read_chunk(out.get(), plan, offset, decoded, report.path);  // through the filter
      // The filter's own rule for this chunk (quality.hpp): the chunk as the
      // filter saw it, padded with HDF5's fill value, which the rule leaves out.
      account(check, check_chunk(original, decoded, plan.dtype, options));
      progress.advance(original.size(), report.path + " (verify)");
    }
    report.verified = true;
    report.verify_violations = check.violations + check.mismatches;
    report.max_abs_error = std::max(report.max_abs_error, check.max_abs_error);
    report.errors_measured = true;
  }
}

}  // namespace h5fz
