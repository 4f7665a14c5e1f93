#include "coll/shm/shm_collectives.h"

namespace weft::coll {

void shm_barrier(CollectiveCall& call) {
  if (call.size() > 1) call.finish_round();
}

}  // namespace weft::coll
