"""The domain, with no I/O: manifests, digests, evidence levels, comparison keys, ranking."""
