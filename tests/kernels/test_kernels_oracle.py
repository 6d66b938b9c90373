"""The GPU development check's comparison with the fp32 oracle (lab/qkv_qknorm_backward/oracle.py), on CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from kernels.harness.correctness import Tolerance  # noqa: E402
from kernels.ops.qkv_qknorm_backward.inputs import make_inputs  # noqa: E402
from kernels.ops.qkv_qknorm_backward.reference import reference, reference_fp32  # noqa: E402
from lab.qkv_qknorm_backward.oracle import check  # noqa: E402


def test_reference_passes_and_a_wrong_tile_is_caught_by_the_relative_error():
    inputs = make_inputs(2, 77, seed=3)
    ref = reference_fp32(**inputs)
    outs = list(reference(**inputs))
    passed, failures, rel = check(outs, ref, Tolerance())
    assert passed and failures == [] and max(rel.values()) < 1e-2

    # One zeroed 64x64 tile of grad_q_weight is 0.6% of its elements: the 99%-of-elements rule
    # lets it through, the relative L2 error does not.
    outs[1] = outs[1].clone()
    outs[1][:64, :64] = 0
    passed, failures, rel = check(outs, ref, Tolerance(), "(fn)")
    assert not passed and failures == []
    assert rel["grad_q_weight"] > 1e-2 and rel["grad_hidden_states"] < 1e-2
