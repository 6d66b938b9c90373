"""ext-fused on the CPU: its kernels compile for sm_90a (no serialized wgmma), the library builds and
plans, its modes and argument checks, and its registration covers what it builds and imports."""

from __future__ import annotations

import pytest

from kernels.ops.qkv_qknorm_backward import ext_fused
from tests.kernels.sm90 import build_in, compile_sm90a, spill_bytes


def test_kernels_compile_for_sm90a(tmp_path):
    log = compile_sm90a("ext_fused_sm90.cu", tmp_path)
    assert "fused_gemm_kernel" in log and "stats_kernel" in log and "wide_gemm_kernel" not in log  # deleted, 10th session
    assert max(spill_bytes(log)) <= 16, log[-2000:]  # 4-12 bytes in the GEMM kernel (128 registers)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return build_in(ext_fused.LIBRARY, tmp_path_factory.mktemp("kbuild"))


@pytest.mark.parametrize(
    "batch,seq,cluster,sw,sx",
    [(1, 131, 4, 1, 4), (1, 1024, 1, 1, 1), (1, 2048, 2, 2, 1), (1, 8192, 1, 1, 1), (16, 541, 1, 1, 1), (1, 16385, 2, 2, 1)],
)
def test_planner_tiles_per_batch(library, batch, seq, cluster, sw, sx):
    p = ext_fused.plan_with(library, batch, seq, 132, ext_fused.AUTO)
    assert (p["cluster"], p["sw"], p["sx"]) == (cluster, sw, sx)
    assert p["nwt"] == 12 * 5
    assert p["nxt"] == batch * -(-seq // 128) * 5  # 128-row dX tiles never cross a batch
    assert p["kbw"] == batch * -(-seq // 64)  # 64-token dW k-blocks neither
    assert p["grid"] == (p["ncw"] + p["ncx"]) * p["cluster"]
    rows = 5 * batch * seq
    assert p["stats_blocks"] * 8 * p["stats_per_warp"] >= rows > (p["stats_blocks"] - 1) * 8 * p["stats_per_warp"]


def test_forced_plans_and_limits(library):
    assert ext_fused.plan_with(library, 2, 100, 132, (4, 2, 4, 1))["cluster"] == 4
    assert ext_fused.plan_with(library, 2, 100, 132, (2, 4, 1, 0)) is None  # sw > cluster
    assert ext_fused.plan_with(library, 0, 100, 132, ext_fused.AUTO) is None


def test_mode_strings():
    assert ext_fused.parse_mode("auto") == ((0, 0, 0, 0), 1 | 7 << 1)
    assert ext_fused.parse_mode("nopdl") == ((0, 0, 0, 0), 0 | 7 << 1)
    assert ext_fused.parse_mode("t1") == ((0, 0, 0, 0), 1)
    assert ext_fused.parse_mode("c4-w2-x4-xf") == ((4, 2, 4, 1), 1 | 7 << 1)
    assert ext_fused.parse_mode("c4-w2-x4-xf:t1") == ((4, 2, 4, 1), 1)
    assert ext_fused.parse_mode("v1") == ((0, 0, 0, 0), 1 | 1 << 1)
    assert ext_fused.parse_mode("c2-w2-x1:ct") == ((2, 2, 1, 0), 1 | 6 << 1)
    assert ext_fused.parse_mode("t2") == ((0, 0, 0, 0), 1 | 7 << 1)
    assert ext_fused.parse_mode("c1-w1-x1-xf:t2") == ((1, 1, 1, 1), 1 | 7 << 1)
    assert ext_fused.parse_mode("c2-w2-x1:diag-nosmem") == ((2, 2, 1, 0), 1 | (4 | 4 << 3) << 1)
    assert ext_fused.parse_mode("t2-early") == ((0, 0, 0, 0), 1 | 7 << 1 | 1 << 7)
    assert ext_fused.parse_mode("c1-w1-x1:diag-nox-early") == ((1, 1, 1, 0), 1 | 3 << 1 | 1 << 7)
    assert ext_fused.parse_mode("rs") == ((0, 0, 0, 0), 1 | 1 << 8)
    with pytest.raises(ValueError, match="mode"):
        ext_fused.parse_mode("w256")  # the wide kernel was deleted (10th session)
    with pytest.raises(ValueError, match="variant"):
        ext_fused.parse_mode("auto:fast")
    for bad in ("c3-w1-x1", "c2-w4-x1", "fast"):
        with pytest.raises(ValueError, match="mode"):
            ext_fused.parse_mode(bad)


def test_registration_covers_every_file_it_builds_or_imports():
    from kernels.implementations import OP_DIR, REPO_ROOT, get

    impl = get("ext-fused")
    built = {str(p.relative_to(REPO_ROOT)) for p in ext_fused.LIBRARY.files()}
    assert built <= set(impl.sources)
    assert f"{OP_DIR}/ext_fused.py" in impl.sources and impl.architectures == ("sm_90",)
    assert impl.code_digest() not in {get(n).code_digest() for n in ("ext-streamnorm", "ext-portable", "ext-hybrid")}


def test_rejects_bad_arguments_before_any_build():
    torch = pytest.importorskip("torch")
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_fused.qkv_qknorm_backward(**make_inputs(1, 3, seed=1))
    del torch
