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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kernels.source_commit import source_commit
from registry.code import REPOSITORY, code_digest
from registry.manifests import Manifest, make_manifest

REPO_ROOT = Path(__file__).resolve().parent.parent
OP_DIR = "kernels/ops/qkv_qknorm_backward"


@dataclass(frozen=True)
class Implementation:
    name: str                      # registry key: "reference", "compile", "ext", ...
    operation: str                 # operation key: "051"
    title: str
    language: str
    entry_point: str               # "module:function"
    sources: tuple[str, ...]       # repository-relative paths the digest covers
    devices: tuple[str, ...]
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
        return make_manifest(
            "ImplementationRevision",
            self.manifest_name(),
            {
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
PUBLISHED_WITHOUT_COMMIT = frozenset({
    "sha256:5fdf6b1b791fc9276300c6b4fe6f53254c46098098094c2e1376dea4f2f29d54",  # reference
    "sha256:a3531c71d52753b0acd4166bf404cf0ff8a1f975dc3609e4c0f700839d92e448",  # compile
    "sha256:a00b294ebe0a077e6f43415552cd157ba8dcc873ec8d4f6e64fcc3b5e5031e59",  # ext
    "sha256:b93e02055c4c204b127b7cc7902388f94af0d4eae95b29afac181b955815080f",  # ext-cublas
    "sha256:eaab53ef71969bfe750d3648c468d1c877cc44d18be67d8d29d02f712d2459e8",  # ext-wgmma128
    "sha256:bf2ce50f2a275726be7440ddf42d65aff4d5d1fdfc6dd92b5f572a5c4d40b32f",  # ext-wgmma256
    "sha256:a1a4b7652471fd83613167aead8ee56834e7211a9bba353b97534fc0e5e56ebf",  # ext-cluster
    "sha256:a9678aa20bce7a6ff31f52748be67cee7e1e3394a8dcf5fb25d4dfb1ebc36d6a",  # ext-streamnorm
    "sha256:87e66b73396d2a4f9d31b42f67ea7f83362706bb15057c27debf171ffeacfb97",  # ext-streamk
})

_REF_SOURCES = (f"{OP_DIR}/definition.py", f"{OP_DIR}/reference.py")
_EXT_SOURCES = (
    f"{OP_DIR}/definition.py",
    f"{OP_DIR}/checks.py",
    f"{OP_DIR}/ext.py",
    f"{OP_DIR}/csrc/binding.cpp",
    f"{OP_DIR}/csrc/launch.h",
    f"{OP_DIR}/csrc/sm90_ptx.cuh",
    f"{OP_DIR}/csrc/norm_backward.cu",
    f"{OP_DIR}/csrc/gemm_sm90.cu",
)


_EXT_FUSED_SOURCES = (
    f"{OP_DIR}/definition.py",
    f"{OP_DIR}/checks.py",
    f"{OP_DIR}/ext_fused.py",
    f"{OP_DIR}/csrc/sm90_ptx.cuh",
    f"{OP_DIR}/csrc/fused_sm90.cu",
)


_EXT_CLUSTER_SOURCES = (
    f"{OP_DIR}/definition.py",
    f"{OP_DIR}/checks.py",
    f"{OP_DIR}/nvcc_library.py",
    f"{OP_DIR}/ext_cluster.py",
    f"{OP_DIR}/csrc/sm90_ptx.cuh",
    f"{OP_DIR}/csrc/cluster_sm90.cu",
)

# ext-streamnorm imports ext_cluster's argument helpers and includes its CUDA file unchanged.
_EXT_STREAMNORM_SOURCES = _EXT_CLUSTER_SOURCES + (
    f"{OP_DIR}/ext_streamnorm.py",
    f"{OP_DIR}/csrc/stream_norm_sm90.cu",
)

# ext-streamk includes ext-streamnorm's CUDA file (and through it ext-cluster's) unchanged.
_EXT_STREAMK_SOURCES = _EXT_STREAMNORM_SOURCES + (
    f"{OP_DIR}/ext_streamk.py",
    f"{OP_DIR}/csrc/streamk_sm90.cu",
)


def _ext(name: str, mode: str, title: str, description: str) -> Implementation:
    return Implementation(
        name=name,
        operation="051",
        title=title,
        language="cuda",
        entry_point="kernels.ops.qkv_qknorm_backward.ext:qkv_qknorm_backward",
        out_entry_point="kernels.ops.qkv_qknorm_backward.ext:qkv_qknorm_backward_out",
        sources=_EXT_SOURCES,
        devices=("cuda",),
        variant={"mode": mode},
        description=description,
    )


def _own_module(name: str, module: str, sources: tuple[str, ...], title: str, description: str) -> Implementation:
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
        variant={"wrapper": "torch.compile", "mode": "default"},
        description="torch.compile(reference), default mode (Inductor).",
    ),
    "ext": _ext(
        "ext", "auto", "KernelIndex CUDA extension (norm kernel + persistent wgmma GEMM)",
        "Fused Q/K RMSNorm backward + transpose into G=[GQ|GK|GV], then one persistent sm_90a "
        "wgmma kernel computing dX=G·W and dW=Gᵀ·X (split-K, deterministic fix-up), PDL-chained.",
    ),
    "ext-cublas": _ext(
        "ext-cublas", "cublas", "KernelIndex CUDA extension, cuBLAS GEMMs (fallback)",
        "The same norm kernel, then the two GEMMs through cuBLAS (at::mm_out).",
    ),
    "ext-wgmma128": _ext(
        "ext-wgmma128", "wgmma128", "KernelIndex CUDA extension, 128-row GEMM tiles",
        "As ext, with 128x128 tiles forced.",
    ),
    "ext-wgmma256": _ext(
        "ext-wgmma256", "wgmma256", "KernelIndex CUDA extension, 256-row GEMM tiles",
        "As ext, with 256x128 tiles forced.",
    ),
    "ext-fused": _own_module(
        "ext-fused", "ext_fused", _EXT_FUSED_SOURCES,
        "KernelIndex CUDA, one persistent kernel (norm backward fused into the GEMMs)",
        "One persistent sm_90a kernel: a norm warpgroup per CTA writes GQ|GK once (GV is read "
        "in place) and flags each token block; TMA/wgmma warpgroups compute dX=G·W and dW=Gᵀ·X "
        "behind those flags, split-K with a deterministic (distributed when co-resident) "
        "fix-up; norm-weight grads reduced in a fixed order.",
    ),
    "ext-cluster": _own_module(
        "ext-cluster", "ext_cluster", _EXT_CLUSTER_SOURCES,
        "KernelIndex CUDA, norm kernel + cluster split-K wgmma GEMM",
        "Q/K RMSNorm backward into GQ|GK (GV read in place), then one sm_90a wgmma kernel for "
        "dX=G·W and dW=Gᵀ·X: split-K across the CTAs of a thread-block cluster, partial tiles "
        "summed through distributed shared memory in a fixed order; PDL-chained, V-only tiles "
        "start before the norm ends.",
    ),
    "ext-streamnorm": _own_module(
        "ext-streamnorm", "ext_streamnorm", _EXT_STREAMNORM_SOURCES,
        "KernelIndex CUDA, streaming norm kernel + cluster split-K wgmma GEMM",
        "ext-cluster's GEMM kernel behind a leaner Q/K RMSNorm backward: rows read in memory "
        "order through a per-warp cp.async ring (two rows per step, two steps in flight), no "
        "division per row, one row loop for Q and K; about two thirds of the instructions per row.",
    ),
    "ext-streamk": _own_module(
        "ext-streamk", "ext_streamk", _EXT_STREAMK_SOURCES,
        "KernelIndex CUDA, streaming norm kernel + persistent stream-K wgmma GEMM",
        "ext-streamnorm's Q/K norm kernel, then one persistent sm_90a wgmma kernel (one CTA per "
        "SM) in which every CTA takes an equal share of the k-blocks of dX=G·W and dW=Gᵀ·X "
        "(stream-K; at larger T, dW's k-blocks and dX's shared by separate CTA groups); a tile "
        "shared by several CTAs is summed by the CTA holding its first k-block from the others' "
        "fp32 partials in global memory, in a fixed order.",
    ),
}


def get(name: str) -> Implementation:
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"unknown implementation {name!r}; known: {sorted(IMPLEMENTATIONS)}")
    return IMPLEMENTATIONS[name]


def implementation_manifest(name: str, definition_digest: str) -> Manifest:
    return get(name).manifest(definition_digest)
