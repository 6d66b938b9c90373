"""Gemma-3-270m Q/K/V projection backward with Q/K RMSNorm (same math as SOL-ExecBench 051).

definition.py: constants, shapes, the 16 cases, FLOP and byte counts, the OperationSpec (torch-free)
reference.py:  the PyTorch reference and the fp32 correctness oracle
inputs.py:     seeded random inputs
checks.py:     argument checks (ValueError naming the tensor)
ext.py + csrc/: our CUDA extension (sm_90a)
"""
