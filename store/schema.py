"""Collections, their `$jsonSchema` validators and indexes. `ensure_schema` is idempotent."""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import CollectionInvalid

# One collection per manifest kind.
COLLECTION_BY_KIND = {
    "OperationSpec": "definitions",
    "WorkloadSuite": "workloads",
    "ImplementationRevision": "implementations",
    "BenchmarkProtocol": "protocols",
    "ExecutionEnvironment": "environments",
    "BenchmarkRun": "runs",
    "Attestation": "attestations",
}
KIND_BY_COLLECTION = {collection: kind for kind, collection in COLLECTION_BY_KIND.items()}

DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$"


def _manifest_validator(kind: str | tuple[str, ...], extra_required: tuple[str, ...] = (), extra_props: dict | None = None) -> dict:
    return {
        "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "apiVersion", "kind", "metadata", "spec", "storedAt", *extra_required],
            "properties": {
                "_id": {"bsonType": "string", "pattern": DIGEST_PATTERN},
                "apiVersion": {"enum": ["kernelindex.dev/v1alpha1"]},
                "kind": {"enum": [kind] if isinstance(kind, str) else list(kind)},
                "metadata": {"bsonType": "object", "required": ["name"]},
                "spec": {"bsonType": "object"},
                "storedAt": {"bsonType": "date"},
                **(extra_props or {}),
            },
        }
    }


_RUN_FIELDS = {
    "definitionDigest": {"bsonType": "string", "pattern": DIGEST_PATTERN},
    "groupKey": {"bsonType": "string", "pattern": DIGEST_PATTERN},
    "current": {"bsonType": "bool"},
    "status": {"enum": ["passed", "incorrect", "failed", "disqualified", "pending", "cancelled"]},
    "evidenceLevel": {"enum": ["Reported", "Reproducible", "KernelIndex Verified", "Independently Replicated"]},
    "seq": {"bsonType": ["int", "long"]},
}

VALIDATORS: dict[str, dict] = {collection: _manifest_validator(kind) for kind, collection in COLLECTION_BY_KIND.items()}
# The v1alpha1 format has two workload kinds: one case (the catalog's) or a suite of them.
VALIDATORS["workloads"] = _manifest_validator(("WorkloadSuite", "WorkloadCase"))
# What the KernelIndex catalog export brings beside the kernel kinds (store/catalog.py).
for _collection, _kind in (
    ("projects", "SoftwareProject"),
    ("model_revisions", "ModelRevision"),
    ("serving_stack_revisions", "ServingStackRevision"),
    ("serving_configurations", "ServingConfiguration"),
    ("serving_workloads", "ServingWorkload"),
    ("serving_runs", "ServingRun"),
):
    VALIDATORS[_collection] = _manifest_validator(_kind)
