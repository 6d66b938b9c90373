"""How long a claimed benchmark job stays with its runner before it returns to the queue.

One default for every way of claiming: `benchmarkJobClaim` without `leaseSeconds`, and the
`--lease` of `kernelindex runner` and `kernelindex jobs claim`. It is an hour because an offline
claim (`jobs claim --out`) cannot renew: its job travels to a GPU host and runs there. The online
runner renews at a third of its lease, so the hour only bounds how long a dead runner's job waits.
"""

DEFAULT_LEASE_SECONDS = 3600
MAX_LEASE_SECONDS = 24 * 3600
