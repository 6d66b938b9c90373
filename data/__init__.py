"""The bundled data `kernelindex serve` imports on first start (server/bootstrap.py says what each
folder holds). Installed as the package `kernelindex_data` (setup.py maps this folder to that name),
so a wheel carries it: the files listed under `package-data` in pyproject.toml, ~3.5 MB; the
controlled runs' raw samples, charts and logs stay in the repository."""

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent
