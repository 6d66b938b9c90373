"""The controlled benchmark harness, protocol "kernelindex-controlled" v1.

correctness.py: fresh seeded inputs per round, poisoned outputs, fp32 comparison, failure rules
timing.py:      CUDA-graph replay timed with events (L2 flushed before every sample); eager calls;
                wall clock on the CPU
gpus.py:        peak rates for the speed-of-light (SOL) bound
protocol.py:    the BenchmarkProtocol manifest for a device and settings
environment.py: the ExecutionEnvironment manifest of this machine
run.py:         runs implementations over a workload's cases
report.py:      BenchmarkRun manifests, raw JSON, the chart, a Markdown table
cli.py:         `kernelindex bench 051 ...` / `python -m kernels.harness.cli 051 ...`
"""
