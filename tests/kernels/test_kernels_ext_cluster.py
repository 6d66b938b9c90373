"""ext-cluster without a GPU: its CUDA source compiles for sm_90a with this machine's nvcc (wgmma
not serialized, no spills), the library builds and loads (the CUDA runtime is linked statically)
and its planner answers for any token count, the mode strings parse or fail with a clear error,
bad arguments raise ValueError before anything is built, and the registration is its own code
identity (ext's pinned sources untouched)."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import pytest

from kernels.implementations import get
from kernels.ops.qkv_qknorm_backward import ext_cluster
from tests.kernels.sm90 import build_in, compile_sm90a, spill_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_source_compiles_for_sm90a_without_spills(tmp_path):
    spills = spill_bytes(compile_sm90a("cluster_sm90.cu", tmp_path))  # (wgmma not serialized)
    assert len(spills) == 5 and max(spills) == 0  # 2 GEMM instantiations + 3 norm kernels


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    lib = build_in(ext_cluster.LIBRARY, tmp_path_factory.mktemp("kbuild"))
    ext_cluster._declare(lib)
    return lib


def _plan(lib, tokens: int, mode: str = "auto", sms: int = 132):
    forced, _ = ext_cluster.parse_mode(mode)
    out = (ctypes.c_longlong * len(ext_cluster.PLAN_FIELDS))()
    n = lib.kidxc_plan(tokens, sms, (ctypes.c_int * 6)(*forced), out, len(out))
    return n, dict(zip(ext_cluster.PLAN_FIELDS, list(out)))


@pytest.mark.parametrize("tokens", [1, 63, 131, 997, 1024, 2048, 4096, 8192, 8656, 100_003])
def test_planner_covers_every_token_count(library, tokens):
    n, p = _plan(library, tokens)
    assert n == len(ext_cluster.PLAN_FIELDS)
    assert p["bm"] in (128, 256) and p["cluster"] in (1, 2, 4, 8)
    assert p["cluster"] % p["sw"] == 0 and p["cluster"] % p["sx"] == 0
    assert p["nwt"] == 1536 // p["bm"] * 5
    assert p["nxt"] == math.ceil(tokens / p["bm"]) * 5
    # every tile is in some cluster, and the grid is whole clusters (+ norm CTAs in fused plans)
    assert p["ncw"] * (p["cluster"] // p["sw"]) >= p["nwt"] > (p["ncw"] - 1) * (p["cluster"] // p["sw"])
    assert p["ncx"] * (p["cluster"] // p["sx"]) >= p["nxt"] > (p["ncx"] - 1) * (p["cluster"] // p["sx"])
    assert p["grid"] == (p["ncw"] + p["ncx"]) * p["cluster"] + p["norm_ctas"]
    assert p["norm_blocks"] >= 1


def test_forced_plans_and_fused_mode(library):
    n, p = _plan(library, 4096, "bm256-c4-w2-x1-xf")
    assert n == 12 and (p["bm"], p["cluster"], p["sw"], p["sx"], p["x_first"]) == (256, 4, 2, 1, 1)
    assert p["norm_ctas"] == 0
    n, p = _plan(library, 4096, "bm128-c2-w1-x2-n33")
    assert p["norm_ctas"] == 34  # whole clusters
    assert p["norm_blocks"] == 34 and p["grid"] == (p["ncw"] + p["ncx"]) * 2 + 34
    bad = (ctypes.c_int * 6)(64, 1, 1, 1, 0, 0)  # no 64-row tiles
    out = (ctypes.c_longlong * 12)()
    assert library.kidxc_plan(1024, 132, bad, out, 12) == -1
    assert library.kidxc_plan(0, 132, None, out, 12) == -1
    assert library.kidxc_error(-1).decode().startswith("a tensor map")


def test_mode_strings():
    assert ext_cluster.parse_mode("auto") == ((0,) * 6, ext_cluster.FLAG_PDL)
    assert ext_cluster.parse_mode("nopdl")[1] == 0
    assert ext_cluster.parse_mode("bm128-c4-w1-x4-xf") == ((128, 4, 1, 4, 1, 0), ext_cluster.FLAG_PDL)
    assert ext_cluster.parse_mode("bm256-c2-w2-x1-n48")[0] == (256, 2, 2, 1, 0, 48)
    for bad in ("fast", "bm64-c1-w1-x1", "bm128-c3-w1-x1", "bm128-c2-w4-x1", ""):
        with pytest.raises(ValueError, match="mode"):
            ext_cluster.parse_mode(bad)


def test_compile_implementation_digest_covers_only_what_it_runs():
    impl = get("compile")
    assert impl.entry_point == "kernels.ops.qkv_qknorm_backward.compiled:compiled_reference"
    assert "kernels/implementations.py" not in impl.sources
    from kernels.implementations import _resolve

    assert callable(_resolve(impl.entry_point))


torch = pytest.importorskip("torch", reason="torch is not installed")


def test_ext_cluster_rejects_bad_arguments_before_any_build():
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs

    inputs = make_inputs(2, 5, seed=0, device="cpu")
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_cluster.qkv_qknorm_backward(**inputs)
    bad = dict(inputs)  # (the checks go in input order: shape, dtype, device of each tensor)
    bad["grad_query"] = bad["grad_query"].float()
    with pytest.raises(ValueError, match="grad_query: expected dtype bfloat16"):
        ext_cluster.qkv_qknorm_backward(**bad)
    bad = dict(inputs)
    del bad["k_rstd"]
    with pytest.raises(ValueError, match="k_rstd: missing"):
        ext_cluster.qkv_qknorm_backward(**bad)
    with pytest.raises(ValueError, match="mode"):
        ext_cluster.qkv_qknorm_backward(mode="fastest", **inputs)
    with pytest.raises(ValueError, match="expected a cuda tensor"):
        ext_cluster.qkv_qknorm_backward_out(allocate_outputs(2, 5, "cpu"), **inputs)
