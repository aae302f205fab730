"""Build step of the h5fz package (pyproject.toml holds the metadata): the
plugin goes into the package, from H5FZ_PLUGIN (the .so, or the folder
holding it) or else the clone's build/plugin/libH5Zfz.so, when either
exists; otherwise the package is built without it and says so."""

import os
import shutil

from setuptools import setup
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


setup(cmdclass={"build_py": BuildWithPlugin})
