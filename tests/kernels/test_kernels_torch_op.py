"""The torch extension on the CPU: torch.ops.kernelindex.qkv_qknorm_backward(_out) exist, their
fake (meta) kernels give the outputs' shapes and dtypes without running anything, torch.compile
traces a call with fullgraph=True (no graph break), opcheck passes on the CPU reference, and the
harness's callables of the CUDA implementations go through the op."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from kernels.ops.qkv_qknorm_backward import torch_op  # noqa: E402
from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES, OUTPUT_NAMES, OUTPUTS, output_shapes  # noqa: E402
from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs  # noqa: E402
from kernels.ops.qkv_qknorm_backward.reference import reference  # noqa: E402

CUDA_IMPLS = ("ext-streamnorm", "ext-portable", "ext-hybrid", "ext-fused")


def _args(inputs):
    return tuple(inputs[n] for n in INPUT_NAMES)


def test_the_ops_exist_under_the_kernelindex_namespace():
    op = torch.ops.kernelindex.qkv_qknorm_backward.default
    assert str(op._schema).startswith("kernelindex::qkv_qknorm_backward(str impl, str impl_mode, Tensor grad_query")
    assert str(op._schema).endswith("-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")
    out = torch.ops.kernelindex.qkv_qknorm_backward_out.default
    assert "!) grad_hidden_states" in str(out._schema) and "Tensor q_rstd" in str(out._schema) and str(out._schema).endswith("-> ()")


def test_reference_through_the_op_equals_the_reference():
    inputs = make_inputs(2, 5, seed=3)
    outs = torch.ops.kernelindex.qkv_qknorm_backward("reference", "auto", *_args(inputs))
    for got, want in zip(outs, reference(**inputs)):
        assert torch.equal(got, want)
    # the six outputs are separate tensors (a custom op may not return aliases)
    assert len({o.untyped_storage().data_ptr() for o in outs}) == 6


def test_out_op_writes_the_callers_tensors():
    inputs = make_inputs(1, 7, seed=4)
    outs = allocate_outputs(1, 7, "cpu")
    torch.ops.kernelindex.qkv_qknorm_backward_out("reference", "auto", *outs, *_args(inputs))
    for got, want in zip(outs, reference(**inputs)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("impl", CUDA_IMPLS)
def test_fake_kernel_gives_shapes_and_dtypes_without_running(impl):
    from torch._subclasses.fake_tensor import FakeTensorMode

    inputs = make_inputs(3, 11, seed=5)
    with FakeTensorMode() as mode:
        outs = torch.ops.kernelindex.qkv_qknorm_backward(impl, "auto", *(mode.from_tensor(t) for t in _args(inputs)))
    shapes = output_shapes(3, 11)
    for name, out in zip(OUTPUT_NAMES, outs):
        assert tuple(out.shape) == shapes[name]
        assert str(out.dtype) == "torch." + OUTPUTS[name][1]


@pytest.mark.parametrize("impl", CUDA_IMPLS)
def test_torch_compile_traces_every_cuda_implementation_without_a_graph_break(impl):
    """fullgraph=True raises on a graph break; the captured graph holds the op once. The backend
    only records the graph (a CUDA kernel cannot run here): the fake kernel is what tracing used."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return lambda *args: tuple(torch.zeros(1) for _ in range(2))

    def fn(*args):
        outs = torch.ops.kernelindex.qkv_qknorm_backward(impl, "auto", *args)
        return outs[0] * 2.0, outs[4] + outs[5]

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=capture, dynamic=False)
    compiled(*_args(make_inputs(2, 9, seed=6)))
    assert len(graphs) == 1
    calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "kernelindex" in str(n.target)]
    assert len(calls) == 1 and calls[0].args[:2] == (impl, "auto")


def test_torch_compile_runs_the_op_on_the_cpu_reference():
    torch._dynamo.reset()
    inputs = make_inputs(2, 6, seed=7)

    def fn(*args):
        return torch.ops.kernelindex.qkv_qknorm_backward("reference", "auto", *args)

    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    for got, want in zip(compiled(*_args(inputs)), reference(**inputs)):
        assert torch.equal(got, want)


def test_opcheck_on_the_cpu_reference():
    inputs = make_inputs(1, 5, seed=8)
    torch.library.opcheck(torch.ops.kernelindex.qkv_qknorm_backward.default, ("reference", "auto", *_args(inputs)))
    outs = allocate_outputs(1, 5, "cpu", fill=0.0)
    torch.library.opcheck(torch.ops.kernelindex.qkv_qknorm_backward_out.default, ("reference", "auto", *outs, *_args(inputs)))


def test_a_cuda_implementation_on_cpu_tensors_names_the_tensor():
    inputs = make_inputs(1, 3, seed=9)
    with pytest.raises(ValueError, match="grad_query: expected a cuda tensor"):
        torch.ops.kernelindex.qkv_qknorm_backward("ext-portable", "auto", *_args(inputs))
    with pytest.raises(ValueError, match="unknown implementation .no-such-impl."):
        torch.ops.kernelindex.qkv_qknorm_backward("no-such-impl", "auto", *_args(inputs))


def test_the_harness_calls_cuda_implementations_through_the_op(monkeypatch):
    """Implementation.load()/load_out() of a CUDA entry dispatch through torch.ops to the entry's
    destination-passing function (here replaced by a stub that records its call)."""
    from kernels.implementations import get

    seen = []

    def stub(outputs, *, mode, **inputs):
        seen.append((mode, sorted(inputs)))
        for o in outputs:
            o.fill_(1)

    monkeypatch.setitem(torch_op._resolved, "ext-hybrid", (stub, None))
    inputs = make_inputs(1, 4, seed=10)
    impl = get("ext-hybrid")
    outs = impl.load()(**inputs)
    assert len(outs) == 6 and all(bool((o == 1).all()) for o in outs)
    dst = allocate_outputs(1, 4, "cpu")
    impl.load_out()(dst, **inputs)
    assert all(bool((o == 1).all()) for o in dst)
    assert seen == [("auto", sorted(INPUT_NAMES))] * 2


def test_reference_and_compile_are_not_routed_through_the_op():
    from kernels.implementations import get

    assert get("reference").load() is reference
    assert get("compile").load_out() is None


def test_the_ops_table_is_the_registrys():
    """torch_op keeps its own table (no registry import where the op runs): the same entry points."""
    from kernels.implementations import IMPLEMENTATIONS

    registered = {n: i.out_entry_point for n, i in IMPLEMENTATIONS.items() if i.language == "cuda"}
    assert registered == torch_op.OUT_ENTRY_POINTS
    assert IMPLEMENTATIONS["reference"].entry_point == torch_op.REFERENCE


def test_an_unknown_implementation_fails_while_tracing():
    from torch._subclasses.fake_tensor import FakeTensorMode

    inputs = make_inputs(1, 3, seed=11)
    with FakeTensorMode() as mode, pytest.raises(ValueError, match="unknown implementation 'ext-nope'"):
        torch.ops.kernelindex.qkv_qknorm_backward("ext-nope", "auto", *(mode.from_tensor(t) for t in _args(inputs)))
