"""torch's own gloo, registered as a third-party backend named "gloo_plugin".

``run_suite.py --backend gloo_plugin --plugin gloo_plugin --baseline <gloo report>`` runs the
tests gloo passes through the path every plugin takes (Backend.register_backend, a creator
called with _DistributedBackendOptions, devices=["cpu"] on torch 2.x, the same feature sets as
weft). A test that gloo passes under its own name but fails or skips here is one a plugin
backend cannot reach: the suite gates it on the backend's name, not on what the backend can do.
Works on torch 2.x and on torch 1.13, whose register_backend has no ``devices``.
"""

import inspect

import torch.distributed as dist
from torch.distributed import ProcessGroupGloo

BACKEND_NAME = "gloo_plugin"
# torch 2.x registers a backend for devices; 1.13 has one ProcessGroup for every device.
_DEVICES = "devices" in inspect.signature(dist.Backend.register_backend).parameters


def create(options, pg_options=None):
    """What distributed_c10d does for "gloo", for a plugin's creator (extended_api=True)."""
    backend = ProcessGroupGloo(options.store, options.group_rank, options.group_size,
                               timeout=options.timeout)
    if _DEVICES:  # 1.13's ProcessGroupGloo.Options has neither
        backend.options.global_ranks_in_group = options.global_ranks_in_group
        backend.options.group_name = options.group_id
    backend._set_sequence_number_for_group()
    return backend


if not hasattr(dist.Backend, BACKEND_NAME.upper()):
    dist.Backend.register_backend(BACKEND_NAME, create, extended_api=True,
                                  **({"devices": ["cpu"]} if _DEVICES else {}))
