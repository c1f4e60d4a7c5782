"""The `netrun` console command of the package runs the CLI that sits beside its libnetrun."""
import os
import subprocess
import sys

from netrun import _cli


def test_cli_is_beside_the_library():
    assert os.access(_cli.cli_path(), os.X_OK), _cli.cli_path()


def test_console_entry_runs_the_cli(add_path):
    r = subprocess.run([sys.executable, "-m", "netrun._cli", "--backends"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cpu" in r.stdout
    r = subprocess.run([sys.executable, "-m", "netrun._cli", add_path, "--backend", "cpu", "--iterations", "2",
                        "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "netrun._cli", "--no-such-option"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2  # the CLI's own exit code comes back
