"""Gemma-3-270m Q/K/V projection backward with Q/K RMSNorm (same math as SOL-ExecBench 051).

definition.py: constants, shapes, the 16 cases, FLOP and byte counts, the OperationSpec (torch-free)
reference.py:  the PyTorch reference and the fp32 correctness oracle
inputs.py:     seeded random inputs
checks.py:     the argument checks of every implementation (ValueError naming the tensor)
compiled.py:   torch.compile of the reference
ext_*.py + csrc/: our CUDA implementations, built by nvcc_library.py
torch_op.py:   the torch extension: torch.ops.kernelindex.qkv_qknorm_backward(_out), every CUDA implementation
(kernels/README.md maps each implementation to its files)
"""
