"""torch.compile of the PyTorch reference: the "compile" implementation.

Its own module so that its code digest covers exactly what it runs (the reference and this
wrapper), not the registry that lists it.
"""

from __future__ import annotations


def compiled_reference():
    """torch.compile(reference), default mode; shapes recompile automatically."""
    import torch

    from kernels.ops.qkv_qknorm_backward.reference import reference

    return torch.compile(reference)
