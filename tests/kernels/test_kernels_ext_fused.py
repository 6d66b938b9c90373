"""ext-fused without a GPU: its CUDA source compiles for sm_90a with this machine's nvcc (no
wgmma serialization, at most ~100 bytes of spills), its entry points raise ValueError on bad
arguments before anything is built or launched, and its registration is its own code identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernels.implementations import get
from kernels.ops.qkv_qknorm_backward import definition as d
from kernels.ops.qkv_qknorm_backward import ext_fused
from tests.kernels.sm90 import compile_sm90a, nvcc, spill_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_fused_source_compiles_for_sm90a(tmp_path):
    spills = spill_bytes(compile_sm90a("fused_sm90.cu", tmp_path))  # (wgmma not serialized)
    assert spills and max(spills) <= 128  # the kernel (nearly) fits 128 registers


def test_fused_library_builds_with_the_modules_flags(tmp_path, monkeypatch):
    if nvcc() is None:
        pytest.skip("nvcc is not installed")
    monkeypatch.setenv("KERNELINDEX_BUILD_DIR", str(tmp_path))
    path = ext_fused.build()
    assert path.exists() and path.parent == tmp_path / "qkv_qknorm_backward_fused"
    assert ext_fused.build() == path  # reused, not rebuilt
    lib = ext_fused._open(path)  # loads without a GPU (the CUDA runtime is linked statically)
    import ctypes

    out = (ctypes.c_longlong * 16)()
    assert lib.kidxf_plan(8192, 132, 0, out, 16) == 16
    plan = dict(zip(ext_fused.PLAN_FIELDS, list(out)))
    assert plan["bm"] == 128 and 1 <= plan["grid"] <= 132 and plan["ntb"] == 128
    assert plan["counters"] == plan["ntb"] + plan["nwt"] + plan["nxt"] + 2
    assert lib.kidxf_plan(0, 132, 0, out, 16) == -1


def test_ext_fused_registration():
    impl = get("ext-fused")
    assert impl.entry_point.endswith("ext_fused:qkv_qknorm_backward")
    assert impl.out_entry_point.endswith("ext_fused:qkv_qknorm_backward_out")
    assert "kernels/ops/qkv_qknorm_backward/csrc/fused_sm90.cu" in impl.sources
    assert all((ROOT / s).exists() for s in impl.sources)
    assert impl.code_digest() != get("ext").code_digest()
    # ext's own source list is untouched (its digest is pinned by committed benchmark data)
    assert not any("fused" in s for s in get("ext").sources)


torch = pytest.importorskip("torch", reason="torch is not installed")


def _inputs(b=2, s=5, device="cpu"):
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    return make_inputs(b, s, seed=0, device=device)


def test_ext_fused_rejects_bad_inputs_before_any_build():
    inputs = _inputs()
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_fused.qkv_qknorm_backward(**inputs)
    bad = dict(inputs)
    bad["grad_query"] = bad["grad_query"][:, :, :4]  # (the checks go in input order)
    with pytest.raises(ValueError, match="grad_query: expected shape"):
        ext_fused.qkv_qknorm_backward(**bad)
    bad = dict(inputs)
    bad["grad_query"] = bad["grad_query"].float()
    with pytest.raises(ValueError, match="grad_query: expected dtype bfloat16"):
        ext_fused.qkv_qknorm_backward(**bad)
    bad = dict(inputs)
    del bad["grad_value"]
    with pytest.raises(ValueError, match="grad_value: missing"):
        ext_fused.qkv_qknorm_backward(**bad)
    with pytest.raises(ValueError, match="not an input"):
        ext_fused.qkv_qknorm_backward(extra=inputs["q_rstd"], **inputs)
    bad = dict(inputs)
    bad["hidden_states"] = bad["hidden_states"][:, :0]
    with pytest.raises(ValueError):
        ext_fused.qkv_qknorm_backward(**bad)


def test_ext_fused_out_variant_rejects_bad_arguments():
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs

    inputs = _inputs()
    outs = allocate_outputs(2, 5, "cpu")
    with pytest.raises(ValueError, match="expected a cuda tensor"):
        ext_fused.qkv_qknorm_backward_out(outs, **inputs)
    with pytest.raises(ValueError, match="mode: expected one of"):
        ext_fused._mode("fast")
    assert set(ext_fused.MODES) >= {"auto", "nopdl"}
    assert d.OUTPUT_NAMES[0] == "grad_hidden_states"
