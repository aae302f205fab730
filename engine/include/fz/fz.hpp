// H5Z-FZ engine: the public C++ API. Compresses one chunk of typed elements into
// a self-describing FZM frame and decompresses a frame back. Knows nothing of HDF5.
//
//   fz::Options options;                       // preset 1 (lossless) by default
//   fz::Bytes frame = fz::compress(data, bytes, fz::DataType::of<float>(), {91, 91, 91}, options);
//   fz::Decoded d = fz::decompress(frame.data(), frame.size());
//
// Errors are reported by throwing fz::Error (a std::runtime_error) with a message
// that names the problem; nothing here exits or aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fz {

using Bytes = std::vector<uint8_t>;

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// What an element is. Opaque covers compound, array, enum-of-opaque and anything
// the lossless path treats as plain bytes; Float is IEEE-754 binary16/32/64.
enum class ElementClass : uint8_t { Opaque = 0, Unsigned = 1, Signed = 2, Float = 3 };
enum class ByteOrder : uint8_t { Little = 0, Big = 1 };

struct DataType {
  ElementClass element_class = ElementClass::Opaque;
  uint32_t size = 1;  // bytes per element, >= 1
  ByteOrder order = ByteOrder::Little;

  template <typename T>
  static DataType of();
  bool operator==(const DataType& o) const {
    return element_class == o.element_class && size == o.size && order == o.order;
  }
};

// Preset ids are stable forever (they are stored in files): never renumber.
enum class Preset : uint8_t {
  Default = 0,  // = Lossless
  Lossless = 1,
  Pfpl = 2,
  Fzgpu = 3,
  Cusz = 4,
  CuszHiTp = 5,
  CuszHiCr = 6,
};

// Error-bound modes (stable ids).
enum class ErrorMode : uint8_t { Abs = 0, Noa = 1, Rel = 2 };
const char* mode_name(ErrorMode m);

// The preset table, read-only: one entry per id the format knows, in id order.
// Tools, the filter and tests list presets from it, never by hand.
struct PresetInfo {
  Preset id = Preset::Default;
  const char* name = "";  // stable, as the id: h5fz and h5py users give presets by name
  bool lossy = false;
  bool available = false;  // implemented in this build
  uint8_t modes = 0;       // bit (1 << mode) for each error-bound mode it honours strictly
  bool honours(ErrorMode m) const { return (modes >> static_cast<unsigned>(m)) & 1u; }
};
const std::vector<PresetInfo>& preset_table();
const PresetInfo* find_preset(Preset id);                 // null for an unknown id
const PresetInfo* find_preset(const std::string& name);  // null for an unknown name
const char* preset_name(Preset p);    // "unknown" for an unknown id
bool preset_is_lossy(Preset p);
bool preset_is_available(Preset p);  // implemented in this build

// ---- Policy: where and how the engine works --------------------------------
// The engine reads no environment variables and prints nothing itself: these
// fields say everything (the HDF5 filter and the h5fz tools map their
// H5Z_FZ_* variables onto them). None of them changes a frame's bytes.
enum class CpuFeatures : uint8_t {
  kAll = 0,       // the optional x86-64 paths (AVX2) where the CPU has them
  kBaseline = 1,  // baseline x86-64 only, for comparisons
};
// How chunks cross between host and GPU memory (for measurements,
// docs/PERFORMANCE.md): through pinned staging buffers in overlapped pieces,
// or handed to the driver as they are.
enum class GpuCopies : uint8_t { kStaged = 0, kDirect = 1 };
enum class LogLevel : uint8_t {
  kInfo = 0,     // which backend runs, a chunk the GPU gave back to the CPU
  kWarning = 1,  // always worth saying: a chunk stored uncompressed after a failure, a GPU retired
};
// Receives the engine's messages (without a prefix). May be called from any
// engine thread, concurrently.
using LogCallback = std::function<void(LogLevel, const std::string&)>;

