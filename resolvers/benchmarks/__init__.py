"""The benchmarks subgraph's roots: controlled reruns (BenchmarkJob), authenticated and
write-heavy, talking to runners; it contributes `jobs` to Definition and Implementation."""