VALIDATORS["catalog_imports"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "export", "rows", "importedAt"],
        "properties": {"_id": {"bsonType": "string", "pattern": "^[0-9a-f]{64}$"}, "importedAt": {"bsonType": "date"}},
    }
}
VALIDATORS["bundled_data_loads"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "fingerprint", "loadedAt"],
        "properties": {"fingerprint": {"bsonType": "string", "pattern": "^[0-9a-f]{64}$"}, "loadedAt": {"bsonType": "date"}},
    }
}
VALIDATORS["record_history"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "comparisonKey", "runDigest", "cause", "at"],
        "properties": {
            "comparisonKey": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "runDigest": {"bsonType": "string", "pattern": DIGEST_PATTERN},
        },
    }
}
VALIDATORS["runs"] = _manifest_validator(
    "BenchmarkRun",
    ("definitionDigest", "groupKey", "current", "status", "evidenceLevel", "seq"),
    _RUN_FIELDS,
)
VALIDATORS["attestations"] = _manifest_validator(
    "Attestation",
    ("seq", "payloadDigest"),
    {"seq": {"bsonType": ["int", "long"]}, "payloadDigest": {"bsonType": "string", "pattern": DIGEST_PATTERN}},
)
VALIDATORS["notes"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "runDigest", "text", "author", "createdAt", "seq"],
        "properties": {
            "runDigest": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "text": {"bsonType": "string", "minLength": 1, "maxLength": 2000},
            "author": {"bsonType": "object", "required": ["name", "keyId", "scope"]},
            "createdAt": {"bsonType": "date"},
            "seq": {"bsonType": ["int", "long"]},
        },
    }
}
VALIDATORS["issue_reports"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "runDigest", "category", "text", "createdAt", "state"],
        "properties": {
            "runDigest": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "category": {"bsonType": "string"},
            "text": {"bsonType": "string", "minLength": 1, "maxLength": 2000},
            "reporter": {"bsonType": ["object", "null"]},
            "createdAt": {"bsonType": "date"},
            "state": {"enum": ["open", "closed"]},
        },
    }
}
VALIDATORS["comparison_groups"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "definitionDigest", "workloadDigest", "family", "familyVersion", "gpu", "rankRule", "size"],
        "properties": {
            "_id": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "size": {"bsonType": ["int", "long"], "minimum": 0},
        },
    }
}
VALIDATORS["source_snapshots"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "source", "url", "fetchedAt", "sha256", "body"],
        "properties": {
            "_id": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "body": {"bsonType": "binData"},
            "fetchedAt": {"bsonType": "date"},
        },
    }
}
# Where the code behind a code digest lives in git (registry/code.py), for revisions whose
# manifests predate `code.commit`; keyed by the code digest.
VALIDATORS["code_pins"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "repository", "commit", "paths", "entryPoint"],
        "properties": {
            "_id": {"bsonType": "string", "pattern": DIGEST_PATTERN},
            "commit": {"bsonType": "string", "pattern": "^[0-9a-f]{40}$"},
            "paths": {"bsonType": "array", "minItems": 1, "items": {"bsonType": "string"}},
        },
    }
}
VALIDATORS["events"] = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["seq", "type", "at"],
        "properties": {"seq": {"bsonType": ["int", "long"]}, "type": {"bsonType": "string"}},
    }
}

