// libfabric, loaded when the ofi path is first opened rather than linked in.
//
// Why: a program that never opens the ofi path should neither need libfabric installed nor
// load what libfabric loads. Debian's libfabric pulls in libpsm_infinipath, whose load installs
// handlers for SIGINT, SIGTERM, SIGSEGV and more, which would take Ctrl-C from every program
// linking weft (a Python rank interrupted in a blocked call would exit instead of raising
// KeyboardInterrupt). Only the functions libfabric exports are reached through here; the rest
// of its API is inline calls through the objects' operation tables.
//
// Thread-safety: loaded once, under a static's initialisation; the functions are libfabric's.
#pragma once

#include <rdma/fabric.h>

namespace weft::transport {

struct OfiLibrary {
  decltype(&::fi_getinfo) getinfo;
  decltype(&::fi_freeinfo) freeinfo;
  decltype(&::fi_dupinfo) dupinfo;
  decltype(&::fi_fabric) fabric;
  decltype(&::fi_strerror) strerror;
};

// Loads libfabric.so.1 the first time; throws weft::Error(kSystem) saying why it cannot.
const OfiLibrary& ofi_library();
// Null until ofi_library() has loaded it.
const OfiLibrary* ofi_library_if_loaded();

}  // namespace weft::transport