// How presets 5 and 6 (cuszhi-tp, cuszhi-cr) tune their spline predictor
// (stable ids: the filter's cd_values[6], docs/CD_VALUES.md). Every level
// has its error bound eb_l = eb / min(alpha^l, beta) (l = 0 the finest) and
// its interpolation and axis order.
enum class SplineTuning : uint8_t {
  kOff = 0,           // alpha = beta = 1, every level cubic, axes slowest first: the fastest encoder
  kRatioFirst = 1,    // alpha = beta = 1, each level's interpolation and axis order chosen on a sample (default)
  kQualityFirst = 2,  // as ratio-first, with tighter coarse levels (alpha 1..2 from the bound, beta 4): higher PSNR
  kManual = 3,        // as ratio-first, with spline_alpha and spline_beta
};
const char* spline_tuning_name(SplineTuning t);  // "off", "ratio-first", "quality-first", "manual"

struct Options {
  Preset preset = Preset::Lossless;
  ErrorMode mode = ErrorMode::Abs;
  double bound = 0.0;           // lossy presets only
  // The special values of lossy presets on float32/float64: elements equal to
  // either (bit for bit) come back exactly and are left out of NOA's value
  // range (docs/FORMAT.md section 0, rule 6). fill_value is HDF5's fill
  // value, which pads edge chunks and never-written elements; missing_value a
  // second one the data marks gaps with (a netCDF missing_value, land), which
  // never displaces the fill value. Each is one element in the data's byte
  // order; empty = none. Equal values count once.
  Bytes fill_value;
  Bytes missing_value;
  // Presets 5 and 6 only (other presets ignore them). alpha and beta are
  // used with kManual: finite, >= 1 and at most kMaxSplineAlphaBeta.
  SplineTuning spline_tuning = SplineTuning::kRatioFirst;
  double spline_alpha = 1.0;
  double spline_beta = 1.0;
  // Policy (above).
  unsigned threads = 0;         // CPU threads; 0 = all cores
  // "auto" (CUDA device 0 when one is usable, chunks under 256 KiB on the
  // CPU), "auto:N" (the same on device N), "cpu", "cuda" or "cuda:N" (every
  // chunk on that device). A request this process cannot meet runs on the CPU
  // and says why (kWarning for cuda and cuda:N).
  std::string device = "auto";
  CpuFeatures cpu_features = CpuFeatures::kAll;
  GpuCopies gpu_copies = GpuCopies::kStaged;
  // Empty: warnings go to stderr prefixed "fz: ", information is dropped.
  LogCallback log;
};

constexpr double kMaxSplineAlphaBeta = 1024.0;

// Checks options against a data type; throws Error naming the problem.
void validate(const Options& options, const DataType& dtype);

// Compresses one chunk: `bytes` must equal dtype.size * product(dims) (dims
// slowest first; an empty dims means one dimension of bytes / dtype.size).
Bytes compress(const void* data, size_t bytes, const DataType& dtype,
               const std::vector<uint64_t>& dims, const Options& options);

// compress() into caller memory: writes the frame into `frame` (capacity
// bytes) and returns its length. `frame` may be `data` itself: the chunk is
// read in full before the frame is written (an HDF5 filter's chunk buffer, so
// no new buffer per chunk). A frame longer than `capacity` (an incompressible
// chunk's frame is the chunk plus a header) goes to *spill instead and 0 is
// returned; without spill that is an Error. On a CUDA backend the frame goes
// from pinned memory straight to `frame`.
size_t compress_into(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                     const Options& options, void* frame, size_t capacity, Bytes* spill = nullptr);

struct Decoded {
  Bytes data;
  DataType dtype;
  std::vector<uint64_t> dims;
  Preset preset = Preset::Lossless;
};

// Decodes a whole frame (exactly `frame_bytes` long). Throws Error on anything
// malformed, truncated, corrupted (CRC32C) or written by an incompatible version.
// `policy`: only the policy fields of Options count (the frame says the rest).
Decoded decompress(const void* frame, size_t frame_bytes, const Options& policy = {});

