"""Which GPUs an implementation can run on.

An implementation declares the architectures it supports as patterns over the architecture names
an ExecutionEnvironment records ("sm_90", "sm_100", ...): "sm_90" (built for sm_90a: H100, H200),
"sm_*" (any NVIDIA GPU), "*" (any device its code runs on). A GPU product name maps to one
architecture; a product we do not know maps to none, and only "*" / "sm_*" then match it.

ImplementationRevisions published before architectures were declared carry none; their code says
what they are: every CUDA implementation of that time was built for sm_90a only, and the Python
ones run wherever torch does (LEGACY).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

# Product name (as torch.cuda.get_device_name / nvidia-smi print it) -> architecture. Matched by
# prefix, longest first ("NVIDIA H100 80GB HBM3" is an H100).
GPU_ARCHITECTURES: dict[str, str] = {
    "NVIDIA A100": "sm_80",
    "NVIDIA A10": "sm_86",
    "NVIDIA L4": "sm_89",
    "NVIDIA L40": "sm_89",
    "NVIDIA H100": "sm_90",
    "NVIDIA H200": "sm_90",
    "NVIDIA H800": "sm_90",
    "NVIDIA GH200": "sm_90",
    "NVIDIA B200": "sm_100",
    "NVIDIA GB200": "sm_100",
    "NVIDIA B300": "sm_103",
    "NVIDIA GB300": "sm_103",
    "NVIDIA RTX PRO 6000 Blackwell": "sm_120",
    "NVIDIA GeForce RTX 5090": "sm_120",
    "NVIDIA GeForce RTX 5080": "sm_120",
}
ANY = "*"
ANY_NVIDIA = "sm_*"


def legacy_architectures(language: str | None) -> tuple[str, ...]:
    """What a revision without declared architectures supports (see the module docstring)."""
    return ("sm_90",) if language == "cuda" else (ANY,)


def architecture_of(gpu: str) -> str | None:
    """The architecture of a GPU product; "cpu" for a device that is not an NVIDIA GPU (the CPU
    harness mode names a CPU model); None for an NVIDIA product not in GPU_ARCHITECTURES."""
    name = " ".join(gpu.split())
    if not name.upper().startswith("NVIDIA"):
        return "cpu"
    for product in sorted(GPU_ARCHITECTURES, key=len, reverse=True):
        if name == product or name.startswith(product + " ") or name.startswith(product + "-"):
            return GPU_ARCHITECTURES[product]
    return None


def supports(architectures: tuple[str, ...] | list[str], gpu: str) -> bool:
    arch = architecture_of(gpu)
    for pattern in architectures:
        if pattern == ANY or (pattern == ANY_NVIDIA and arch != "cpu"):
            return True
        if arch is not None and arch != "cpu" and fnmatchcase(arch, pattern):
            return True
    return False


# The v1alpha1 format names architectures without wildcards: ours write "*" as `any` and "sm_*"
# as `sm_any` (registry/controlled_format.py).
FORMAT_NAMES = {ANY: "any", ANY_NVIDIA: "sm_any"}


def declared(spec: dict[str, Any]) -> tuple[str, ...]:
    """The architectures of a stored ImplementationRevision spec (JSON), legacy rule included.
    Imported revisions (no code of ours) declare none: we cannot run them."""
    support = spec.get("support")
    if support is not None:  # the v1alpha1 format
        back = {name: pattern for pattern, name in FORMAT_NAMES.items()}
        return tuple(back.get(a, a) for a in support.get("hardwareArchitectures") or ())
    if spec.get("architectures"):
        return tuple(spec["architectures"])
    code = spec.get("code") or {}
    if not code.get("digest"):
        return ()
    return legacy_architectures(code.get("language"))


def refusal(name: str, architectures: tuple[str, ...] | list[str], gpu: str) -> str:
    """The message of an UNSUPPORTED_GPU refusal: what the GPU is and what the code supports."""
    arch = architecture_of(gpu)
    what = f"{gpu} ({arch})" if arch else f"{gpu} (an architecture this registry does not know)"
    return f"{name} does not run on {what}; it supports {', '.join(architectures) or 'no GPU'}"
