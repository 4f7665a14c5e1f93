// The shared-memory row of the table of path kinds (path_table.h): a ShmPath for the ranks of
// this host, unless WEFT_TRANSPORT is tcp or ofi, the job has one rank, or the kernel refuses. Its
// card is the rank's mailbox (MailboxAddress's text); only the cards of this host's ranks are used.
#pragma once

#include "transport/path_table.h"

namespace weft::transport {

OpenedPath open_shm_path(const PathSetup& setup);

}  // namespace weft::transport