// Decodes into a caller buffer of `capacity` bytes; returns the decoded length.
size_t decompress_into(const void* frame, size_t frame_bytes, void* out, size_t capacity,
                       const Options& policy = {});

// ---- The bound one chunk holds ----------------------------------------------
// What compress() guarantees for one chunk under `options`, by the one rule
// every lossy preset enforces (docs/FORMAT.md section 0): an element whose
// bits equal a special value (options.fill_value, options.missing_value) or
// that is not finite comes back bit for bit; every other element x comes back
// within `bound` (ABS, NOA: absolute) or `bound` x |x| (REL). NOA's absolute
// bound is the largest double <= options.bound x (max - min) over the chunk's
// finite elements other than the special values and +0.0 (HDF5 pads edge
// chunks with its fill value, or with zeros where it has none, so padding
// never widens it). `lossy` is false where the chunk is stored bit for bit: a
// lossless preset, elements other than float32/float64, a NOA chunk without
// two different such values. Tools that check round trips (h5fz repack
// --verify) take the bound from here, so they check exactly what the filter
// guarantees. Throws Error for invalid options (as validate()).
struct ChunkBound {
  bool lossy = false;
  ErrorMode mode = ErrorMode::Abs;  // Noa arrives resolved: mode Abs, bound absolute
  double bound = 0;
  bool range_any = false;  // NOA: the range the bound was taken over
  double range_min = 0, range_max = 0;
  // The special values' bits as native-order integers (the low dtype.size
  // bytes): elements with these bits come back exactly.
  std::vector<uint64_t> exact_bits;
};
ChunkBound chunk_bound(const void* data, size_t bytes, const DataType& dtype, const Options& options);

// ---- Batches: many chunks, several in flight --------------------------------
// Each chunk gives exactly the frame compress() gives it, and each frame
// decodes exactly as decompress_into() decodes it; what a batch adds is
// concurrency. On the GPU several chunks are in flight at once, each on its own
// stream, so one chunk's copies overlap another's kernels; on the CPU the
// chunks share the threads of Options::threads.
struct ChunkView {
  const void* data = nullptr;
  size_t bytes = 0;
  std::vector<uint64_t> dims;  // as compress(); empty = one dimension
};
// Frames in chunk order. Throws Error (naming the chunk) for invalid options or
// a chunk compress() would refuse, before any work starts.
std::vector<Bytes> compress_batch(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                  const Options& options);

// A caller's buffer for one frame (max_frame_bytes always suffices).
struct FrameRoom {
  void* data = nullptr;
  size_t capacity = 0;
};
// compress_batch into the caller's buffers: frame i (the same bytes) into
// rooms[i]; returns the frames' lengths. A frame that does not fit its room
// is an Error naming the chunk (the other frames are still written). No
// frame is held anywhere else on the way (h5fz.write's groups of chunks).
std::vector<size_t> compress_batch_into(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                        const Options& options, const std::vector<FrameRoom>& rooms);

struct FrameView {
  const void* frame = nullptr;
  size_t frame_bytes = 0;
  void* out = nullptr;  // the decoded chunk goes here...
  size_t capacity = 0;  // ...and may not exceed this many bytes
};
// Decoded lengths in frame order. If a frame is malformed, every other frame is
// still decoded and an Error naming the first bad frame (by index) is thrown.
// policy.threads: CPU threads for the whole batch (0 = all cores).
std::vector<size_t> decompress_batch(const std::vector<FrameView>& frames, const Options& policy = {});

