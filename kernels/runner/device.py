"""What this host can run: its devices, detected (never taken on trust from a flag), and the one
check a job must pass before it is claimed or executed ("may I run this job here?")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    kind: str  # "cuda" or "cpu": the harness device
    product: str  # what jobs name in `gpu`: "NVIDIA H200", or the CPU model for the CPU protocol


def host_devices() -> list[Device]:
    """The CUDA device (if a driver and one device answer) first, then the CPU."""
    import torch

    from kernels.harness.environment import environment_spec

    devices = []
    try:
        if torch.cuda.is_available():
            devices.append(Device("cuda", torch.cuda.get_device_name(0)))
    except RuntimeError:  # a broken driver counts as no device
        pass
    devices.append(Device("cpu", environment_spec("cpu")["hardware"]["product"]))
    return devices


def device_for(product: str, devices: list[Device]) -> Device | None:
    return next((d for d in devices if d.product == product), None)


def refusal(job: dict, devices: list[Device]) -> str | None:
    """Why this host must not run `job` (a one-line reason), or None when it may."""
    why_not = unsupported_gpu(job)
    if why_not is None and device_for(job.get("gpu", ""), devices) is None:
        have = ", ".join(d.product for d in devices)
        why_not = f"the job asks for {job.get('gpu')!r}; this host has {have}"
    return why_not


def unsupported_gpu(job: dict) -> str | None:
    """UNSUPPORTED_GPU when this runner's registry entry of the job's implementation is not built
    for the job's GPU (the registry refuses such requests; an older job may still ask)."""
    from kernels.implementations import IMPLEMENTATIONS
    from registry.architectures import refusal as arch_refusal
    from registry.architectures import supports

    name = (job.get("implementation") or {}).get("name")
    impl = next((i for i in IMPLEMENTATIONS.values() if i.manifest_name() == name), None)
    if impl is None or supports(impl.architectures, job.get("gpu", "")):
        return None  # an unknown implementation is execute_job's refusal
    return "UNSUPPORTED_GPU: " + arch_refusal(name, impl.architectures, job["gpu"])
