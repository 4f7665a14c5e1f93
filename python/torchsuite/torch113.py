"""What Debian's torch 1.13 (python3-torch, for /usr/bin/python3) lacks to run its own suite.

run_suite.py calls ``prepare()`` in the runner and in every rank, before anything imports
``torch.testing._internal``, when the installed torch is 1.x. Two things are missing, and both are
made up for in memory; no installed file is changed:

* ``expecttest``, the suite's one PyPI requirement, is not packaged in Debian.
  ``common_utils`` derives its ``TestCase`` from ``expecttest.TestCase`` and reads and sets
  ``expecttest.ACCEPT``; the distributed suite never asserts an inline expectation. When the
  package is not installed, a module with those two names stands in for it.
* ``torch.distributed._shard`` cannot be imported on Python 3.11: ``ShardedTensorMetadata``
  declares ``field(default=TensorProperties())``, a mutable dataclass default, which 3.11
  refuses (torch 2.0 changed it to ``default_factory``). ``MultiProcessTestCase._run`` turns on
  DDP with ReplicatedTensor in every rank, which imports ``_shard``, so without the change every
  DistributedDataParallel test errors. That one module is compiled from its source with the
  2.0 line instead.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import unittest

SHARD_METADATA = "torch.distributed._shard.sharded_tensor.metadata"
MUTABLE_DEFAULT = b"field(default=TensorProperties())"
FACTORY_DEFAULT = b"field(default_factory=TensorProperties)"


def prepare():
    """Idempotent: the bootstrap runs once in the runner and once in every rank."""
    _stand_in_for_expecttest()
    if sys.version_info >= (3, 11) and not any(
            isinstance(finder, _ShardMetadataFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ShardMetadataFinder())


def _stand_in_for_expecttest():
    try:
        import expecttest  # noqa: F401
        return
    except ImportError:
        pass

    class TestCase(unittest.TestCase):
        """expecttest.TestCase without rewriting the test file (ACCEPT stays False)."""

        def assertExpectedInline(self, actual, expect, skip=0):
            self.assertMultiLineEqual(expect, actual)

        def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
            with self.assertRaises(exc_type) as caught:
                callable(*args, **kwargs)
            self.assertExpectedInline(str(caught.exception), expect)

    module = types.ModuleType("expecttest", "Stand-in for PyPI's expecttest (torchsuite).")
    module.ACCEPT = False
    module.TestCase = TestCase
    TestCase.__module__ = module.__name__
    sys.modules[module.__name__] = module


class _ShardMetadataFinder(importlib.abc.MetaPathFinder):
    """Finds the one module and hands it to _FixedSourceLoader; declines every other."""

    def find_spec(self, name, path, target=None):
        if name != SHARD_METADATA:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin:
            return spec
        return importlib.util.spec_from_file_location(
            name, spec.origin, loader=_FixedSourceLoader(name, spec.origin))


class _FixedSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the source with the default_factory line, never the cached bytecode."""

    def get_code(self, fullname):
        source = self.get_data(self.path).replace(MUTABLE_DEFAULT, FACTORY_DEFAULT)
        return compile(source, self.path, "exec", dont_inherit=True)
