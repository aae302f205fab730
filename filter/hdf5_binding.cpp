#include "hdf5_binding.hpp"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <mutex>
#include <utility>
#include <vector>

#include "fz/fz.hpp"

namespace fz::filter {

struct Hdf5Api::ErrorIds {
  std::mutex mutex;
  bool attempted = false;
  hid_t error_class = -1;
  hid_t major = -1;
  hid_t minors[4] = {-1, -1, -1, -1};
};

namespace {

// Tables are created once per library and never freed: HDF5 flushes open
// files from its own atexit handler, which runs after the destructors of
// objects this plugin registered later, and may still call the filter then.
struct Registry {
  std::mutex mutex;
  std::vector<std::pair<const void*, Hdf5Api*>> tables;  // keyed by the caller object's load address
};

Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

template <typename Pointer>
bool resolve_one(void* handle, const char* name, Pointer& slot) {
  slot = reinterpret_cast<Pointer>(dlsym(handle, name));
  return slot != nullptr;
}

// Fills `api` from `handle`; false if any function is missing (an HDF5 older
// than 1.8.15, or not HDF5 at all).
bool resolve_all(void* handle, Hdf5Api& api) {
  bool ok = true;
  ok &= resolve_one(handle, "H5Pget_chunk", api.Pget_chunk);
  ok &= resolve_one(handle, "H5Pget_filter_by_id2", api.Pget_filter_by_id2);
  ok &= resolve_one(handle, "H5Pmodify_filter", api.Pmodify_filter);
  ok &= resolve_one(handle, "H5Pget_nfilters", api.Pget_nfilters);
  ok &= resolve_one(handle, "H5Pget_filter2", api.Pget_filter2);
  ok &= resolve_one(handle, "H5Pfill_value_defined", api.Pfill_value_defined);
  ok &= resolve_one(handle, "H5Pget_fill_value", api.Pget_fill_value);
  ok &= resolve_one(handle, "H5Tget_class", api.Tget_class);
  ok &= resolve_one(handle, "H5Tget_size", api.Tget_size);
  ok &= resolve_one(handle, "H5Tget_sign", api.Tget_sign);
  ok &= resolve_one(handle, "H5Tget_order", api.Tget_order);
  ok &= resolve_one(handle, "H5Tget_fields", api.Tget_fields);
  ok &= resolve_one(handle, "H5Tget_ebias", api.Tget_ebias);
  ok &= resolve_one(handle, "H5Tis_variable_str", api.Tis_variable_str);
  ok &= resolve_one(handle, "H5Tdetect_class", api.Tdetect_class);
  ok &= resolve_one(handle, "H5Eregister_class", api.Eregister_class);
  ok &= resolve_one(handle, "H5Ecreate_msg", api.Ecreate_msg);
  ok &= resolve_one(handle, "H5Epush2", api.Epush2);
  ok &= resolve_one(handle, "H5allocate_memory", api.allocate_memory);
  ok &= resolve_one(handle, "H5free_memory", api.free_memory);
  ok &= resolve_one(handle, "H5resize_memory", api.resize_memory);
  decltype(&::H5get_libversion) get_libversion = nullptr;
  if (ok && resolve_one(handle, "H5get_libversion", get_libversion)) {
    get_libversion(&api.version_major, &api.version_minor, &api.version_release);
  }
  return ok;
}

// dlopen of an object that is already loaded; the handle is kept (never
// dlclosed) so the library cannot be unloaded under a cached table.
void* open_loaded(const char* path) {
  return dlopen(path != nullptr && path[0] != '\0' ? path : nullptr, RTLD_NOLOAD | RTLD_LAZY);
}

struct LoadedObject {
  std::string path;  // empty for the main program
  std::vector<std::pair<uintptr_t, uintptr_t>> segments;  // loaded address ranges

