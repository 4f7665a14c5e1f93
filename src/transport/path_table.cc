#include "transport/path_table.h"

#include "transport/shm/shm_path_kind.h"
#include "transport/tcp/tcp_path_kind.h"

namespace weft::transport {

std::span<const PathKind> path_kinds() {
  static const PathKind kinds[] = {
      {"shm", open_shm_path},
      {"tcp", open_tcp_path},
  };
  return kinds;
}

}  // namespace weft::transport
