# Lit configuration: dialect/pass tests (mix-opt), front-end and driver tests (mixc).
import os
import lit.formats

config.name = "mixc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".mix", ".test"]
config.excludes = ["Inputs", "golden", "corpus", "regressions", "unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mixc_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%mix-opt", config.mix_opt))
config.substitutions.append(("%mixc", config.mixc))
config.substitutions.append(("%stdlib", os.path.join(config.mixc_src_root, "stdlib")))
config.substitutions.append(("FileCheck", os.path.join(config.llvm_tools_dir, "FileCheck")))
# Generated kernels (--backend=generated) are cached in the build tree
# (MIXC_TEST_KERNEL_CACHE in test/CMakeLists.txt).
config.environment["MIXC_KERNEL_CACHE"] = config.kernel_cache


def can_mount_tmpfs():
    """Whether a private mount namespace with a tmpfs can be made here (the
    full-disk tests): root or unprivileged user namespaces, and a kernel and
    container that allow it."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        try:
            return subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


if can_mount_tmpfs():
    config.available_features.add("tmpfs")
