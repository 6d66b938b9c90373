"""Publish: a GPU MODE run as a `store.publish.Bundle`; batching, snapshots first and outcome
counting are `loaders.common.publish`'s."""

from __future__ import annotations

from loaders.gpumode.normalize import RunManifests
from store.bundle import Bundle


def to_bundle(item: RunManifests) -> Bundle:
    return Bundle(
        run=item.run,
        definition=item.definition,
        workload=item.workload,
        protocol=item.protocol,
        environment=item.environment,
        implementation=item.implementation,
        source_record=item.source_record,
    )
