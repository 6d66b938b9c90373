"""The GraphQL documents the MCP tools send: each tool is one of these, through client/api.py."""

RUN_SUMMARY = """fragment RunSummary on Run {
  id digest title name status current rank evidenceLevel observedAt publishedAt
  primaryMeasurement { statistic valueNs display }
  implementation { id digest name project revision }
  environment { gpu { product architecture display } }
  group { id title }
  citation { permalink }
}"""

GROUP_SUMMARY = """fragment GroupSummary on ComparisonGroup {
  id key title size rankedSize family familyVersion sourceNative
  gpu { product architecture display }
  rankRule { metric order noiseAware tieTest }
  leader { id digest title evidenceLevel primaryMeasurement { statistic valueNs display } implementation { name } citation { permalink } }
}"""

SEARCH = (
    """query Search($text: String!, $first: Int!, $after: String) {
  searchDefinitions(text: $text, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { id digest name title description tags comparisonGroups { ...GroupSummary } }
  }
}
"""
    + GROUP_SUMMARY
)

OPERATION = (
    """query Operation($name: String!) {
  definition(name: $name) {
    id digest name title description semantics tags source referenceDigest
    axes { name type value expression description }
    inputs { name shape dtype description }
    outputs { name shape dtype description }
    relatedDefinitions { id name }
    workloads { id digest name title caseCount aggregation comparator cases { index axes { name value } } }
    comparisonGroups { ...GroupSummary }
  }
}
"""
    + GROUP_SUMMARY
)


def _resolved(run: str) -> str:
    """The fragments of a resolution; `run`: what to ask of each ranked run beyond its digest."""
    return (
        """fragment Cohort on CohortMatch {
  caseIndex workloadDigest statistic runCount
  group { id title gpu { product architecture } }
  runs(first: $first) { caseRank groupRank status statistic latencyNs display runDigest permalink %s }
}
fragment Resolution on KernelResolution {
  measured gpu asked { name value } operation { id name }
  exact { ...Cohort }
  nearest { kind axis othersMatch label axes { name value } cohorts { ...Cohort } }
  userErrors { field message code }
}"""
        % run
    )


RESOLVED = _resolved("run { id title evidenceLevel implementation { id name } }")
# A batch of 20 asks each run in its short form (no nested run), to stay inside the cost limit.
RESOLVED_SHORT = _resolved("")

RESOLVE = (
    """query Resolve($operation: String!, $axes: [AxisValueInput!]!, $gpu: String, $statistic: String, $first: Int!) {
  resolveKernel(operation: $operation, axes: $axes, gpu: $gpu, statistic: $statistic) { ...Resolution }
}
"""
    + RESOLVED
)

RESOLVE_MANY = (
    """query ResolveMany($requests: [KernelRequest!]!, $first: Int!) {
  resolveKernels(requests: $requests) { ...Resolution }
}
"""
    + RESOLVED_SHORT
)

NODE_IMPLEMENTATION = """query Implementation($id: ID!) { node(id: $id) { __typename ... on Implementation {
  id digest name project revision definitionDigest source externalId architectures
  code { repository commit path paths entryPoint digest language url }
  manifest
} } }"""

RUN = """query Run($id: ID!) { run(id: $id) {
  id digest title name status current rank evidenceLevel observedAt publishedAt
  labels { key value }
  primaryMeasurement { statistic valueNs display }
  measurements { statistic valueNs display }
  aggregates
  identity { comparisonKey source externalId externalReference protocolDigest workloadDigest environmentDigest implementationDigest }
  sourceNative { source benchmark externalId externalReference metrics(perCase: false) { name value text } }
  correctness { status statement policy rounds }
  definition { id name }
  implementation { id digest name project revision architectures code { repository commit path digest url } }
  workload { id digest name caseCount aggregation }
  protocol { id digest name harness { name version } timer primaryStatistic }
  environment { id digest gpu { product architecture display } driver cuda }
  group { id title size rankedSize }
  cases { index axes { key value } status latency { statistic valueNs display } sampleCount }
  supersedes { id digest }
  supersededBy { id digest }
  citation { permalink digest text }
} }"""

