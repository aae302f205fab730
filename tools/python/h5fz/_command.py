"""The `h5fz` console command of the installed wheel (pyproject.toml,
[project.scripts]): runs the h5fz program the wheel ships in h5fz/bin, which
finds the plugin beside it (h5fz/plugin). `h5fz compare` runs this same
interpreter (H5FZ_PYTHON), whose h5fz package is the installed one."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(_HERE, "bin", "h5fz")


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if not os.access(PROGRAM, os.X_OK):
        print("h5fz: this h5fz package has no h5fz program (%s): it was not installed from the wheel "
              "(pip install . from the repository builds it; a clone's build/tools/h5fz is the same program)"
              % PROGRAM, file=sys.stderr)
        return 1
    env = dict(os.environ)
    env.setdefault("H5FZ_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(PROGRAM, [PROGRAM] + args, env)
    except OSError as e:  # (execve returns only on failure)
        print("h5fz: cannot run %s: %s" % (PROGRAM, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
