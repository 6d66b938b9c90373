"""The implementations the harness (and later the runner) may execute, by name.

Each one maps a name to callables (loaded lazily: importing this module needs no torch) and to an
ImplementationRevision manifest whose spec.code.digest is the sha256 digest of its source files
(registry/code.py). A new revision's manifest also names the commit holding those files, with the
paths and variant needed to recompute the digest from git; revisions published before that keep
their manifests, and their commits are pinned in data/code-pins.json.
Only code registered here is ever executed; nothing that comes from the API is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernels.source_commit import source_commit
from registry.code import REPOSITORY, code_digest
from registry.manifests import Manifest, make_manifest

REPO_ROOT = Path(__file__).resolve().parent.parent
OP_DIR = "kernels/ops/qkv_qknorm_backward"


@dataclass(frozen=True)
class Implementation:
    name: str  # registry key: "reference", "compile", "ext", ...
    operation: str  # operation key: "051"
    title: str
    language: str
    entry_point: str  # "module:function"
    sources: tuple[str, ...]  # repository-relative paths the digest covers
    devices: tuple[str, ...]
    architectures: tuple[str, ...]  # registry/architectures.py: "sm_90", "sm_100", "sm_*", "*"
    variant: dict[str, Any] = field(default_factory=dict)  # e.g. wrapper or mode; in the digest
    out_entry_point: str | None = None  # destination-passing variant, if any
    description: str = ""

    # ---------------------------------------------------------------- identity
    def code_digest(self) -> str:
        files = {rel: (REPO_ROOT / rel).read_bytes() for rel in self.sources}
        return code_digest(files, self.entry_point, self.variant)

    def code_reference(self) -> dict[str, Any]:
        digest = self.code_digest()
        code = {"repository": REPOSITORY, "path": OP_DIR, "entryPoint": self.entry_point, "digest": digest, "language": self.language}
        if digest in PUBLISHED_WITHOUT_COMMIT:
            return code  # its published manifest, unchanged (the commit is in data/code-pins.json)
        commit = source_commit(self.sources)
        return {**code, "paths": list(self.sources), "variant": self.variant, **({"commit": commit} if commit else {})}

    def manifest_name(self) -> str:
        return f"kernelindex-{self.operation}-{self.name}"

    def manifest(self, definition_digest: str) -> Manifest:
        digest = self.code_digest()
        # Revisions published before architectures existed keep their manifests: for them the
        # legacy rule of registry/architectures.py says the same (a test checks).
        declared = {} if digest in PUBLISHED_WITHOUT_COMMIT else {"architectures": list(self.architectures)}
        return make_manifest(
            "ImplementationRevision",
            self.manifest_name(),
            {
                **declared,
                "name": self.manifest_name(),
                "project": "kernelindex",
                "revision": "v1+" + digest.split(":")[1][:12],
                "definitionDigest": definition_digest,
                "code": self.code_reference(),
            },
            title=self.title,
            annotations={"description": self.description} if self.description else {},
        )

    # ---------------------------------------------------------------- execution
    def load(self) -> Callable[..., tuple]:
        """fn(**inputs) -> outputs tuple (definition order)."""
        fn = _resolve(self.entry_point)
        if self.variant.get("wrapper") == "torch.compile":
            return fn()
        if "mode" in self.variant:
            mode = self.variant["mode"]
            return lambda **inputs: fn(mode=mode, **inputs)
        return fn

    def load_out(self) -> Callable[..., None] | None:
        """fn(outputs, **inputs) -> None, or None when there is no destination-passing variant."""
        if self.out_entry_point is None:
            return None
        fn = _resolve(self.out_entry_point)
        if "mode" in self.variant:
            mode = self.variant["mode"]
            return lambda outputs, **inputs: fn(outputs, mode=mode, **inputs)
        return fn

    def prepare(self) -> None:
        """Build ahead of timing: an extension module's load() (torch.compile compiles on first call)."""
        module = importlib.import_module(self.entry_point.partition(":")[0])
        if self.language == "cuda" and hasattr(module, "load"):
            module.load()


def _resolve(entry_point: str) -> Callable:
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


# Code digests of current revisions published before manifests named a commit: their manifests
# stay byte for byte what was published (so are their digests, which runs and jobs reference).
PUBLISHED_WITHOUT_COMMIT = frozenset(
    {
        "sha256:5fdf6b1b791fc9276300c6b4fe6f53254c46098098094c2e1376dea4f2f29d54",  # reference
        "sha256:a3531c71d52753b0acd4166bf404cf0ff8a1f975dc3609e4c0f700839d92e448",  # compile
    }
)

_REF_SOURCES = (f"{OP_DIR}/definition.py", f"{OP_DIR}/reference.py")
_CSRC = f"{OP_DIR}/csrc"
# Everything ext-streamnorm builds or imports (its NvccLibrary's files and the Python around them).
_EXT_STREAMNORM_SOURCES = (
    f"{OP_DIR}/definition.py",
    f"{OP_DIR}/checks.py",
    f"{OP_DIR}/nvcc_library.py",
    f"{OP_DIR}/ext_streamnorm.py",
    *(
        f"{_CSRC}/{name}"
        for name in (
            "ext_streamnorm.cu",
            "stream_norm_sm90.cu",
            "stream_norm.h",
            "cluster_gemm_sm90.cu",
            "cluster_gemm.h",
            "common/ptx.cuh",
            "common/sm90.cuh",
            "common/tensor_map.cuh",
            "common/pipeline.cuh",
            "common/epilogue.cuh",
            "common/launch.cuh",
        )
    ),
)