// ---- Memory --------------------------------------------------------------------
// Linux lets a large allocation succeed and kills the process when it touches
// the pages. So for chunks of 64 MiB or more the engine first checks that the
// memory it needs beyond the chunk and its frame (at most about the chunk's
// size, both ways: docs/PERFORMANCE.md) is there (MemAvailable, capped by the
// process's cgroup). A chunk it cannot compress for want of memory is stored
// raw in its frame (a warning through Options::log); one it cannot decode is
// an Error.
// Throws Error("not enough memory to <what> a chunk of N MiB ...") when a chunk
// of 64 MiB or more would need `needed` bytes more than are available.
void require_memory(uint64_t chunk_bytes, uint64_t needed, const char* what);
// The most memory this process can have (MemTotal, capped by its cgroup); 0 if unknown.
uint64_t total_memory();

// ---- Device-resident chunks (CUDA builds) -----------------------------------
// For data already in GPU memory: the chunk, the frame and the decoded chunk
// are device pointers of one CUDA device (the one that owns them; the calling
// thread's current device is left as it was). Frames are the bytes compress()
// writes for the same chunk and options, so either API, and either backend,
// decodes them. Both calls return when the result is complete in device memory.
// Where a stage has no GPU version the data goes through the host and the CPU,
// with the same result. Errors (not device memory, no CUDA in this build, a
// frame that does not fit, a malformed frame) throw Error.
bool device_api_available();  // this build has CUDA and a device is usable
int usable_cuda_devices();     // how many CUDA devices this process may use (0 without CUDA)
// A frame capacity that always suffices for a chunk of `bytes` bytes and rank `rank`.
size_t max_frame_bytes(size_t bytes, size_t rank);
// Returns the frame's length.
size_t compress_on_device(const void* device_data, size_t bytes, const DataType& dtype,
                          const std::vector<uint64_t>& dims, const Options& options, void* device_frame,
                          size_t frame_capacity);
// Returns the decoded length (at most capacity). The chunk is decoded
// straight into device_out when that is 256-byte aligned (as cudaMalloc
// returns) and does not overlap the frame; otherwise it is decoded beside it
// and copied, which costs a pass over the chunk and the chunk's size in
// device memory more. Device memory held beyond the frame and the output, on
// the H200 at 512 MiB: 0.1x the chunk for lossless, 0.6-0.9x for the Lorenzo
// and spline presets, 1.1x for pfpl (docs/PERFORMANCE.md, "Issue 31, fourth
// session").
size_t decompress_on_device(const void* device_frame, size_t frame_bytes, void* device_out, size_t capacity,
                            const Options& policy = {});

// Frames in host memory decoded into device memory: FrameView::frame is host
// memory, FrameView::out device memory of one CUDA device, which decodes
// them (h5fz.read(..., device="cuda") reads frames from a file and hands
// them over). Each frame is copied up once into memory of the engine's own
// and decoded as decompress_on_device() decodes it, several at once. Returns
// the decoded lengths when every chunk is complete; a bad frame is an Error
// naming it by index after the others are decoded, as decompress_batch().
std::vector<size_t> decompress_batch_to_device(const std::vector<FrameView>& frames, const Options& policy = {});

// Chunks in device memory compressed into frames in host memory:
// ChunkView::data is device memory of one CUDA device, which compresses
// them, several at once, each as compress_on_device() compresses it; only the
// frames cross to the host (h5fz.write of a GPU array). Frames in chunk
// order, each the one compress() writes for the same chunk and options. Every
// chunk is checked before any work starts; a chunk that fails is an Error
// naming it by index after the others are compressed. Device memory beyond
// the chunks: one frame room (max_frame_bytes) for each chunk in flight.
std::vector<Bytes> compress_batch_from_device(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                              const Options& options);
// The same into the caller's host buffers, as compress_batch_into: frame i
// into rooms[i], copied there straight from the device (at PCIe speed when
// the rooms are page-locked: CuPy's pinned memory, cudaHostAlloc); returns
// the lengths. A frame that does not fit its room is an Error naming the
// chunk (the other frames are still written).
std::vector<size_t> compress_batch_from_device_into(const std::vector<ChunkView>& chunks, const DataType& dtype,
                                                    const Options& options, const std::vector<FrameRoom>& rooms);