  bool contains(const void* address) const {
    const auto target = reinterpret_cast<uintptr_t>(address);
    for (const auto& [start, end] : segments) {
      if (target >= start && target < end) return true;
    }
    return false;
  }
};

// Only records names and ranges: calling dlopen while dl_iterate_phdr holds
// the loader's lock is not safe.
int list_object(dl_phdr_info* info, size_t, void* data) {
  auto* objects = static_cast<std::vector<LoadedObject>*>(data);
  LoadedObject object;
  object.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    object.segments.emplace_back(start, start + segment.p_memsz);
  }
  objects->push_back(std::move(object));
  return 0;
}

// Path (as dlopen takes it; empty = main program) of a loaded object that
// defines H5Pget_chunk, preferring the one that holds the caller (HDF5 linked
// statically into a program) over the first one found.
bool find_hdf5_object(const void* caller, std::string& path) {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(list_object, &objects);
  bool found = false;
  for (const LoadedObject& object : objects) {
    void* handle = open_loaded(object.path.c_str());
    if (handle == nullptr) continue;
    void* symbol = dlsym(handle, "H5Pget_chunk");
    dlclose(handle);
    // dlsym also searches the object's dependencies: keep the object that
    // actually defines the function.
    if (symbol == nullptr || !object.contains(symbol)) continue;
    if (!found || object.contains(caller)) {
      found = true;
      path = object.path;
    }
    if (object.contains(caller)) break;
  }
  return found;
}

Hdf5Api* bind(const void* caller, const char* caller_path) {
  auto api = std::make_unique<Hdf5Api>();
  void* handle = open_loaded(caller_path);
  if (handle != nullptr && resolve_all(handle, *api)) {
    api->library_path = caller_path != nullptr && caller_path[0] != '\0' ? caller_path : "(main program)";
  } else {
    if (handle != nullptr) dlclose(handle);
    std::string path;
    if (!find_hdf5_object(caller, path)) return nullptr;
    handle = open_loaded(path.c_str());
    if (handle == nullptr) return nullptr;
    if (!resolve_all(handle, *api)) {
      dlclose(handle);
      return nullptr;
    }
    api->library_path = path.empty() ? "(main program)" : path;
  }
  api->errors = new Hdf5Api::ErrorIds;
  return api.release();
}

}  // namespace

namespace {

// The slow lookup: dladdr (a linear walk over every loaded object and its
// symbol table: a third of all samples when h5py reads small chunks), then the
// registry keyed by the caller object's load address, binding on first use.
const Hdf5Api* lookup_or_bind(const void* caller, const void*& caller_base) {
  Dl_info where{};
  const char* caller_path = nullptr;
  caller_base = nullptr;
  if (dladdr(caller, &where) != 0) {
    caller_base = where.dli_fbase;
    caller_path = where.dli_fname;
  }
  Registry& tables = registry();
  std::lock_guard<std::mutex> lock(tables.mutex);
  for (const auto& [object, api] : tables.tables) {
    if (object == caller_base) return api;
  }
  Hdf5Api* api = nullptr;
  try {
    api = bind(caller, caller_path);
  } catch (...) {
    api = nullptr;  // out of memory while binding: report as "no HDF5"
  }
  // A failed binding is not cached: a later call may come from a library
  // loaded in the meantime.
  if (api != nullptr) tables.tables.emplace_back(caller_base, api);
  return api;
}

// The fast lookup: return address -> table. HDF5 calls the plugin from a
// handful of call sites per library (H5PL's loader, H5Z's can_apply/set_local
// and the pipeline), so a small table serves every chunk after the first.
//
// Why a bare return address is a safe key: an address is cached only after
// the object that contains it is pinned (dlopen RTLD_NOLOAD, handle never
// closed; checked to be that very object through its link_map). A pinned
// object is never unmapped, so nothing else can ever be loaded at that address
// and it keeps meaning the same call site of the same library for the life of
// the process; libhdf5 copies loaded later get other addresses, and miss. The
// libhdf5 a table points into is pinned anyway (bind keeps its handle), and in
// the usual case it is the caller's object itself; pinning the caller also
// covers the fallback where the caller is some other object (HDF5 linked into
// the program, found by dl_iterate_phdr). So no invalidation is needed, not
// even on H5close: a closed and reopened library keeps its functions, and the
// error class is registered again by Hdf5Api::report. Where the caller cannot
// be pinned (dlmopen namespaces, code outside any object) or the table is
// full, every call takes the slow path, as before this cache.
//
// Append-only, lock-free reads: slots are written under the registry mutex
// and published by the release store of `count`; a slot below the count a
// reader acquired is never written again.
class CallSiteCache {
 public:
  const Hdf5Api* find(const void* caller) const {
    const size_t n = count_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      if (slots_[i].caller == caller) return slots_[i].api;
    }
    return nullptr;
  }

  // Call with the registry mutex held.
  void insert(const void* caller, const Hdf5Api* api) {
    const size_t n = count_.load(std::memory_order_relaxed);
    if (n == kCapacity) return;
    for (size_t i = 0; i < n; ++i) {
      if (slots_[i].caller == caller) return;  // another thread was first
    }
    if (!pin_object_containing(caller)) return;
    slots_[n] = Slot{caller, api};
    count_.store(n + 1, std::memory_order_release);
  }

 private:
  static constexpr size_t kCapacity = 64;
  struct Slot {
    const void* caller = nullptr;
    const Hdf5Api* api = nullptr;
  };

