"""ext-streamnorm without a GPU: its CUDA source (which includes ext-cluster's unchanged) compiles
for sm_90a without spills, the library builds and loads, its planner keeps ext-cluster's GEMM plan
and sizes its own norm grid for any token count, fused plans and oversized T are refused with a
clear error, and the registration is its own code identity over ext-cluster's pinned files."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import pytest

from kernels.implementations import get
from kernels.ops.qkv_qknorm_backward import ext_cluster, ext_streamnorm
from tests.kernels.sm90 import build_in, compile_sm90a, spill_bytes

ROOT = Path(__file__).resolve().parents[2]
SMS = 132


def test_stream_norm_source_compiles_for_sm90a_without_spills(tmp_path):
    spills = spill_bytes(compile_sm90a("stream_norm_sm90.cu", tmp_path))
    # the stream norm kernel + ext-cluster's 2 GEMM instantiations and 3 (unused) norm kernels
    assert len(spills) == 6 and max(spills) == 0


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    lib = build_in(ext_streamnorm.LIBRARY, tmp_path_factory.mktemp("kbuild"))
    ext_streamnorm.declare(lib)
    ext_cluster._declare(lib)  # the included ext-cluster code exports its own planner too
    return lib


@pytest.mark.parametrize("tokens", [1, 2, 63, 131, 997, 1024, 2048, 4096, 8192, 8656, 100_003])
def test_planner_keeps_the_gemm_plan_and_sizes_the_norm_grid(library, tokens):
    p = ext_streamnorm.plan_with(library, tokens, SMS, (0,) * 6)
    assert p is not None
    out = (ctypes.c_longlong * 12)()
    assert library.kidxc_plan(tokens, SMS, None, out, 12) == 12
    cluster_plan = dict(zip(ext_cluster.PLAN_FIELDS, list(out)))
    assert {k: v for k, v in p.items() if k != "norm_blocks"} == \
        {k: v for k, v in cluster_plan.items() if k != "norm_blocks"}
    # 12-warp norm blocks, at most 2 per SM, at least a pair of rows per warp
    rows = 5 * tokens
    assert 1 <= p["norm_blocks"] <= 2 * SMS
    if rows <= 2 * SMS * 12 * 2:
        assert p["norm_blocks"] == math.ceil(rows / 24)
    else:
        assert p["norm_blocks"] > SMS  # large T spreads over every SM


def test_forced_plans_fused_modes_and_limits(library):
    p = ext_streamnorm.plan_with(library, 4096, SMS, (256, 4, 2, 1, 1, 0))
    assert (p["bm"], p["cluster"], p["sw"], p["sx"], p["x_first"], p["norm_ctas"]) == (256, 4, 2, 1, 1, 0)
    assert ext_streamnorm.plan_with(library, 4096, SMS, (128, 2, 1, 2, 0, 33)) is None  # fused
    assert ext_streamnorm.plan_with(library, 1 << 26, SMS, (0,) * 6) is None
    assert ext_streamnorm.plan_with(library, (1 << 26) - 1, SMS, (0,) * 6) is not None
    assert ext_streamnorm.plan_with(library, 0, SMS, (0,) * 6) is None


def test_mode_strings():
    assert ext_streamnorm.parse_mode("auto") == ((0,) * 6, ext_cluster.FLAG_PDL)
    assert ext_streamnorm.parse_mode("bm128-c4-w1-x4-xf") == ((128, 4, 1, 4, 1, 0), ext_cluster.FLAG_PDL)
    assert ext_streamnorm.parse_mode("dbg-norm")[1] & ext_cluster.FLAG_NO_GEMM
    for bad in ("bm256-c2-w2-x1-n48", "bm128-c1-w1-x1-dbg-nofence"):
        with pytest.raises(ValueError, match="mode: ext-streamnorm has no fused"):
            ext_streamnorm.parse_mode(bad)
    with pytest.raises(ValueError, match="mode"):
        ext_streamnorm.parse_mode("fast")


def test_registration_covers_every_file_it_builds_or_imports():
    impl = get("ext-streamnorm")
    assert impl.entry_point.endswith("ext_streamnorm:qkv_qknorm_backward")
    assert impl.out_entry_point.endswith("ext_streamnorm:qkv_qknorm_backward_out")
    assert all((ROOT / s).exists() for s in impl.sources)
    built = {str(p.relative_to(ROOT)) for p in ext_streamnorm.LIBRARY.files()}
    assert built <= set(impl.sources)


torch = pytest.importorskip("torch", reason="torch is not installed")


def test_rejects_bad_arguments_before_any_build():
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs

    inputs = make_inputs(2, 5, seed=0, device="cpu")
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_streamnorm.qkv_qknorm_backward(**inputs)
    bad = dict(inputs)
    bad["grad_query"] = bad["grad_query"][:, :3]  # (checks go in input order: shape first)
    with pytest.raises(ValueError, match="grad_query: expected shape"):
        ext_streamnorm.qkv_qknorm_backward(**bad)
    with pytest.raises(ValueError, match="mode: ext-streamnorm has no fused"):
        ext_streamnorm.qkv_qknorm_backward(mode="bm128-c1-w1-x1-n16", **inputs)
    with pytest.raises(ValueError, match="expected a cuda tensor"):
        ext_streamnorm.qkv_qknorm_backward_out(allocate_outputs(2, 5, "cpu"), **inputs)
