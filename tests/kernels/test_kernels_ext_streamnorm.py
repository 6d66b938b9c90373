"""ext-streamnorm without a GPU: each of its CUDA translation units compiles for sm_90a without
spills and without serialized wgmma, and none includes another's .cu; the library builds from them,
loads (the CUDA runtime is linked statically) and plans any token count (the GEMM's plan table,
the norm kernel's grid); forced plans and modes parse or fail with a clear error; bad arguments
raise ValueError before anything is built; the registration covers every file it builds."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kernels.implementations import get
from kernels.ops.qkv_qknorm_backward import ext_streamnorm
from tests.kernels.sm90 import CSRC, build_in, compile_sm90a, spill_bytes

ROOT = Path(__file__).resolve().parents[2]
SMS = 132


@pytest.mark.parametrize("source, kernels", [("stream_norm_sm90.cu", 1), ("cluster_gemm_sm90.cu", 2)])
def test_each_kernel_compiles_for_sm90a_without_spills(source, kernels, tmp_path):
    spills = spill_bytes(compile_sm90a(source, tmp_path))  # (wgmma not serialized)
    assert len(spills) == kernels and max(spills) == 0


def test_no_source_includes_another_cu_file():
    for path in CSRC.rglob("*"):
        if path.suffix in (".cu", ".cuh", ".h"):
            included = re.findall(r'#include\s+"([^"]+)"', path.read_text())
            assert not [i for i in included if i.endswith(".cu")], path


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return build_in(ext_streamnorm.LIBRARY, tmp_path_factory.mktemp("kbuild"))


@pytest.mark.parametrize(
    "tokens, bm, cluster, sw, sx",
    [
        (1, 128, 4, 1, 4),
        (384, 128, 4, 1, 4),
        (700, 128, 2, 1, 2),
        (997, 128, 1, 1, 1),
        (2048, 256, 4, 2, 1),
        (4096, 128, 1, 1, 1),
        (8192, 256, 4, 2, 1),
        (100_003, 256, 4, 2, 1),
    ],
)
def test_planner_follows_the_table_and_sizes_the_norm_grid(library, tokens, bm, cluster, sw, sx):
    p = ext_streamnorm.plan_with(library, tokens, SMS, ext_streamnorm.AUTO)
    assert (p["bm"], p["cluster"], p["sw"], p["sx"]) == (bm, cluster, sw, sx)
    assert p["nwt"] == 1536 // bm * 5 and p["nxt"] == math.ceil(tokens / bm) * 5
    assert p["grid"] == (p["ncw"] + p["ncx"]) * cluster
    assert p["ncw"] * (cluster // sw) >= p["nwt"] and p["ncx"] * (cluster // sx) >= p["nxt"]
    # 12-warp norm blocks, at most 2 per SM, at least a pair of rows per warp
    rows = 5 * tokens
    assert 1 <= p["norm_blocks"] <= 2 * SMS
    if rows <= 2 * SMS * 12 * 2:
        assert p["norm_blocks"] == math.ceil(rows / 24)
    else:
        assert p["norm_blocks"] > SMS  # large T spreads over every SM


def test_forced_plans_and_limits(library):
    p = ext_streamnorm.plan_with(library, 4096, SMS, (256, 4, 2, 1, 1))
    assert (p["bm"], p["cluster"], p["sw"], p["sx"], p["x_first"]) == (256, 4, 2, 1, 1)
    assert ext_streamnorm.plan_with(library, 4096, SMS, (192, 4, 2, 1, 0)) is None  # no such tile
    assert ext_streamnorm.plan_with(library, 4096, SMS, (128, 2, 4, 1, 0)) is None  # sw > cluster
    assert ext_streamnorm.plan_with(library, 1 << 26, SMS, ext_streamnorm.AUTO) is None
    assert ext_streamnorm.plan_with(library, (1 << 26) - 1, SMS, ext_streamnorm.AUTO) is not None
    assert ext_streamnorm.plan_with(library, 0, SMS, ext_streamnorm.AUTO) is None


def test_mode_strings():
    assert ext_streamnorm.parse_mode("auto") == ((0,) * 5, ext_streamnorm.FLAG_PDL)
    assert ext_streamnorm.parse_mode("nopdl") == ((0,) * 5, 0)
    assert ext_streamnorm.parse_mode("bm128-c4-w1-x4-xf") == ((128, 4, 1, 4, 1), ext_streamnorm.FLAG_PDL)
    with pytest.raises(ValueError, match="cannot exceed the cluster size"):
        ext_streamnorm.parse_mode("bm128-c2-w4-x1")
    for bad in ("fast", "bm256-c2-w2-x1-n48", "bm128-c3-w1-x1", "dbg-gemm", "dbg-norm"):  # debug modes: lab/ only
        with pytest.raises(ValueError, match="mode: expected"):
            ext_streamnorm.parse_mode(bad)


def test_registration_covers_every_file_it_builds_or_imports():
    impl = get("ext-streamnorm")
    assert impl.entry_point.endswith("ext_streamnorm:qkv_qknorm_backward")
    assert impl.out_entry_point.endswith("ext_streamnorm:qkv_qknorm_backward_out")
    assert all((ROOT / s).exists() for s in impl.sources)
    built = {str(p.relative_to(ROOT)) for p in ext_streamnorm.LIBRARY.files()}
    assert built <= set(impl.sources)
    included = set()
    for path in ext_streamnorm.LIBRARY.files():
        for name in re.findall(r'#include\s+"([^"]+)"', path.read_text()):
            target = (path.parent / name).resolve()
            included.add(str(target.relative_to(ROOT)) if target.exists() else str((CSRC / name).relative_to(ROOT)))
    assert included <= built


def test_one_loader_takes_one_source_or_several():
    from kernels.ops.qkv_qknorm_backward.nvcc_library import NvccLibrary

    single = NvccLibrary("kidx_one", CSRC / "stream_norm_sm90.cu", (CSRC / "stream_norm.h",))
    assert single.sources == (CSRC / "stream_norm_sm90.cu",) and single.files()[-1] == CSRC / "stream_norm.h"
    assert single.digest() != ext_streamnorm.LIBRARY.digest()  # named by what it builds
    assert single.path().name.startswith("libkidx_one_")


torch = pytest.importorskip("torch", reason="torch is not installed")


def test_load_refuses_a_machine_without_its_gpu():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(RuntimeError, match="kidx_streamnorm needs a CUDA device"):
        ext_streamnorm.load()


def test_rejects_bad_arguments_before_any_build():
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs

    inputs = make_inputs(2, 5, seed=0, device="cpu")
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_streamnorm.qkv_qknorm_backward(**inputs)
    bad = dict(inputs)
    bad["grad_query"] = bad["grad_query"][:, :3]  # (checks go in input order: shape first)
    with pytest.raises(ValueError, match="grad_query: expected shape"):
        ext_streamnorm.qkv_qknorm_backward(**bad)
    bad = dict(inputs)
    del bad["k_rstd"]
    with pytest.raises(ValueError, match="k_rstd: missing"):
        ext_streamnorm.qkv_qknorm_backward(**bad)
    with pytest.raises(ValueError, match="mode: expected"):
        ext_streamnorm.qkv_qknorm_backward(mode="bm128-c1-w1-x1-n16", **inputs)
    with pytest.raises(ValueError, match="expected a cuda tensor"):
        ext_streamnorm.qkv_qknorm_backward_out(allocate_outputs(2, 5, "cpu"), **inputs)
