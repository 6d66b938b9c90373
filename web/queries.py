"""The GraphQL documents the pages send: exactly what a browser-side frontend would send."""

# One fragment for a run in a list (newest runs, leaderboards).
RUN_ROW = """fragment RunRow on Run {
  digest title name rank evidenceLevel observedAt
  primaryMeasurement { statistic valueNs display }
  sourceNative { solExecBench { summary } metrics(perCase: false) { name value text } }
}"""

GROUP_SUMMARY = """fragment GroupSummary on ComparisonGroup {
  id title size family familyVersion sourceNative gpu { display }
  leader { digest title evidenceLevel primaryMeasurement { statistic display } }
}"""

# The home page's one query: a page of operations matching the search, with their groups and #1s
# (its cost does not grow with the number of operations), and the newest runs with only what
# their list shows (a run's sourceNative, rank and group cost time on every visit and are not shown).
HOME = (
    """query Home($text: String!, $first: Int!, $after: String, $newest: Int!) {
  searchDefinitions(text: $text, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { name title comparisonGroups { ...GroupSummary } }
  }
  runs(first: $newest) {
    edges { node { digest title name evidenceLevel observedAt primaryMeasurement { display }
                   environment { gpu { display } } implementation { revision } } }
  }
}
"""
    + GROUP_SUMMARY
)

GROUP = (
    """query Group($id: ID!, $first: Int!, $after: String) {
  comparisonGroup(id: $id) {
    id title key size rankedSize family familyVersion sourceNative
    rankRule { metric order noiseAware tieTest }
    gpu { display }
    definition { name title }
    workload { name caseCount }
    leader { digest title }
    records { at cause runDigest run { title name primaryMeasurement { valueNs display } } }
    runs(first: $first, after: $after) {
      edges { cursor node { ...RunRow implementation { name revision } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""
    + RUN_ROW
)

OPERATION = (
    """query Operation($name: String!) {
  definition(name: $name) {
    id digest name title description semantics tags source manifest
    axes { name type value expression description }
    inputs { name shape dtype description }
    outputs { name shape dtype description }
    relatedDefinitions { name }
    workloads { digest name title caseCount aggregation comparator cases { index axes { name value } } }
    comparisonGroups(includeRelated: true) { ...GroupSummary }
    ownGroups: comparisonGroups { gpu { product } }
  }
}
"""
    + GROUP_SUMMARY
)

JOBS = """query Jobs($definition: ID!) {
  benchmarkJobs(filter: {definition: $definition}, first: 50) {
    edges { node { state gpu implementationName attempts createdAt updatedAt failure { code message } run { digest } } }
  }
}"""

DOSSIER = """query Dossier($id: ID!) { run(id: $id) {
  id digest title name status current observedAt publishedAt evidenceLevel rank
  labels { key value }
  primaryMeasurement { statistic valueNs display }
  measurements { statistic display }
  group { id title size rankedSize catalogRuns leader { digest title } sourceNative rankRule { metric order tieTest } }
  sourceNative { sourceTitle benchmark externalReference solExecBench { summary } metrics(perCase: false) { name value text } }
  provenance { exportFile exportSha256 source sourceName license attribution url text }
  identity { comparisonKey externalReference sourceTitle protocolDigest workloadDigest environmentDigest implementationDigest }
  implementation { name project revision architectures code { repository commit path paths digest url } }
  correctness { statement policy }
  workload { description caseCount comparator aggregation definition { name title } }
  protocol { harness { name version } timer primaryStatistic correctnessReference comparabilityFamily notes manifest }
  environment { gpu { display } driver cuda libraries { key value } manifest }
  artifacts { name uri mediaType }
  cases { index axes { key value } status latency { statistic valueNs display } sampleCount samplesNs solScore }
  attestations(first: 100) { edges { node {
    author verified attestedAt predicateType matchesCohort
    environment { display host }
    aggregate { statistic display ratioToRun }
  } } }
  notes(first: 100) { edges { node { text author authorScope createdAt } } }
  supersededBy { digest }
  manifest
  citation { permalink digest accessedAt text }
} }"""

# Compare: up to three runs by ID in one request.
COMPARE = """query Compare($ids: [ID!]!) { nodes(ids: $ids) { ... on Run {
  digest title name rank evidenceLevel
  implementation { revision }
  primaryMeasurement { statistic valueNs display }
  protocol { primaryStatistic }
  environment { gpu { display } }
  workload { digest name caseCount definition { name } }
  group { id title }
  cases { index axes { key value } status latency { statistic valueNs display } }
} } }"""

# The operation page's form: resolveKernel for the asked shape (and GPU).
RESOLVE_COHORT = """fragment ResolvedCohort on CohortMatch {
  caseIndex statistic runCount group { id title gpu { display } }
  runs(first: 5) { caseRank status display runDigest run { title implementation { name } evidenceLevel } }
}"""

RESOLVE = (
    """query Resolve($operation: String!, $axes: [AxisValueInput!]!, $gpu: String) {
  resolveKernel(operation: $operation, axes: $axes, gpu: $gpu) {
    measured asked { name value }
    exact { ...ResolvedCohort }
    nearest { kind axis othersMatch label axes { name value } cohorts { ...ResolvedCohort } }
    userErrors { field message code }
  }
}
"""
    + RESOLVE_COHORT
)

REPORT_ISSUE = """mutation ReportIssue($input: RunReportIssueInput!) {
  runReportIssue(input: $input) { report { id category createdAt } userErrors { field message code } }
}"""

# /serving: one page of serving runs (filtered) and every value each filter can take, in one
# document. Serving runs have no rank: the list is newest observation first.
SERVING_RUNS = """query ServingRuns($filter: ServingRunFilter, $first: Int!, $after: String) {
  servingRuns(filter: $filter, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      digest title name observedAt round division category scenario benchmark externalId status qualityPolicy
      topology { acceleratorModel acceleratorsPerNode nodeCount totalAccelerators }
      measurements { metric statistic unit value display }
      manifests { kind digest }
      model { name title }
      configuration { system dtype stack { project version } }
      workload { title }
      sourceUrls
      provenance { exportFile exportSha256 source sourceName license attribution text }
    }
  }
  servingRunFacets {
    totalCount
    models { value title count } scenarios { value title count } accelerators { value title count }
    systems { value title count } rounds { value title count }
  }
}"""