# ext-portable: its norm kernel (any-GPU headers only) and the Python that calls cuBLAS through torch.
_EXT_PORTABLE_SOURCES = (
    f"{OP_DIR}/definition.py",
    f"{OP_DIR}/checks.py",
    f"{OP_DIR}/nvcc_library.py",
    f"{OP_DIR}/ext_portable.py",
    *(f"{_CSRC}/{name}" for name in ("portable_norm.cu", "common/ptx.cuh", "common/launch.cuh")),
)
_PORTABLE_ARCHITECTURES = ("sm_90", "sm_100", "sm_120")  # ext_portable.ARCHITECTURES (a test checks)
# ext-hybrid dispatches per token count between ext-streamnorm and ext-portable (both unchanged).
_EXT_HYBRID_SOURCES = (*_EXT_STREAMNORM_SOURCES, f"{OP_DIR}/ext_portable.py", f"{_CSRC}/portable_norm.cu", f"{OP_DIR}/ext_hybrid.py")


def _own_module(
    name: str, module: str, sources: tuple[str, ...], title: str, description: str, architectures: tuple[str, ...] = ("sm_90",)
) -> Implementation:
    """A CUDA implementation with its own module of the operation (entry points
    qkv_qknorm_backward and qkv_qknorm_backward_out), registered in its "auto" mode."""
    return Implementation(
        name=name,
        operation="051",
        title=title,
        language="cuda",
        entry_point=f"kernels.ops.qkv_qknorm_backward.{module}:qkv_qknorm_backward",
        out_entry_point=f"kernels.ops.qkv_qknorm_backward.{module}:qkv_qknorm_backward_out",
        sources=sources,
        devices=("cuda",),
        architectures=architectures,
        variant={"mode": "auto"},
        description=description,
    )


IMPLEMENTATIONS: dict[str, Implementation] = {
    "reference": Implementation(
        name="reference",
        operation="051",
        title="PyTorch reference (eager)",
        language="python",
        entry_point="kernels.ops.qkv_qknorm_backward.reference:reference",
        sources=_REF_SOURCES,
        devices=("cpu", "cuda"),
        architectures=("*",),
        description="Eager PyTorch from the math in definition.py; bf16 GEMMs.",
    ),
    "compile": Implementation(
        name="compile",
        operation="051",
        title="torch.compile of the PyTorch reference",
        language="python",
        entry_point="kernels.ops.qkv_qknorm_backward.compiled:compiled_reference",
        sources=_REF_SOURCES + (f"{OP_DIR}/compiled.py",),
        devices=("cuda",),
        architectures=("*",),
        variant={"wrapper": "torch.compile", "mode": "default"},
        description="torch.compile(reference), default mode (Inductor).",
    ),
    "ext-streamnorm": _own_module(
        "ext-streamnorm",
        "ext_streamnorm",
        _EXT_STREAMNORM_SOURCES,
        "KernelIndex CUDA, streaming norm kernel + cluster split-K wgmma GEMM",
        "A Q/K RMSNorm backward reading rows in memory order through a per-warp cp.async ring "
        "(two rows per step, two steps in flight, no division per row, one row loop for Q and K), "
        "then one sm_90a wgmma kernel for dX=G·W and dW=Gᵀ·X, split-K across the CTAs of a "
        "thread-block cluster with the partial tiles summed through distributed shared memory in "
        "a fixed order; PDL-chained.",
    ),
    "ext-portable": _own_module(
        "ext-portable",
        "ext_portable",
        _EXT_PORTABLE_SOURCES,
        "KernelIndex CUDA, portable norm kernel + cuBLAS GEMMs (Hopper and Blackwell)",
        "Q/K RMSNorm backward in a CUDA kernel with no Hopper-only instructions (a cp.async ring per "
        "warp, one token = six rows per slot) writing G=[GQ|GK|GV]; dX=G·[Wq;Wk;Wv] and dW=Gᵀ·X by "
        "cuBLAS through torch (destination-passing), on two streams; norm-weight grads summed in a "
        "fixed order. One library built for sm_90a, sm_100a and sm_120.",
        architectures=_PORTABLE_ARCHITECTURES,
    ),
    "ext-hybrid": _own_module(
        "ext-hybrid",
        "ext_hybrid",
        _EXT_HYBRID_SOURCES,
        "KernelIndex CUDA, per token count: ext-streamnorm (sm_90, small T) or ext-portable",
        "The fastest measured path per token count: on sm_90 ext-streamnorm (norm kernel + cluster "
        "split-K wgmma GEMM) below 3,000 tokens and ext-portable (norm kernel + cuBLAS GEMMs on two "
        "streams) above; ext-portable on every other architecture.",
        architectures=_PORTABLE_ARCHITECTURES,
    ),
}


def get(name: str) -> Implementation:
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"unknown implementation {name!r}; known: {sorted(IMPLEMENTATIONS)}")
    return IMPLEMENTATIONS[name]


def implementation_manifest(name: str, definition_digest: str) -> Manifest:
    return get(name).manifest(definition_digest)
