#include "coll/barrier/dissemination_barrier.h"

namespace weft::coll {

void dissemination_barrier(CollectiveCall& call) {
  const int p = call.size(), rank = call.rank();
  uint32_t step = 0;
  for (long long distance = 1; distance < p; distance <<= 1, ++step) {
    const int d = static_cast<int>(distance);
    call.send_recv((rank + d) % p, step, nullptr, 0, (rank - d + p) % p, nullptr, 0);
  }
}

}  // namespace weft::coll
