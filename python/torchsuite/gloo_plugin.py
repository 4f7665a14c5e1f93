"""torch's own gloo, registered as a third-party backend named "gloo_plugin".

``run_suite.py --backend gloo_plugin --plugin gloo_plugin --baseline <gloo report>`` runs the
tests gloo passes through the path every plugin takes (Backend.register_backend, a creator
called with _DistributedBackendOptions, devices=["cpu"], the same feature sets as weft). A test
that gloo passes under its own name but fails or skips here is one a plugin backend cannot
reach: the suite gates it on the backend's name, not on what the backend can do.
"""

import torch.distributed as dist
from torch.distributed import ProcessGroupGloo

BACKEND_NAME = "gloo_plugin"


def create(options, pg_options=None):
    """What distributed_c10d does for "gloo", for a plugin's creator (extended_api=True)."""
    backend = ProcessGroupGloo(options.store, options.group_rank, options.group_size,
                               timeout=options.timeout)
    backend.options.global_ranks_in_group = options.global_ranks_in_group
    backend.options.group_name = options.group_id
    backend._set_sequence_number_for_group()
    return backend


if not hasattr(dist.Backend, BACKEND_NAME.upper()):
    dist.Backend.register_backend(BACKEND_NAME, create, extended_api=True, devices=["cpu"])
