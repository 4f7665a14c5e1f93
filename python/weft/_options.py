"""torch.distributed's option classes and debug level, for weft.distributed.

The *Options classes are plain classes with torch's attribute names and defaults (torch 1.13's,
plus torch 2.x's asyncOp and BarrierOptions.device), so that code that builds them runs
unchanged; weft's module functions take their arguments directly and do not read them.

DebugLevel and get/set_debug_level follow torch: the level starts from TORCH_DISTRIBUTED_DEBUG
(OFF, INFO or DETAIL) when weft.distributed is imported. weft always checks what torch's DETAIL
adds (that ranks call matching collectives: a MismatchError says what each side called), so the
level is recorded and reported only.
"""

import datetime as _datetime
import enum as _enum
import os as _os

from ._weft import ReduceOp

# torch's options carry -1 ms when no per-operation timeout is set (kUnsetTimeout).
_UNSET_TIMEOUT = _datetime.timedelta(milliseconds=-1)


class _Options:
    __slots__ = ()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class AllreduceOptions(_Options):
    __slots__ = ("reduceOp", "timeout", "asyncOp")

    def __init__(self):
        self.reduceOp = ReduceOp.SUM
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class AllreduceCoalescedOptions(AllreduceOptions):
    __slots__ = ()


class ReduceOptions(_Options):
    __slots__ = ("reduceOp", "rootRank", "rootTensor", "timeout", "asyncOp")

    def __init__(self):
        self.reduceOp = ReduceOp.SUM
        self.rootRank = 0
        self.rootTensor = 0
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class BroadcastOptions(_Options):
    __slots__ = ("rootRank", "rootTensor", "timeout", "asyncOp")

    def __init__(self):
        self.rootRank = 0
        self.rootTensor = 0
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class GatherOptions(_Options):
    __slots__ = ("rootRank", "timeout", "asyncOp")

    def __init__(self):
        self.rootRank = 0
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class ScatterOptions(GatherOptions):
    __slots__ = ()


class ReduceScatterOptions(_Options):
    __slots__ = ("reduceOp", "timeout", "asyncOp")

    def __init__(self):
        self.reduceOp = ReduceOp.SUM
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class AllToAllOptions(_Options):
    __slots__ = ("timeout", "asyncOp")

    def __init__(self):
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class BarrierOptions(_Options):
    __slots__ = ("device_ids", "device", "timeout", "asyncOp")

    def __init__(self):
        self.device_ids = []
        self.device = None
        self.timeout = _UNSET_TIMEOUT
        self.asyncOp = True


class DebugLevel(_enum.IntEnum):
    """torch.distributed.DebugLevel: OFF, INFO, DETAIL (TORCH_DISTRIBUTED_DEBUG)."""
    OFF = 0
    INFO = 1
    DETAIL = 2

    def __str__(self):
        return f"DebugLevel.{self.name}"


_debug_level = DebugLevel.OFF


def get_debug_level():
    """The debug level: set_debug_level's, else TORCH_DISTRIBUTED_DEBUG's at import (OFF)."""
    return _debug_level


def set_debug_level(level):
    """Sets the debug level (a DebugLevel, or its value)."""
    global _debug_level
    _debug_level = DebugLevel(level)


def set_debug_level_from_env():
    """Sets the debug level from TORCH_DISTRIBUTED_DEBUG (OFF, INFO or DETAIL, any case;
    unset: OFF). Another value raises RuntimeError, as torch."""
    value = _os.environ.get("TORCH_DISTRIBUTED_DEBUG")
    if value is None:
        set_debug_level(DebugLevel.OFF)
        return
    try:
        set_debug_level(DebugLevel[value.strip().upper()])
    except KeyError:
        raise RuntimeError(f"The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL "
                           f"(not {value!r}).") from None
