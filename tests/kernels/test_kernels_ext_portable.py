"""ext-portable on the CPU: its library compiles with this machine's nvcc for sm_90a, sm_100a and
sm_120 and cuobjdump finds the three cubins in it (no GPU needed); its schedules and argument
checks; its registration declares the architectures it is built for."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kernels.ops.qkv_qknorm_backward import ext_portable
from tests.kernels.sass_release import cuobjdump
from tests.kernels.sm90 import nvcc


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    if nvcc() is None:
        pytest.skip("nvcc is not installed")
    import os

    os.environ["KERNELINDEX_BUILD_DIR"] = str(tmp_path_factory.mktemp("kbuild"))
    try:
        return ext_portable.LIBRARY.build()
    finally:
        del os.environ["KERNELINDEX_BUILD_DIR"]


def test_library_holds_sm90a_sm100a_and_sm120_cubins(library):
    tool = cuobjdump()
    assert tool is not None, "cuobjdump missing: `make setup-dev` installs nvidia-cuda-cuobjdump"
    out = subprocess.run([tool, "--list-elf", str(library)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    archs = set(re.findall(r"\.(sm_\d+a?)\.cubin", out.stdout))
    assert archs == {"sm_90a", "sm_100a", "sm_120"}, out.stdout


def test_norm_kernel_uses_no_hopper_only_instructions(tmp_path):
    """No wgmma / TMA / mbarrier / cluster instructions: the same code runs on every target; its
    loads are cp.async (sm_80 and up)."""
    compiler = nvcc()
    if compiler is None:
        pytest.skip("nvcc is not installed")
    ptx = tmp_path / "portable.ptx"
    source = ext_portable.LIBRARY.sources[0]
    out = subprocess.run(
        [compiler, "-std=c++17", "-O3", "-arch=compute_100a", "-ptx", f"-I{source.parent}", str(source), "-o", str(ptx)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    text = ptx.read_text()
    assert ".entry" in text and "cp.async.cg.shared.global" in text
    for hopper_only in ("wgmma", "cp.async.bulk", "mbarrier", "cluster", "setmaxnreg", "tcgen05"):
        assert hopper_only not in text, hopper_only


def test_registry_entry_declares_its_architectures():
    from kernels.implementations import get

    impl = get("ext-portable")
    assert impl.architectures == ("sm_90", "sm_100", "sm_120") == ext_portable.ARCHITECTURES
    spec = impl.manifest("sha256:" + "0" * 64).to_json()["spec"]
    assert spec["architectures"] == ["sm_90", "sm_100", "sm_120"]
    assert "kernels/ops/qkv_qknorm_backward/csrc/portable_norm.cu" in impl.sources
    assert impl.code_digest() != get("ext-streamnorm").code_digest()


def test_schedules_and_chunks():
    assert ext_portable.parse_mode("serial", 8192) == ("serial", 1, ext_portable.AUTO_CONFIG)
    assert ext_portable.parse_mode("chunk4-c2", 8192) == ("chunk", 4, 2)
    assert ext_portable.parse_mode("auto", 131)[0] in ("serial", "split", "chunk")
    for bad in ("chunk0", "split-c3", "fast", "split-", "dbg-norm"):  # debug modes: lab/ only
        with pytest.raises(ValueError, match="mode: expected auto"):
            ext_portable.parse_mode(bad, 10)
    for tokens in (1, 63, 131, 997, 8192, 8656):
        for chunks in (1, 2, 3, 4):
            bounds = ext_portable.chunk_bounds(tokens, chunks)
            assert bounds[0][0] == 0 and bounds[-1][1] == tokens and len(bounds) <= chunks
            assert all(lo < hi for lo, hi in bounds) and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            assert all(lo % 64 == 0 for lo, _ in bounds)


def test_bad_arguments_are_refused_before_any_build():
    pytest.importorskip("torch")
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(1, 3, seed=0)  # CPU tensors
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_portable.qkv_qknorm_backward(**inputs)
    inputs["grad_query"] = inputs["grad_query"][:, :2]
    with pytest.raises(ValueError, match=r"grad_query: expected shape \[1, 4, 3, 256\]"):
        ext_portable.qkv_qknorm_backward_out([], **inputs)
    with pytest.raises(ValueError, match="mode: expected auto"):
        ext_portable.qkv_qknorm_backward(mode="fast", **make_inputs(1, 3, seed=0))


def test_hybrid_entry_dispatches_only_auto_and_declares_both_architectures():
    from kernels.implementations import get
    from kernels.ops.qkv_qknorm_backward import ext_hybrid
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    pytest.importorskip("torch")
    impl = get("ext-hybrid")
    assert impl.architectures == ("sm_90", "sm_100", "sm_120")
    csrc = "kernels/ops/qkv_qknorm_backward/csrc"
    assert {f"{csrc}/stream_norm_sm90.cu", f"{csrc}/portable_norm.cu"} <= set(impl.sources)
    assert len(set(impl.sources)) == len(impl.sources)
    with pytest.raises(ValueError, match="mode: ext-hybrid has only 'auto'"):
        ext_hybrid.qkv_qknorm_backward(mode="split", **make_inputs(1, 3, seed=0))


@pytest.mark.parametrize("tokens,pieces", [(131, [131]), (16384, [16384]), (16385, [16384, 1]), (49155, [16384, 16384, 16384, 3])])
def test_dw_is_summed_over_token_pieces_of_at_most_16384(monkeypatch, tokens, pieces):
    """One cuBLAS Gᵀ·X with K = 16385 or 49153 is wrong on the H200 whatever its output type
    (issue 28): dW is made of calls with K ≤ DW_K_CHUNK, in token order, summed in fp32. CPU: a
    stand-in for the fp32-output mm (aten::mm.dtype has no CPU kernel) records each call's K."""
    torch = pytest.importorskip("torch")
    seen = []

    def fp32_mm(a, b, dtype=None, *, out=None):
        assert dtype == torch.float32
        seen.append(a.shape[1])
        r = a.float() @ b.float()
        return r if out is None else out.copy_(r)

    monkeypatch.setattr(torch, "mm", fp32_mm)
    gen = torch.Generator().manual_seed(tokens)
    g = torch.randn(tokens, 24, generator=gen).bfloat16()
    x = torch.randn(tokens, 8, generator=gen).bfloat16()
    out = torch.empty(24, 8)
    ext_portable._dw_fp32(g, x, out)
    assert seen == pieces and ext_portable.DW_K_CHUNK == 16384
    ref = g.double().t() @ x.double()
    assert float((out.double() - ref).abs().max() / ref.pow(2).mean().sqrt()) < 1e-4  # fp32 sums
