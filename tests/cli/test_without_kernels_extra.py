"""Without the kernels extra (no torch, no numpy), `bench` and `runner` say what is missing in
one line instead of a traceback. The installed entry point runs in an environment built from
this venv's own packages minus torch and numpy (their files are simply not there), with `-S`
so that the venv's site-packages is not added back."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.command import KERNELINDEX

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = ("torch", "functorch", "torchgen", "numpy")


def _without_torch(tmp_path: Path) -> dict:
    site = Path(sysconfig.get_paths()["purelib"])
    lib = tmp_path / "site-packages"
    lib.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(LEFT_OUT):
            (lib / entry.name).symlink_to(entry)
    return {"PATH": os.environ["PATH"], "PYTHONPATH": f"{REPO}{os.pathsep}{lib}", "HOME": str(tmp_path)}


def test_bench_and_runner_name_the_kernels_extra(tmp_path):
    env = _without_torch(tmp_path)
    probe = subprocess.run([sys.executable, "-S", "-c", "import torch"], env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 1 and "No module named 'torch'" in probe.stderr  # the environment is what it claims
    for argv in (["bench", "051", "--device", "cpu", "--cases", "small", "--out", str(tmp_path / "out")], ["runner", "--devices"]):
        done = subprocess.run([sys.executable, "-S", KERNELINDEX, *argv], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        # One line, and its hint installs the CPU build of torch (not PyPI's CUDA one) on a CPU host.
        assert done.stderr.strip() == (
            f"error: kernelindex {argv[0]} needs the kernels extra: no module named torch; install it with `make kernels` in the "
            "repository (the CPU build of torch where there is no GPU), or `pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu` then `pip install numpy matplotlib` (on a GPU host: `pip install torch numpy matplotlib`)"
        )
    help_text = subprocess.run([sys.executable, "-S", KERNELINDEX, "bench", "-h"], env=env, capture_output=True, text=True, timeout=120)
    assert help_text.returncode == 0 and "--device" in help_text.stdout  # -h needs no torch
