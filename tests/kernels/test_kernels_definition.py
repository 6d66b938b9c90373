"""Definition, cases, counts, the implementation registry and the extension's argument checks
(no GPU and, for most of it, no torch)."""

from __future__ import annotations

import pytest

from kernels.implementations import IMPLEMENTATIONS, get
from kernels.ops.qkv_qknorm_backward import definition as d
from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from registry.digest import manifest_digest
from registry.manifests import make_manifest


def test_counts_match_the_issue():
    assert d.flops(1, 1) == 3_932_160
    assert d.min_bytes(1, 1) == 8_212 + 3_935_232
    assert d.min_bytes(2, 5) - d.min_bytes(1, 1) == 9 * 8_212


def test_sixteen_cases_and_spec():
    assert len(d.CASE_SHAPES) == 16
    assert d.CASE_SHAPES[4] == (1, 8192) and d.CASE_SHAPES[15] == (16, 541)
    assert all(b * s <= 64 for b, s in d.SMALL_CASE_SHAPES)
    m = make_manifest("OperationSpec", d.OPERATION_NAME, d.operation_spec())
    assert list(m.spec.inputs) == d.INPUT_NAMES and list(m.spec.outputs) == d.OUTPUT_NAMES
    assert "query_transposed" not in m.spec.inputs and "rms_norm_eps" not in m.spec.inputs
    rel = m.spec.relations[0]
    assert rel.relation == "same_math" and rel.benchmark == d.SOL_BENCHMARK
    assert "unused" in rel.notes


def test_implementation_manifests_and_digests():
    dd = manifest_digest(make_manifest("OperationSpec", d.OPERATION_NAME, d.operation_spec()))
    digests = {}
    for name, impl in IMPLEMENTATIONS.items():
        m = impl.manifest(dd)
        assert m.spec.definitionDigest == dd
        assert m.spec.code.digest == impl.code_digest()
        digests[name] = m.spec.code.digest
    assert len(set(digests.values())) == len(digests)  # variants are distinct code identities
    assert {"reference", "compile", "ext-streamnorm"} <= set(IMPLEMENTATIONS)
    with pytest.raises(ValueError, match="unknown implementation"):
        get("nope")


class FakeDevice:
    def __init__(self, type_: str, index: int = 0):
        self.type, self.index = type_, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __repr__(self):
        return f"{self.type}:{self.index}"


class FakeTensor:
    """Just enough of a tensor for the checks (they read attributes only)."""

    def __init__(self, shape, dtype, device="cuda", contiguous=True, address=4096):
        self.shape = tuple(shape)
        self.address = address
        self.dtype = f"torch.{dtype}"
        self.device = FakeDevice(device)
        self._contiguous = contiguous

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self.address

    def stride(self):
        return (1,) * len(self.shape)


def fake_inputs(b=2, s=3, **override):
    shapes = d.input_shapes(b, s)
    out = {n: FakeTensor(shapes[n], d.INPUTS[n][1]) for n in d.INPUT_NAMES}
    out.update(override)
    return out


def test_checks_accept_valid_inputs():
    assert check_inputs(fake_inputs(3, 77)) == (3, 77)
    assert check_inputs(fake_inputs(1, 1)) == (1, 1)


@pytest.mark.parametrize(
    "override,match",
    [
        ({"grad_key": FakeTensor((2, 2, 3, 256), "bfloat16")}, r"grad_key: expected shape \[2, 1, 3, 256\]"),
        ({"q_rstd": FakeTensor((2, 4, 3, 1), "bfloat16")}, "q_rstd: expected dtype float32"),
        ({"q_weight": FakeTensor((1024, 640), "float16")}, "q_weight: expected dtype bfloat16"),
        ({"k_normed": FakeTensor((2, 1, 3, 256), "bfloat16", device="cpu")}, "k_normed: expected a cuda tensor"),
        ({"grad_query": FakeTensor((2, 4, 3, 256), "bfloat16", contiguous=False)}, "grad_query: must be contiguous"),
        ({"hidden_states": FakeTensor((2, 3, 641), "bfloat16")}, "hidden_states: expected shape"),
        ({"hidden_states": FakeTensor((0, 3, 640), "bfloat16")}, "hidden_states: batch and sequence must be >= 1"),
        ({"extra": FakeTensor((1,), "bfloat16")}, "extra: not an input"),
        ({"v_weight": "not a tensor"}, "v_weight: not a tensor"),
    ],
)
def test_checks_name_the_tensor(override, match):
    with pytest.raises(ValueError, match=match):
        check_inputs(fake_inputs(**override))


def test_missing_input_is_named():
    inputs = fake_inputs()
    del inputs["k_rstd"]
    with pytest.raises(ValueError, match="k_rstd: missing"):
        check_inputs(inputs)


def test_output_checks():
    shapes = d.output_shapes(2, 3)
    outs = [FakeTensor(shapes[n], d.OUTPUTS[n][1]) for n in d.OUTPUT_NAMES]
    check_outputs(outs, 2, 3, FakeDevice("cuda"))
    bad = list(outs)
    bad[4] = FakeTensor((256,), "bfloat16")
    with pytest.raises(ValueError, match="grad_q_norm_weight: expected dtype float32"):
        check_outputs(bad, 2, 3, FakeDevice("cuda"))
    with pytest.raises(ValueError, match="outputs: expected 6"):
        check_outputs(outs[:5], 2, 3, FakeDevice("cuda"))
    check_outputs(outs, 2, 3, FakeDevice("cuda"), alignment=16)
    bad = list(outs)
    bad[1] = FakeTensor(shapes["grad_q_weight"], "bfloat16", address=4096 + 2)
    with pytest.raises(ValueError, match="grad_q_weight: output address must be 16-byte aligned"):
        check_outputs(bad, 2, 3, FakeDevice("cuda"), alignment=16)


def test_real_cpu_tensors_are_rejected_by_the_extension_checks():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(1, 2, seed=0)
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        check_inputs(inputs, "cuda")
    assert check_inputs(inputs, "cpu") == (1, 2)
    inputs["q_normed"] = inputs["q_normed"].transpose(2, 3)
    with pytest.raises(ValueError, match="q_normed: expected shape"):
        check_inputs(inputs, "cpu")
    inputs["q_normed"] = torch.empty(1, 4, 256, 2, dtype=torch.bfloat16).transpose(2, 3)
    with pytest.raises(ValueError, match="q_normed: must be contiguous"):
        check_inputs(inputs, "cpu")
