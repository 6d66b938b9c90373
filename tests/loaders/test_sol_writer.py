"""The background batch writer: order, back-pressure and errors (no database needed)."""

from __future__ import annotations

import asyncio

import pytest

from loaders.sol_execbench.publish import Batch, BatchWriter


async def test_batches_are_written_in_order_while_the_reader_goes_on():
    written: list[int] = []

    async def slow_write(db, batch, tally):
        await asyncio.sleep(0.01)
        written.append(len(batch.runs))

    async with BatchWriter(None, write=slow_write) as writer:
        for size in range(1, 6):
            await writer.put(Batch(runs=[object()] * size))
    assert written == [1, 2, 3, 4, 5]


async def test_a_failing_write_is_raised_to_the_reader():
    async def failing_write(db, batch, tally):
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError, match="database went away"):
        async with BatchWriter(None, write=failing_write) as writer:
            for _ in range(5):
                await writer.put(Batch())


async def test_a_reader_error_stops_the_writer():
    started = asyncio.Event()

    async def endless_write(db, batch, tally):
        started.set()
        await asyncio.sleep(60)

    with pytest.raises(ValueError, match="bad kernel list"):
        async with BatchWriter(None, write=endless_write) as writer:
            await writer.put(Batch())
            await started.wait()
            raise ValueError("bad kernel list")
