"""The `netrun` console command: runs the netrun CLI that the package carries (bin/ beside its lib/)."""
from __future__ import annotations

import os
import sys


def cli_path() -> str:
    from . import _capi
    lib_dir = os.path.dirname(os.path.realpath(_capi.LIBRARY_PATH))
    return os.path.join(os.path.dirname(lib_dir), "bin", "netrun")


def main() -> None:
    exe = cli_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"netrun: the CLI is not where the package expects it ({exe})\n")
        sys.exit(127)
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
