"""Publish: a SOL-ExecBench run as a `store.publish.Bundle`; batching, snapshots first and
outcome counting are `loaders.common.publish`'s."""

from __future__ import annotations

from loaders.sol_execbench.normalize import RunManifests
from store.bundle import Bundle


def to_bundle(item: RunManifests) -> Bundle:
    return Bundle(
        run=item.run,
        definition=item.kernel.definition,
        workload=item.kernel.workload,
        protocol=item.protocol,
        environment=item.environment,
        implementation=item.implementation,
        source_record=item.source_record,
    )