  // Takes a reference on the loaded object containing `address` that is never
  // released. Only up to kCapacity times per process, so the count cannot grow
  // without bound.
  static bool pin_object_containing(const void* address) {
    Dl_info where{};
    link_map* object = nullptr;
    if (dladdr1(address, &where, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) == 0 || object == nullptr) {
      return false;
    }
    // l_name, not dli_fname: dladdr gives argv[0] for the main program,
    // dlopen wants nullptr (open_loaded maps "" to it).
    void* handle = open_loaded(object->l_name);
    if (handle == nullptr) return false;
    link_map* opened = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &opened) != 0 || opened != object) {
      dlclose(handle);  // another object of the same name (another namespace)
      return false;
    }
    return true;  // handle deliberately leaked
  }

  Slot slots_[kCapacity];
  std::atomic<size_t> count_{0};
};

CallSiteCache& call_sites() {
  static CallSiteCache* const instance = new CallSiteCache;  // never freed, like the tables
  return *instance;
}

}  // namespace

const Hdf5Api* hdf5_api_for(const void* caller) {
  CallSiteCache& cache = call_sites();
  if (const Hdf5Api* api = cache.find(caller)) return api;
  const void* caller_base = nullptr;
  const Hdf5Api* api = lookup_or_bind(caller, caller_base);
  if (api == nullptr || caller_base == nullptr) return api;
  try {
    std::lock_guard<std::mutex> lock(registry().mutex);
    cache.insert(caller, api);
  } catch (...) {
    // std::system_error from the mutex: the slow path keeps working
  }
  return api;
}

namespace {

void register_error_class(const Hdf5Api& api, Hdf5Api::ErrorIds& errors) {
  using Problem = Hdf5Api::Problem;
  errors.attempted = true;
  errors.error_class = api.Eregister_class("H5Z-FZ", "H5Z-FZ filter plugin", fz::version());
  if (errors.error_class < 0) return;
  errors.major = api.Ecreate_msg(errors.error_class, H5E_MAJOR, "H5Z-FZ filter");
  errors.minors[static_cast<int>(Problem::BadParameters)] =
      api.Ecreate_msg(errors.error_class, H5E_MINOR, "Invalid H5Z-FZ filter parameters");
  errors.minors[static_cast<int>(Problem::Compress)] =
      api.Ecreate_msg(errors.error_class, H5E_MINOR, "H5Z-FZ compression failed");
  errors.minors[static_cast<int>(Problem::Decompress)] =
      api.Ecreate_msg(errors.error_class, H5E_MINOR, "H5Z-FZ decompression failed");
  errors.minors[static_cast<int>(Problem::Hdf5Call)] =
      api.Ecreate_msg(errors.error_class, H5E_MINOR, "HDF5 call from H5Z-FZ failed");
}

bool push(const Hdf5Api& api, const Hdf5Api::ErrorIds& errors, Hdf5Api::Problem problem, const char* file,
          const char* function, int line, const std::string& text) {
  const hid_t minor = errors.minors[static_cast<int>(problem)];
  if (errors.error_class < 0 || errors.major < 0 || minor < 0) return false;
  return api.Epush2(H5E_DEFAULT, file, function, static_cast<unsigned>(line), errors.error_class, errors.major,
                    minor, "%s", text.c_str()) >= 0;
}

}  // namespace

void Hdf5Api::ensure_error_class() const {
  std::lock_guard<std::mutex> lock(errors->mutex);
  if (!errors->attempted) register_error_class(*this, *errors);
}

void Hdf5Api::report(Problem problem, const char* file, const char* function, int line,
                     const std::string& message) const {
  const std::string text = "H5Z-FZ: " + message;
  std::lock_guard<std::mutex> lock(errors->mutex);
  if (push(*this, *errors, problem, file, function, line, text)) return;
  // The ids die with H5close; a program that reopens the library (the plugin
  // stays loaded) needs them registered again.
  register_error_class(*this, *errors);
  if (push(*this, *errors, problem, file, function, line, text)) return;
  std::fprintf(stderr, "%s\n", text.c_str());
}

void Hdf5Api::report_from_filter(Problem problem, const char* file, const char* function, int line,
                                 const std::string& message) const {
  report(problem, file, function, line, message);
  if (!filter_errors_dropped()) return;
  static std::atomic<unsigned> printed{0};
  constexpr unsigned kMostPrinted = 50;
  const unsigned count = printed.fetch_add(1);
  if (count < kMostPrinted) std::fprintf(stderr, "H5Z-FZ: %s\n", message.c_str());
  if (count + 1 == kMostPrinted) std::fprintf(stderr, "H5Z-FZ: further failures are not printed\n");
}

}  // namespace fz::filter
