"""Builds the Python package `weft` for `pip install .`.

The pure-Python modules come from python/weft; the extension modules (weft._weft, and
weft._weft_torch where the interpreter has torch 1.x with its C++ headers) are built by the
project's own CMake build, configured for the interpreter pip runs, so that the package is
built exactly as the tests build it. Everything pip's build writes stays under
build/pip (the CMake tree, setuptools' staging and the egg-info).
"""

import pathlib
import re
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD_BASE = ROOT / "build" / "pip"


def weft_version():
    header = (ROOT / "include" / "weft" / "version.h").read_text()
    return re.search(r'#define WEFT_VERSION_STRING "([^"]+)"', header).group(1)


class CMakeExtension(Extension):
    """An extension module that is a target of the CMake build."""

    def __init__(self, name, target, optional=False):
        super().__init__(name, sources=[])
        self.target = target
        self.optional = optional


class CMakeBuild(build_ext):
    def build_extensions(self):
        cmake_dir = BUILD_BASE / "cmake"
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(cmake_dir), "-DCMAKE_BUILD_TYPE=Release",
             f"-DPython3_EXECUTABLE={sys.executable}", "-DWEFT_BUILD_TESTS=OFF",
             "-DWEFT_BUILD_EXAMPLES=OFF", "-DWEFT_BUILD_BENCHMARKS=OFF", "-DWEFT_BUILD_TOOLS=OFF"],
            check=True)
        targets = subprocess.run(["cmake", "--build", str(cmake_dir), "--target", "help"],
                                 check=True, capture_output=True, text=True).stdout
        for extension in self.extensions:
            if extension.optional and f" {extension.target}" not in targets:
                print(f"weft: {extension.name} not built (its requirements were not found)")
                continue
            subprocess.run(["cmake", "--build", str(cmake_dir), "--target", extension.target,
                            "-j", str(self.parallel or 2)], check=True)
            built = next((cmake_dir / "python" / "weft").glob(f"{extension.target}.*.so"))
            destination = pathlib.Path(self.get_ext_fullpath(extension.name))
            destination.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(built), str(destination))


BUILD_BASE.mkdir(parents=True, exist_ok=True)
setup(
    version=weft_version(),
    packages=["weft"],
    package_dir={"weft": "python/weft"},
    ext_modules=[CMakeExtension("weft._weft", "_weft"),
                 CMakeExtension("weft._weft_torch", "_weft_torch", optional=True)],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(BUILD_BASE / "setuptools")},
             "egg_info": {"egg_base": str(BUILD_BASE)}},
)
