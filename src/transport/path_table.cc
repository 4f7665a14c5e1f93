#include "transport/path_table.h"

#include "transport/shm/shm_path_kind.h"
#include "transport/tcp/tcp_path_kind.h"
#ifdef WEFT_HAVE_OFI
#include "transport/ofi/ofi_path_kind.h"
#endif

namespace weft::transport {

std::span<const PathKind> path_kinds() {
  static const PathKind kinds[] = {
      {"shm", open_shm_path},
#ifdef WEFT_HAVE_OFI
      {"ofi", open_ofi_path},
#endif
      {"tcp", open_tcp_path},
  };
  return kinds;
}

}  // namespace weft::transport
