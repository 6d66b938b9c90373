"""Discover which kernels to import: GET /kernels, then the --kernel filter.

`--kernel ID` (repeatable) keeps only those ids, in the order given; an id the source does not
list is reported, not fetched. Without it every listed kernel is imported, in the source's
order. Failing to list kernels at all is fatal: `FetchError` / `ParseError` propagate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loaders.sol_execbench.fetch import Response, Source, fetch_kernel_list
from loaders.sol_execbench.parse import KernelSummary, parse_kernel_list


@dataclass
class Discovery:
    response: Response
    listed: list[KernelSummary]
    selected: list[KernelSummary]
    problems: list[tuple[str, str]] = field(default_factory=list)  # (subject, reason)


async def discover(source: Source, *, kernel_ids: list[int] | None = None) -> Discovery:
    response = await fetch_kernel_list(source)
    listed, problems = parse_kernel_list(response.body)
    by_id = {kernel.id: kernel for kernel in listed}
    if kernel_ids:
        selected = []
        for kernel_id in dict.fromkeys(kernel_ids):
            if kernel_id in by_id:
                selected.append(by_id[kernel_id])
            else:
                problems.append((f"kernel {kernel_id}", "not listed by the source (GET /kernels)"))
    else:
        selected = list(by_id.values())
    return Discovery(response, listed, selected, problems)
