"""One package per operation: definition (math, shapes, cases), reference, CUDA extension."""
