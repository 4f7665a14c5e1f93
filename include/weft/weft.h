// weft: collective communication between CPU processes. The one header to include.
#pragma once

#include "weft/buffer.h"
#include "weft/dtype.h"
#include "weft/error.h"
#include "weft/file_store.h"
#include "weft/init.h"
#include "weft/log.h"
#include "weft/memory_store.h"
#include "weft/p2p_op.h"
#include "weft/prefix_store.h"
#include "weft/process_group.h"
#include "weft/store.h"
#include "weft/tcp_store.h"
#include "weft/tcp_store_server.h"
#include "weft/version.h"
#include "weft/work.h"