COMPARE = """query Compare($ids: [ID!]!) { nodes(ids: $ids) { __typename ... on Run {
  id digest title rank status evidenceLevel
  primaryMeasurement { statistic valueNs display }
  implementation { name }
  environment { gpu { product architecture } }
  workload { digest }
  group { id title }
  cases { index axes { key value } status latency { statistic valueNs } }
  citation { permalink }
} } }"""

RUNS = (
    """query Runs($filter: RunFilter, $first: Int!, $after: String) {
  runs(filter: $filter, first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { ...RunSummary }
  }
}
"""
    + RUN_SUMMARY
)

DEFINITION_ID = """query DefinitionId($name: String!) { definition(name: $name) { id } }"""

# Every operation's groups, a page of searchDefinitions at a time (RECORDS_PAGE of them: the
# group summaries of 50 operations cost about 3,550, under the API's limit of 5,000).
RECORDS_PAGE = 50
RECORDS = (
    """query Records($first: Int!, $after: String) { searchDefinitions(first: $first, after: $after) {
  pageInfo { hasNextPage endCursor }
  nodes { id name title comparisonGroups { ...GroupSummary } }
} }
"""
    + GROUP_SUMMARY
)

# One operation's records: only its groups are read.
OPERATION_RECORDS = (
    """query OperationRecords($name: String!) { definition(name: $name) { id name title comparisonGroups { ...GroupSummary } } }
"""
    + GROUP_SUMMARY
)

GROUP = (
    """query Group($id: ID!, $first: Int!) { comparisonGroup(id: $id) {
  ...GroupSummary
  definition { id name } workload { id digest name caseCount }
  runs(first: $first) { pageInfo { hasNextPage endCursor } nodes { ...RunSummary } }
} }
"""
    + GROUP_SUMMARY
    + RUN_SUMMARY
)

GPUS_PAGE = 100
GPUS = """query Gpus($first: Int!, $after: String) { searchDefinitions(first: $first, after: $after) {
  pageInfo { hasNextPage endCursor }
  nodes { name comparisonGroups { size gpu { product architecture display } } }
} }"""

ATTESTATION = """query Attestation($id: ID!) { node(id: $id) { __typename ... on Attestation {
  id digest subjectDigest predicateType author keyId verified attestedAt measurement envelope
} } }"""

RERUNS = """query Reruns($id: ID!) { run(id: $id) {
  id digest title citation { permalink }
  definition { id name }
  implementation { id name
    jobs(first: 50) { nodes { id state gpu attempts createdAt updatedAt failure { code message }
      definition { name } run { id digest evidenceLevel status citation { permalink } } } } }
  attestations(first: 100) { nodes { id digest author keyId verified attestedAt predicateType measurement } }
} }"""

RECORD_CHANGES = """query Changes($first: Int!, $since: DateTime, $operation: String, $group: ID) {
  recordChanges(first: $first, since: $since, operation: $operation, group: $group) {
    seq at cause runDigest previousDigest
    run { id title primaryMeasurement { statistic valueNs display } implementation { name } }
    group { id title gpu { product architecture } definition { name } }
  }
}"""

SERVING_RUNS = """query ServingRuns($filter: ServingRunFilter, $first: Int!, $after: String) {
  servingRuns(filter: $filter, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id digest title observedAt round scenario benchmark externalId status qualityPolicy
      topology { acceleratorVendor acceleratorModel acceleratorsPerNode nodeCount totalAccelerators }
      measurements { metric statistic unit value }
      manifests { kind digest }
      model { name title }
      configuration { system dtype stack { project version } }
      workload { name title }
      sourceUrls
      provenance { exportFile exportSha256 source license attribution }
    }
  }
}"""
