"""The `kernelindex` command line.

Every command prints one clear line on failure (`error: ...`) and exits non-zero; no tracebacks
for expected problems.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
from pathlib import Path

from gateway.bootstrap import BootstrapError
from gateway.embedded import EmbeddedDatabaseError, EmbeddedServer, _port_taken, clear_address, home, write_address
from gateway.settings import Settings
from registry.manifests import ManifestError

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"


class CommandError(Exception):
    """A failure to report as one line."""


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


# ---------------------------------------------------------------- serve


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from gateway.app import create_app
    from gateway.bootstrap import bootstrap

    if _port_taken(args.host, args.port):
        return fail(f"port {args.port} on {args.host} is already in use; choose another with --port")
    server = None
    # uvicorn stops gracefully on SIGINT/SIGTERM and then re-raises the signal; these handlers
    # turn that (or a signal during start-up) into an orderly return, so the database is stopped.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_stop)
    if settings.mongodb_uri:
        uri = settings.mongodb_uri
    else:
        server = EmbeddedServer(
            home() / "db", port=args.db_port, log_path=home() / "secantusd.log", startup_timeout_s=args.db_timeout
        )
        uri = server.start()
        write_address(server)
        print(f"embedded database on {uri} (data in {home() / 'db'})", file=sys.stderr)
    try:
        if not args.no_data:
            asyncio.run(bootstrap(uri, settings, DATA_DIR))
        # No permessage-deflate: it costs about half of a subscription delivery's CPU.
        config = uvicorn.Config(
            create_app(uri, settings), host=args.host, port=args.port, log_level="info", ws_per_message_deflate=False
        )
        web = uvicorn.Server(config)
        died: list[int] = []
        if server is not None:
            threading.Thread(target=_watch_child, args=(server, web, died), daemon=True).start()
        print(f"KernelIndex GraphQL on http://{args.host}:{args.port}/graphql", file=sys.stderr)
        try:
            web.run()
        except _Stop:
            pass
        if died:
            return fail(f"the embedded database exited unexpectedly (code {died[0]}); see {home() / 'secantusd.log'}")
        return 0
    except _Stop:
        return 0
    finally:
        if server is not None:
            server.stop()
            clear_address()


class _Stop(Exception):
    """A stop signal arrived."""


def _raise_stop(signum, frame) -> None:
    raise _Stop


def _watch_child(server: EmbeddedServer, web, died: list[int]) -> None:
    while not web.should_exit:
        code = server.process.poll()
        if code is not None:
            died.append(code)
            web.should_exit = True
            return
        threading.Event().wait(0.5)


# ---------------------------------------------------------------- load / export


def cmd_load(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.database import database_uri
    from gateway.manifest_files import read_manifests

    manifests, problems = [], []
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            problems.append((name, "no such file"))
            continue
        try:
            manifests += read_manifests(path)
        except ManifestError as error:
            problems += error.problems
    if problems:
        raise ManifestError(problems)

    async def publish(uri: str):
        from store.client import make_client
        from store.manifest_set import publish_set
        from store.schema import ensure_schema

        client = make_client(uri)
        try:
            db = client[settings.database]
            await ensure_schema(db)
            return await publish_set(db, manifests)
        finally:
            await client.close()

    with database_uri(settings) as uri:
        report = asyncio.run(publish(uri))
    counts = {"new": 0, "unchanged": 0, "superseded": 0}
    for outcome in report.runs:
        counts[outcome.status] += 1
    print(
        f"loaded {len(manifests)} manifests: objects {report.objects_new} new, {report.objects_unchanged} unchanged; "
        f"runs {counts['new']} new, {counts['unchanged']} unchanged, {counts['superseded']} superseded"
    )
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.database import database_uri
    from store.schema import COLLECTION_BY_KIND

    kinds = [args.kind] if args.kind else list(COLLECTION_BY_KIND)
    if args.kind and args.kind not in COLLECTION_BY_KIND:
        return fail(f"--kind: {args.kind!r} is not one of {', '.join(COLLECTION_BY_KIND)}")

    async def export(uri: str) -> None:
        from store.client import make_client

        client = make_client(uri)
        try:
            db = client[settings.database]
            for kind in kinds:
                async for doc in db[COLLECTION_BY_KIND[kind]].find({}).sort("_id", 1):
                    manifest = {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
                    sys.stdout.write(json.dumps(manifest, ensure_ascii=False, separators=(",", ":")) + "\n")
        finally:
            await client.close()

    with database_uri(settings) as uri:
        asyncio.run(export(uri))
    return 0


def cmd_export_schema(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.schema import build_schema

    sys.stdout.write(build_schema(settings).as_str() + "\n")
    return 0


# ---------------------------------------------------------------- import


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Exit code: 0 all imported, 1 some records rejected (each reported), 2 nothing could be
    imported (source unreachable, kernel list unusable)."""
    from rich.console import Console

    from loaders.sol_execbench.cli import import_command

    if args.source != "sol-execbench":
        return fail(f"unknown source {args.source!r}; known: sol-execbench")
    console = Console(stderr=True)
    if args.dry_run:
        # A dry run reads the source only; the database is not touched.
        return asyncio.run(
            import_command(None, snapshot_dir=args.snapshot, base_url=args.base_url, kernels=args.kernel, limit=args.limit, dry_run=True, console=console)
        )

    async def go(db):
        return await import_command(
            db, snapshot_dir=args.snapshot, base_url=args.base_url, kernels=args.kernel, limit=args.limit, dry_run=False, console=console
        )

    return _with_db(settings, go)


