"""Build step of the h5fz package (pyproject.toml holds the metadata): the
plugin goes into the package, from H5FZ_PLUGIN (the .so, or the folder
holding it) or else the clone's build/plugin/libH5Zfz.so, when either
exists; otherwise the package is built without it and says so.

A wheel that ships the plugin (a native library for this machine) is a
platform wheel, py3-none-<platform> (e.g. linux_x86_64): pip must not install
it on another platform. Any Python 3 takes it (the plugin is no extension
module). Without the plugin the wheel stays py3-none-any."""

import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN_FILE = "libH5Zfz.so"


def find_plugin():
    given = os.environ.get("H5FZ_PLUGIN")
    if given:
        path = os.path.join(given, PLUGIN_FILE) if os.path.isdir(given) else given
        if not os.path.isfile(path):
            raise SystemExit("h5fz setup: H5FZ_PLUGIN=%s holds no %s" % (given, PLUGIN_FILE))
        return path
    path = os.path.join(HERE, "..", "..", "build", "plugin", PLUGIN_FILE)
    return path if os.path.isfile(path) else None


class BuildWithPlugin(build_py):
    def run(self):
        super().run()
        plugin = find_plugin()
        target = os.path.join(self.build_lib, "h5fz", "plugin")
        if plugin is None:
            print("h5fz setup: no built plugin found (build/plugin/%s or H5FZ_PLUGIN): the package will look "
                  "for it on HDF5_PLUGIN_PATH" % PLUGIN_FILE)
            return
        os.makedirs(target, exist_ok=True)
        shutil.copy2(plugin, os.path.join(target, PLUGIN_FILE))
        print("h5fz setup: shipping %s" % os.path.abspath(plugin))


try:  # setuptools >= 70.1 has the command; older ones take wheel's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # wheel's own note that setuptools >= 70.1 has it
        from wheel.bdist_wheel import bdist_wheel


class PlatformDistribution(Distribution):
    """Native content (the plugin) without extension modules: the package
    installs into platlib and the wheel is not pure."""

    def has_ext_modules(self):
        return find_plugin() is not None


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = find_plugin() is None

    def get_tag(self):
        python, abi, platform = super().get_tag()
        return (python, abi, platform) if self.root_is_pure else ("py3", "none", platform)


setup(distclass=PlatformDistribution, cmdclass={"build_py": BuildWithPlugin, "bdist_wheel": PlatformWheel})
