"""The federation gateway: Hive Gateway's config and plugins (`gateway.config.mjs`), the
supergraph composer (`compose.mjs`), their pinned npm packages, and the process stack that
`kernelindex serve` starts and supervises around them (`stack.py`)."""