# ---------------------------------------------------------------- keys


def _with_db(settings: Settings, work):
    """Run `work(db)` against the command's database (see gateway.database)."""
    from gateway.database import database_uri

    async def go(uri: str):
        from store.client import make_client
        from store.schema import ensure_schema

        client = make_client(uri)
        try:
            db = client[settings.database]
            await ensure_schema(db)
            return await work(db)
        finally:
            await client.close()

    with database_uri(settings) as uri:
        return asyncio.run(go(uri))


def cmd_keys(args: argparse.Namespace, settings: Settings) -> int:
    from registry.dsse import SignatureError, keyid, load_public_key
    from store import keys

    if args.keys_command == "create":
        scope = keys.Scope(args.scope)
        pem = keyid_value = None
        if args.public_key:
            path = Path(args.public_key)
            if not path.is_file():
                return fail(f"--public-key: no such file {path}")
            try:
                key = load_public_key(path.read_bytes())
            except SignatureError as error:
                return fail(f"--public-key: {error}")
            pem, keyid_value = path.read_text(), keyid(key)
        elif scope is keys.Scope.runner:
            return fail("--public-key: a runner key needs the ed25519 public key its results are signed with")
        if not args.name.strip():
            return fail("--name: must not be empty")
        record, secret = _with_db(
            settings, lambda db: keys.create_key(db, name=args.name, scope=scope, public_key_pem=pem, signing_keyid=keyid_value)
        )
        print(secret)
        print(f"created {record.scope.value} key {record.id} ({record.name}); the secret above is shown only once", file=sys.stderr)
        return 0
    if args.keys_command == "list":
        for doc in _with_db(settings, keys.list_keys):
            state = "revoked" if doc["revoked"] else "active"
            print(f"{doc['_id']}\t{doc['scope']}\t{state}\t{doc['name']}\t{doc.get('signingKeyId') or '-'}")
        return 0
    if not _with_db(settings, lambda db: keys.revoke(db, args.key_id)):
        return fail(f"no key {args.key_id}")
    print(f"revoked {args.key_id}")
    return 0


# ---------------------------------------------------------------- attest


