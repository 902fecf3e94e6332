"""`pip install ./python`: the mixc package built against the PyTorch of the
interpreter that runs pip (a virtual environment's torch 2.x, with or
without CUDA), by CMake on this repository.

    python -m pip install --no-build-isolation ./python   # uses the torch already installed

The extension links that torch's LibTorch (Torch_DIR from
torch.utils.cmake_prefix_path) and is built for this interpreter. With MLIR
16 (Debian's llvm-16/mlir-16 packages) and a torch built with the C++11 ABI
it is the full module; otherwise, or with MIXC_WITH_COMPILER=OFF in the
environment, the runtime-only one: it opens runs and bundles (load, task,
intervene with the scripts compiled into a bundle, hooks, caches) and refuses
compile() with the way round it. Environment: MIXC_BUILD_DIR (default
build/python-<torch version>, kept between installs), MIXC_JOBS (parallel
compile jobs), MIXC_WITH_COMPILER (ON/OFF); a build folder configured before
(e.g. the repository's build/) keeps its own settings.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MLIR_DIR = "/usr/lib/llvm-16/lib/cmake/mlir"


def with_compiler(torch):
    """ON where MLIR 16 is installed and torch uses the C++11 ABI (LLVM's
    and LibTorch's std::string must agree); the environment may say OFF."""
    wanted = os.environ.get("MIXC_WITH_COMPILER", "").upper()
    if wanted in ("ON", "OFF"):
        return wanted
    abi = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)
    return "ON" if os.path.isdir(MLIR_DIR) and abi else "OFF"


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch  # the torch this package is for

        build = os.environ.get("MIXC_BUILD_DIR") or os.path.join(ROOT, "build", "python-" + torch.__version__)
        configure = ["cmake", "-S", ROOT, "-B", build]
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):  # a folder configured before keeps its settings
            configure += ["-DCMAKE_BUILD_TYPE=Release", "-DPython3_EXECUTABLE=" + sys.executable,
                          "-DMIXC_WITH_COMPILER=" + with_compiler(torch)]
            torch_dir = os.path.join(torch.utils.cmake_prefix_path, "Torch")
            if os.path.isdir(torch_dir):  # a pip torch; Debian's is found by CMake itself
                configure.append("-DTorch_DIR=" + torch_dir)
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("MIXC_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", build, "--target", "_mixc", "--parallel", jobs], check=True)
        built = os.path.join(build, "python", "mixc")
        (name,) = [f for f in os.listdir(built) if f.startswith("_mixc") and f.endswith(".so")]
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, name), target)


setup(
    name="mixc",
    version="0.1",
    description="mixc from Python: mixer specs compiled, trained runs opened, hooks, caches and interventions",
    packages=["mixc"],
    ext_modules=[Extension("mixc._mixc", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
