"""The ExecutionEnvironment of this machine (GPU product and architecture identify the group)."""

from __future__ import annotations

import platform
import re
import subprocess
import sys

from registry.manifests import Manifest, make_manifest


def _nvidia_smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.strip().splitlines()[0].strip()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_spec(device: str) -> dict:
    import torch

    libraries = {"torch": torch.__version__, "python": sys.version.split()[0]}
    try:
        import triton

        libraries["triton"] = triton.__version__
    except Exception:
        pass
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        major, minor = torch.cuda.get_device_capability(0)
        hardware = {
            "vendor": "nvidia",
            "product": torch.cuda.get_device_name(0),
            "architecture": f"sm_{major}{minor}",
            "count": 1,
            "memoryBytes": int(props.total_memory),
        }
        software = {"cuda": torch.version.cuda, "os": platform.platform(), "libraries": libraries}
        driver = _nvidia_smi("driver_version")
        if driver:
            software["driver"] = driver
        if torch.backends.cudnn.is_available():
            libraries["cudnn"] = str(torch.backends.cudnn.version())
    else:
        model = _cpu_model()
        vendor = "intel" if "Intel" in model else ("amd" if "AMD" in model else "cpu")
        hardware = {"vendor": vendor, "product": model, "architecture": platform.machine(), "count": 1}
        software = {"os": platform.platform(), "libraries": libraries}
    return {"hardware": hardware, "software": software}


def environment_manifest(device: str) -> Manifest:
    spec = environment_spec(device)
    slug = re.sub(r"[^a-z0-9]+", "-", spec["hardware"]["product"].lower()).strip("-")[:60] or "machine"
    return make_manifest(
        "ExecutionEnvironment", f"env-{slug}", spec, title=f"{spec['hardware']['product']} ({spec['hardware']['architecture']})"
    )