def cmd_attest(args: argparse.Namespace, settings: Settings) -> int:
    """Sign a partner's reproduction of a run and submit it through the GraphQL API."""
    import os

    import httpx

    from registry.dsse import SignatureError, load_private_key
    from registry.reproduction import PredicateError, parse_predicate, signed_reproduction
    from resolvers import ids

    api_key = args.api_key or os.environ.get("KERNELINDEX_API_KEY")
    if not api_key:
        return fail("--api-key (or KERNELINDEX_API_KEY): the partner API key is required")
    result_path, key_path = Path(args.result), Path(args.key)
    if not result_path.is_file():
        return fail(f"--result: no such file {result_path}")
    if not key_path.is_file():
        return fail(f"--key: no such file {key_path}")
    try:
        result = json.loads(result_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return fail(f"--result: {result_path} is not JSON ({error})")
    try:
        predicate = parse_predicate(result)
    except PredicateError as error:
        for path, reason in error.problems:
            print(f"error: {args.result}: {path.removeprefix('predicate.')}: {reason}", file=sys.stderr)
        return 1
    try:
        private_key = load_private_key(key_path.read_bytes())
    except (ValueError, TypeError, SignatureError) as error:
        return fail(f"--key: not an unencrypted ed25519 private key in PEM ({error})")

    url = (args.api or os.environ.get("KERNELINDEX_API") or "http://127.0.0.1:8000/graphql").rstrip("/")
    url = url if url.endswith("/graphql") else url + "/graphql"
    if args.run.startswith("sha256:"):
        run_id = ids.encode("Run", args.run)
    else:
        try:
            ids.decode_as(args.run, "Run")
        except ids.BadGlobalId as error:
            return fail(f"--run: {error}; give a run ID or a sha256: digest")
        run_id = args.run
    headers = {"Authorization": f"Bearer {api_key}"}

    def call(query: str, variables: dict) -> dict:
        try:
            response = httpx.post(url, json={"query": query, "variables": variables}, headers=headers, timeout=args.timeout)
            body = response.json()
        except httpx.HTTPError as error:
            raise CommandError(f"cannot reach {url}: {error}") from None
        except ValueError:
            raise CommandError(f"{url} did not answer with JSON (HTTP {response.status_code})") from None
        if body.get("errors"):
            raise CommandError(f"{url}: {body['errors'][0].get('message')}")
        return body["data"]

    run = call("query($id: ID!) { run(id: $id) { digest name } }", {"id": run_id})["run"]
    if run is None:
        return fail(f"--run: no run {args.run} at {url}")
    envelope = signed_reproduction(run["digest"], run["name"], predicate, private_key)
    submitted = call(
        """mutation($input: RunSubmitReproductionInput!) { runSubmitReproduction(input: $input) {
             created attestation { id digest } userErrors { field message code } } }""",
        {"input": {"run": run_id, "envelope": json.dumps(envelope)}},
    )["runSubmitReproduction"]
    if submitted["userErrors"]:
        for problem in submitted["userErrors"]:
            print(f"error: {problem['code']}: {problem['message']}", file=sys.stderr)
        return 1
    attestation = submitted["attestation"]
    state = "recorded" if submitted["created"] else "already recorded"
    print(attestation["id"])
    print(f"reproduction of {run['digest']} {state} as attestation {attestation['digest']}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- bench


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from kernels.harness.cli import main as bench_main
    except ImportError as error:
        return fail(f"kernelindex bench needs the kernels extra (pip install -e '.[kernels]'): {error}")
    return bench_main(args.bench_args)


# ---------------------------------------------------------------- runner and offline results


def cmd_runner(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from kernels.runner.cli import main as runner_main
    except ImportError as error:
        return fail(f"kernelindex runner needs the kernels extra (pip install -e '.[kernels]'): {error}")
    return runner_main(args.runner_args)


def cmd_jobs_claim(args: argparse.Namespace, settings: Settings) -> int:
    """Claim a job for an offline runner and write its job document."""
    from kernels.runner.client import ApiError, RegistryClient

    client = RegistryClient(args.api, args.key)
    try:
        job = client.claim(args.gpu, args.lease)
    except ApiError as error:
        return fail(f"claim: {error}")
    finally:
        client.close()
    if job is None:
        return fail(f"no queued job for {args.gpu}")
    Path(args.out).write_text(json.dumps(job["runnerDocument"], indent=1))
    print(f"claimed {job['id']}; job document in {args.out}", file=sys.stderr)
    return 0


def cmd_submit_result(args: argparse.Namespace, settings: Settings) -> int:
    from kernels.runner.client import ApiError, RegistryClient

    try:
        result = json.loads(Path(args.file).read_text())
    except (OSError, json.JSONDecodeError) as error:
        return fail(f"{args.file}: cannot read a result: {error}")
    if not isinstance(result, dict) or not isinstance(result.get("job"), str):
        return fail(f"{args.file}: a result file has a job ID and an envelope (or a failure)")
    client = RegistryClient(args.api, args.key)
    try:
        if "failure" in result:
            client.fail(result["job"], result["failure"]["code"], result["failure"]["message"])
            print(f"job {result['job']}: reported failure {result['failure']['code']}")
            return 0
        outcome = client.complete(result["job"], result["envelope"])
    except ApiError as error:
        return fail(f"the registry refused the result: {error}")
    finally:
        client.close()
    run = outcome.get("run") or {}
    print(f"job {result['job']}: {outcome['job']['state']}" + (f"; run {run['digest']} ({run['evidenceLevel']})" if run else ""))
    return 0


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelindex", description="KernelIndex: GPU-kernel performance evidence.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the GraphQL gateway (embedded database unless MONGODB_URI is set)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--db-port", type=int, default=None, help="port of the embedded database (default: a free one)")
    serve.add_argument("--db-timeout", type=float, default=30.0, help="seconds to wait for the embedded database")
    serve.add_argument("--no-data", action="store_true", help="do not load the bundled data on start")
    serve.set_defaults(handler=cmd_serve)

    load = sub.add_parser("load", help="publish manifests from JSON or YAML files")
    load.add_argument("files", nargs="+")
    load.set_defaults(handler=cmd_load)

    export = sub.add_parser("export", help="write stored manifests as JSON Lines to stdout")
    export.add_argument("--kind", default=None)
    export.set_defaults(handler=cmd_export)

    schema = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql)")
    schema.set_defaults(handler=cmd_export_schema)

    imp = sub.add_parser("import", help="import published results from an external source")
    imp.add_argument("source", help="sol-execbench")
    where = imp.add_mutually_exclusive_group()
    where.add_argument("--snapshot", type=Path, default=None, help="read saved responses from this directory")
    where.add_argument("--base-url", default=None, help="the source API's base URL")
    imp.add_argument("--kernel", type=int, action="append", default=None, help="kernel id (repeatable)")
    imp.add_argument("--limit", type=int, default=None, help="at most this many submissions per kernel")
    imp.add_argument("--dry-run", action="store_true", help="write nothing; print the plan")
    imp.set_defaults(handler=cmd_import)

    keys_parser = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys_parser.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key; prints its secret once")
    create.add_argument("--name", required=True)
    create.add_argument("--scope", required=True, choices=["reader", "partner", "runner", "maintainer"])
    create.add_argument("--public-key", default=None, help="ed25519 public key (PEM) for runner and partner signatures")
    keys_sub.add_parser("list", help="list keys (never their secrets)")
    revoke = keys_sub.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id")
    keys_parser.set_defaults(handler=cmd_keys)

    runner = sub.add_parser("runner", help="run benchmark jobs (needs the kernels extra)", add_help=False)
    runner.add_argument("runner_args", nargs=argparse.REMAINDER)
    runner.set_defaults(handler=cmd_runner)

    jobs_parser = sub.add_parser("jobs", help="benchmark jobs over the API")
    jobs_sub = jobs_parser.add_subparsers(dest="jobs_command", required=True)
    claim = jobs_sub.add_parser("claim", help="claim a job for an offline runner; writes its job document")
    claim.add_argument("--api", required=True)
    claim.add_argument("--key", required=True, help="the runner's API key")
    claim.add_argument("--gpu", required=True)
    claim.add_argument("--lease", type=int, default=6 * 3600)
    claim.add_argument("--out", required=True)
    claim.set_defaults(handler=cmd_jobs_claim)

    submit = sub.add_parser("submit-result", help="post an offline runner's signed result")
    submit.add_argument("file")
    submit.add_argument("--api", required=True)
    submit.add_argument("--key", required=True, help="the runner's API key")
    submit.set_defaults(handler=cmd_submit_result)

    attest = sub.add_parser("attest", help="sign a reproduction of a run (partner key) and submit it to the API")
    attest.add_argument("--run", required=True, help="the run's ID, or its sha256: digest")
    attest.add_argument("--result", required=True, help="the measurement as JSON (the reproduction predicate)")
    attest.add_argument("--key", required=True, help="the ed25519 private key (PEM) registered with your partner API key")
    attest.add_argument("--api", default=None, help="GraphQL endpoint (default: KERNELINDEX_API or http://127.0.0.1:8000/graphql)")
    attest.add_argument("--api-key", default=None, help="the partner API key (default: KERNELINDEX_API_KEY)")
    attest.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the API")
    attest.set_defaults(handler=cmd_attest)

    bench = sub.add_parser("bench", help="run the benchmark harness (needs the kernels extra)", add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(handler=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings()
    try:
        return args.handler(args, settings)
    except ManifestError as error:
        for path, reason in error.problems:
            print(f"error: {path}: {reason}" if path else f"error: {reason}", file=sys.stderr)
        print("error: nothing was written", file=sys.stderr)
        return 1
    except (EmbeddedDatabaseError, CommandError, BootstrapError) as error:
        return fail(str(error))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