INDEXES: dict[str, list[IndexModel]] = {
    "runs": [
        # Only the current run of an external record holds its (source, externalId) in a cohort;
        # superseded runs are kept but step aside. The cohort is part of it because one source
        # record may be measured in several cohorts (a GPU MODE submission's leaderboard score and
        # each of its cases are runs of their own in the KernelIndex catalog).
        IndexModel(
            [("source", ASCENDING), ("externalId", ASCENDING), ("groupKey", ASCENDING)],
            name="current_source_record",
            unique=True,
            partialFilterExpression={"current": True, "externalId": {"$exists": True}},
        ),
        IndexModel([("seq", DESCENDING)], name="seq", unique=True),
        IndexModel([("groupKey", ASCENDING), ("rankOrder", ASCENDING), ("seq", ASCENDING)], name="group_rank"),
        # runs(filter: {definition}) newest first: one index range per window of seq values
        # (store/queries.py runs_page); it also serves a lookup by definition alone.
        IndexModel([("definitionDigest", ASCENDING), ("seq", DESCENDING)], name="definition_seq"),
        IndexModel([("externalId", ASCENDING)], name="external_id"),
        # SecantusDB serves a filter of several fields from an index on one of them (the others
        # checked per document) and scans every run otherwise: a publish of our runs looks up the
        # older dialect's runs by name (store/source_records.py) and a verified result the runs of
        # its implementation (store/verified_results.py), each ~0.4 s at the bundled data's 7,885
        # runs without these.
        IndexModel([("metadata.name", ASCENDING)], name="run_name"),
        IndexModel([("spec.implementationDigest", ASCENDING)], name="implementation"),
    ],
    "events": [IndexModel([("seq", ASCENDING)], name="seq", unique=True)],
    # resolveKernel and definition(name:) look a definition up by its name.
    "definitions": [
        IndexModel([("spec.name", ASCENDING)], name="name"),
        # The catalog's (v1alpha1) operations have no spec.name: definition(name:) finds them by this.
        IndexModel([("metadata.name", ASCENDING)], name="metadata_name"),
        # A SOL-ExecBench operation in the format is titled by its benchmark name, which our
        # definitions' relations name (store.queries.related_definitions).
        IndexModel([("metadata.title", ASCENDING)], name="metadata_title"),
        # An operation page's related definitions: those that name this one (SecantusDB plans an
        # `$or` as a collection scan, so store.queries.related_definitions asks each branch alone).
        IndexModel([("spec.relations.benchmark", ASCENDING)], name="relation_benchmark"),
        IndexModel([("spec.relations.definitionDigest", ASCENDING)], name="relation_digest"),
        # Ours in the v1alpha1 format name the related benchmark in a label.
        IndexModel([("metadata.labels.related_benchmark", ASCENDING)], name="related_benchmark_label"),
    ],
    # An operation's workload suites: ours name their definition in spec.definitionDigest, the
    # catalog's (v1alpha1) beside the manifest in definitionDigest. Without these the operation
    # page scanned every workload (5,629 with the bundled catalog) twice.
    "workloads": [
        IndexModel([("spec.definitionDigest", ASCENDING)], name="spec_definition"),
        IndexModel([("definitionDigest", ASCENDING)], name="definition"),
    ],
    "record_history": [IndexModel([("comparisonKey", ASCENDING), ("at", DESCENDING)], name="group_at")],
    "comparison_groups": [IndexModel([("definitionDigest", ASCENDING)], name="definition")],
    # A leaderboard's write finds the rows its group had (store/run_rows.py).
    "run_rows": [IndexModel([("groupKey", ASCENDING)], name="group")],
    "source_snapshots": [IndexModel([("source", ASCENDING), ("url", ASCENDING)], name="source_url")],
    "jobs": [
        IndexModel([("requestedBy", ASCENDING), ("idempotencyKey", ASCENDING)], name="idempotency", unique=True),
        IndexModel([("state", ASCENDING), ("gpu", ASCENDING), ("createdAt", ASCENDING)], name="queue"),
        IndexModel([("createdAt", DESCENDING), ("_id", DESCENDING)], name="newest"),  # benchmarkJobs' keyset
        # Definition.jobs and Implementation.jobs (the cross-subgraph query): one definition's or
        # revision's jobs, not a scan of every job.
        IndexModel([("definitionDigest", ASCENDING), ("createdAt", DESCENDING), ("_id", DESCENDING)], name="definition_newest"),
        IndexModel(
            [("expected.implementationDigest", ASCENDING), ("createdAt", DESCENDING), ("_id", DESCENDING)], name="implementation_newest"
        ),
    ],
    "attestations": [
        IndexModel([("spec.subjectDigest", ASCENDING), ("seq", ASCENDING)], name="subject"),
        # The same signed statement from the same partner is one attestation, however often sent.
        IndexModel(
            [("payloadDigest", ASCENDING), ("spec.subjectDigest", ASCENDING), ("partnerKeyId", ASCENDING)],
            name="payload",
            unique=True,
        ),
    ],
    "notes": [IndexModel([("runDigest", ASCENDING), ("seq", ASCENDING)], name="run_seq")],
    # Record history (store/records.py): a group's #1s, every change, an operation's changes.
    "records": [
        IndexModel([("groupKey", ASCENDING), ("seq", ASCENDING)], name="group_seq"),
        IndexModel([("seq", DESCENDING)], name="seq", unique=True),
        IndexModel([("definitionDigest", ASCENDING), ("seq", DESCENDING)], name="definition_seq"),
    ],
    "issue_reports": [IndexModel([("runDigest", ASCENDING), ("createdAt", DESCENDING)], name="run_newest")],
    # Counters of store/issue_reports.py's rate limits, dropped an hour after their window ends.
    "rate_limits": [IndexModel([("expiresAt", ASCENDING)], name="expires", expireAfterSeconds=0)],
}


async def ensure_schema(db: AsyncDatabase) -> None:
    existing = set(await db.list_collection_names())
    for name, validator in VALIDATORS.items():
        if name in existing:
            await db.command("collMod", name, validator=validator)
        else:
            try:
                await db.create_collection(name, validator=validator)
            except CollectionInvalid:
                pass  # created concurrently by another process
    # Replaced by current_source_record (the cohort joined the key) and by definition_seq (seq
    # joined the definition): drop them where they are left.
    if "runs" in existing:
        for stale in {"current_external_id", "definition"} & set(await db.runs.index_information()):
            await db.runs.drop_index(stale)
    for name, indexes in INDEXES.items():
        await db[name].create_indexes(indexes)
