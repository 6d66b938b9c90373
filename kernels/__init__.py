"""GPU side of KernelIndex: operation definitions, reference implementations, CUDA extensions and
the controlled benchmark harness. Imports torch lazily where it can; imports only `registry` of ours.
"""
