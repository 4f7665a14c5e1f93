#include "transport/ofi/ofi_library.h"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include "weft/error.h"

namespace weft::transport {

namespace {

std::atomic<const OfiLibrary*> loaded{nullptr};

template <typename Function>
void resolve(void* handle, const char* name, Function* out) {
  void* symbol = dlsym(handle, name);
  if (!symbol) {
    throw Error(ErrorCode::kSystem,
                std::string("ofi: libfabric.so.1 has no ") + name + " (libfabric 1.9 or newer?)");
  }
  *out = reinterpret_cast<Function>(symbol);
}

OfiLibrary load() {
  void* handle = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw Error(ErrorCode::kSystem, std::string("ofi: cannot load libfabric.so.1 (") +
                                        (why ? why : "?") +
                                        "): install libfabric (Debian: libfabric1)");
  }
  OfiLibrary library{};
  resolve(handle, "fi_getinfo", &library.getinfo);
  resolve(handle, "fi_freeinfo", &library.freeinfo);
  resolve(handle, "fi_dupinfo", &library.dupinfo);
  resolve(handle, "fi_fabric", &library.fabric);
  resolve(handle, "fi_strerror", &library.strerror);
  return library;  // the handle stays open for the process's life
}

}  // namespace

const OfiLibrary& ofi_library() {
  static const OfiLibrary library = load();  // a failed load throws, and is tried again
  loaded.store(&library, std::memory_order_release);
  return library;
}

const OfiLibrary* ofi_library_if_loaded() { return loaded.load(std::memory_order_acquire); }

}  // namespace weft::transport