// The structure of a frame, for tools (h5fz inspect) and tests.
struct StageInfo {
  uint16_t type_id = 0;
  std::string name;
  Bytes config;
  std::vector<uint8_t> inputs;  // buffer ids consumed
  uint8_t outputs = 0;          // number of buffers produced
};
struct FrameInfo {
  uint8_t version_major = 0, version_minor = 0;
  uint16_t flags = 0;
  bool raw = false;  // payload is the original bytes
  Preset preset = Preset::Lossless;
  DataType dtype;
  std::vector<uint64_t> dims;
  uint64_t original_bytes = 0;
  size_t header_bytes = 0, frame_bytes = 0;
  std::vector<StageInfo> stages;
  std::vector<uint64_t> stored_sizes;  // each stored buffer, in payload order
  uint32_t header_crc = 0, payload_crc = 0;
};
// Parses and checks a frame's header (and payload checksum) without decoding.
FrameInfo inspect(const void* frame, size_t frame_bytes);
// The same checks but the payload checksum: for a caller that decodes the
// frame next (decompress_into checks the payload then, on the GPU when it
// decodes there, and reports a mismatch as corruption). A pass over the
// payload on the host costs about 0.65 ms for a 2.5 MB frame on the H100
// machine's host, a third of an HDF5 read of a 16 MiB chunk.
FrameInfo inspect_header(const void* frame, size_t frame_bytes);

// Library version, "major.minor.patch"; the frame format version is separate.
const char* version();

// ---- Chunk shapes ----------------------------------------------------------
// The chunk shape this project recommends for a dataset of `dims` (slowest
// first) with elements of `element_bytes`: the fastest axes whole, as many
// of them as fit in target_bytes; the next axis cut into the fewest equal
// pieces that fit; the slower axes 1. A dataset that fits whole is one chunk.
// An extent of 0 counts as 1 (HDF5 wants chunk extents of at least 1).
// Why: every chunk is coded on its own, with its own frame header, tables
// and predictor anchors, and (on a GPU) its own launches, so chunks of a few
// MiB keep that cost near nothing; whole fast axes keep the predictor's
// neighbours inside the chunk. h5py's default chunks are often tens of KiB
// (README.md, "Choosing chunks"). Throws Error for an empty dims, an
// element_bytes of 0, or a target below one element or above 4 GiB - 1
// (HDF5's limit on a chunk).
constexpr size_t kSuggestedChunkBytes = size_t{4} << 20;
std::vector<uint64_t> suggest_chunk_shape(const std::vector<uint64_t>& dims, size_t element_bytes,
                                          size_t target_bytes = kSuggestedChunkBytes);

template <> inline DataType DataType::of<int8_t>() { return {ElementClass::Signed, 1, ByteOrder::Little}; }
template <> inline DataType DataType::of<uint8_t>() { return {ElementClass::Unsigned, 1, ByteOrder::Little}; }
template <> inline DataType DataType::of<int16_t>() { return {ElementClass::Signed, 2, ByteOrder::Little}; }
template <> inline DataType DataType::of<uint16_t>() { return {ElementClass::Unsigned, 2, ByteOrder::Little}; }
template <> inline DataType DataType::of<int32_t>() { return {ElementClass::Signed, 4, ByteOrder::Little}; }
template <> inline DataType DataType::of<uint32_t>() { return {ElementClass::Unsigned, 4, ByteOrder::Little}; }
template <> inline DataType DataType::of<int64_t>() { return {ElementClass::Signed, 8, ByteOrder::Little}; }
template <> inline DataType DataType::of<uint64_t>() { return {ElementClass::Unsigned, 8, ByteOrder::Little}; }
template <> inline DataType DataType::of<float>() { return {ElementClass::Float, 4, ByteOrder::Little}; }
template <> inline DataType DataType::of<double>() { return {ElementClass::Float, 8, ByteOrder::Little}; }

}  // namespace fz
