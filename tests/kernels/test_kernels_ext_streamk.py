"""ext-streamk without a GPU: its CUDA source compiles for sm_90a without serialized wgmmas, the
library builds and loads, and its stream-K schedule (the same host/device functions the kernel
runs) gives every k-block of both GEMMs to exactly one CTA, with one owner per shared tile at the
end of its CTA's range and its contributors right after it; plans, modes and bad arguments are
refused with clear errors; the registration is its own code identity."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from kernels.implementations import get
from kernels.ops.qkv_qknorm_backward import ext_streamk
from tests.kernels.sm90 import build_in, compile_sm90a, spill_bytes

ROOT = Path(__file__).resolve().parents[2]
SMS = 132
AUTO = (0, 0, 0)


def test_streamk_source_compiles_for_sm90a_without_serialized_wgmma(tmp_path):
    log = compile_sm90a("streamk_sm90.cu", tmp_path)
    assert "C7515" not in log, log[-3000:]  # wgmma accumulators touched inside a pipeline stage
    spills = spill_bytes(log)
    # 2 stream-K GEMM instantiations + the included norm kernel + ext-cluster's 2 GEMMs and 3 norms
    assert len(spills) == 8
    # The 128-row instantiation keeps two epilogue addresses on the stack (16 bytes), nothing else.
    assert max(spills) <= 16 and sorted(spills)[-2] == 0


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    lib = build_in(ext_streamk.LIBRARY, tmp_path_factory.mktemp("kbuild"))
    ext_streamk.declare(lib)
    return lib


def schedule(library, tokens: int, forced=AUTO, sms: int = SMS):
    p = ext_streamk.plan_with(library, tokens, sms, forced)
    assert p is not None
    return p, [ext_streamk.segments_with(library, tokens, sms, forced, c) for c in range(p["grid"])]


@pytest.mark.parametrize("tokens,forced", [
    (1, AUTO), (63, AUTO), (131, AUTO), (997, AUTO), (1492, AUTO), (2048, AUTO), (4097, AUTO),
    (8656, AUTO), (100_003, AUTO), (131, (128, 132, 0)), (1024, (256, 100, 0)), (8192, (256, 132, 90)),
    (2731 * 3, (128, 120, 60)),
])
def test_every_k_block_has_one_cta_and_every_shared_tile_one_owner(library, tokens, forced):
    p, ctas = schedule(library, tokens, forced)
    owner_of: dict[int, int] = {}
    contributors: dict[int, list[int]] = defaultdict(list)
    seen = set()
    for c, segs in enumerate(ctas):
        assert segs, f"CTA {c} has no work"
        for i, g in enumerate(segs):
            assert 0 <= g["k0"] < g["k1"] <= g["kt"]
            role = ext_streamk.ROLES[g["role"]]
            if role == "contributor":  # a piece without k-block 0: only ever a CTA's first
                assert i == 0 and g["k0"] > 0
                contributors[g["tile"]].append(c)
            else:
                assert g["k0"] == 0 and g["tile"] not in owner_of
                owner_of[g["tile"]] = c
                if role == "owner":  # shares its tile: only ever a CTA's last segment
                    assert i == len(segs) - 1 and g["k1"] < g["kt"]
            for kb in range(g["k0"], g["k1"]):
                assert (g["tile"], kb) not in seen
                seen.add((g["tile"], kb))
    assert len(seen) == p["units"] and len(owner_of) == p["tiles"]
    # A tile's contributors are the CTAs right after its owner (the owner sums them in that order).
    for tile, cs in contributors.items():
        assert cs == list(range(owner_of[tile] + 1, owner_of[tile] + 1 + len(cs)))
    assert max(len(cs) for cs in contributors.values()) + 1 == p["max_share"] if contributors else True
    # Equal shares (within one k-block) inside each CTA group.
    units = [sum(g["k1"] - g["k0"] for g in segs) for segs in ctas]
    gw = p["dw_ctas"]
    for group in ([units] if gw == 0 else [units[:gw], units[gw:]]):
        assert max(group) - min(group) <= 1
    if gw:  # the dW group holds exactly dW's tiles
        assert all(g["is_w"] for segs in ctas[:gw] for g in segs)
        assert not any(g["is_w"] for segs in ctas[gw:] for g in segs)
    assert p["workspace_floats"] == p["grid"] * p["bm"] * 128


def test_plan_table(library):
    got = {t: ext_streamk.plan_with(library, t, SMS, AUTO) for t in (131, 512, 1024, 2048, 4096, 8192)}
    assert {t: (p["bm"], p["grid"], p["dw_ctas"]) for t, p in got.items()} == {
        131: (128, 70, 0), 512: (128, 120, 0), 1024: (128, 120, 60), 2048: (128, 132, 60),
        4096: (256, 132, 60), 8192: (256, 132, 60)}
    # A GPU with fewer SMs gets a plan within its SM count.
    small = ext_streamk.plan_with(library, 8192, 100, AUTO)
    assert small is not None and small["grid"] <= 100
    p = ext_streamk.plan_with(library, 1024, SMS, (256, 0, 0))
    assert p["bm"] == 256 and p["grid"] == min(SMS, p["units"] // 6)


def test_bad_plans_are_refused(library):
    assert ext_streamk.plan_with(library, 0, SMS, AUTO) is None
    assert ext_streamk.plan_with(library, 1 << 26, SMS, AUTO) is None
    assert ext_streamk.plan_with(library, (1 << 26) - 1, SMS, AUTO) is not None
    assert ext_streamk.plan_with(library, 8192, SMS, (256, 133, 0)) is None  # more CTAs than SMs
    assert ext_streamk.plan_with(library, 8192, SMS, (256, 132, 132)) is None  # no CTA left for dX
    assert ext_streamk.plan_with(library, 1, 200, (128, 190, 0)) is None  # more CTAs than k-blocks (180)
    assert ext_streamk.plan_with(library, 1024, SMS, (192, 0, 0)) is None
    assert ext_streamk.segments_with(library, 1024, SMS, AUTO, 120) is None  # no such CTA


def test_mode_strings():
    assert ext_streamk.parse_mode("auto") == ((0, 0, 0), ext_streamk.FLAG_PDL)
    assert ext_streamk.parse_mode("bm256-g132-w60") == ((256, 132, 60), ext_streamk.FLAG_PDL)
    assert ext_streamk.parse_mode("bm128") == ((128, 0, 0), ext_streamk.FLAG_PDL)
    assert ext_streamk.parse_mode("dbg-norm")[1] & ext_streamk.FLAG_NO_GEMM
    for bad in ("fast", "bm64", "bm128-c4-w1-x4", "bm256-g-w3"):
        with pytest.raises(ValueError, match="mode: expected"):
            ext_streamk.parse_mode(bad)


def test_registration_is_its_own_revision_over_the_included_files():
    impl = get("ext-streamk")
    assert impl.entry_point.endswith("ext_streamk:qkv_qknorm_backward")
    assert impl.out_entry_point.endswith("ext_streamk:qkv_qknorm_backward_out")
    assert set(get("ext-streamnorm").sources) < set(impl.sources)  # everything it includes or imports
    assert {ROOT / s for s in impl.sources} >= set(ext_streamk.LIBRARY.files())
    assert all((ROOT / s).exists() for s in impl.sources)
    assert impl.code_digest() != get("ext-streamnorm").code_digest()


torch = pytest.importorskip("torch", reason="torch is not installed")


def test_rejects_bad_arguments_before_any_build():
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs

    inputs = make_inputs(2, 5, seed=0, device="cpu")
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        ext_streamk.qkv_qknorm_backward(**inputs)
    missing = {k: v for k, v in inputs.items() if k != "k_normed"}
    with pytest.raises(ValueError, match="k_normed: missing"):
        ext_streamk.qkv_qknorm_backward(**missing)
    with pytest.raises(ValueError, match="mode: expected"):
        ext_streamk.qkv_qknorm_backward(mode="bm512", **inputs)
    with pytest.raises(ValueError, match="expected a cuda tensor"):
        ext_streamk.qkv_qknorm_backward_out(allocate_outputs(2, 5, "cpu"), **inputs)
