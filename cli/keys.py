"""`kernelindex keys create|list|revoke`: API keys, written straight to the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings

SCOPES = ["reader", "partner", "runner", "maintainer"]


def register(sub) -> None:
    keys_parser = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys_parser.add_subparsers(dest="keys_command", required=True, metavar="{create,list,revoke}")
    create = keys_sub.add_parser("create", help="create a key; prints its secret once")
    create.add_argument("--name", required=True)
    create.add_argument("--scope", required=True, choices=SCOPES)
    create.add_argument("--public-key", default=None, help="ed25519 public key (PEM) for runner and partner signatures")
    create.set_defaults(handler=cmd_create)
    listing = keys_sub.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(handler=cmd_list)
    revoke = keys_sub.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.set_defaults(handler=cmd_revoke)


def cmd_create(args: argparse.Namespace, settings: Settings) -> int:
    from registry.dsse import SignatureError, keyid, load_public_key
    from store import keys

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
    record, secret = with_db(
        settings, lambda db: keys.create_key(db, name=args.name, scope=scope, public_key_pem=pem, signing_keyid=keyid_value)
    )
    print(secret)
    print(f"created {record.scope.value} key {record.id} ({record.name}); the secret above is shown only once", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from store import keys

    for doc in with_db(settings, keys.list_keys):
        state = "revoked" if doc["revoked"] else "active"
        print(f"{doc['_id']}\t{doc['scope']}\t{state}\t{doc['name']}\t{doc.get('signingKeyId') or '-'}")
    return 0


def cmd_revoke(args: argparse.Namespace, settings: Settings) -> int:
    from store import keys

    if not with_db(settings, lambda db: keys.revoke(db, args.key_id)):
        return fail(f"no key {args.key_id}")
    print(f"revoked {args.key_id}")
    return 0
