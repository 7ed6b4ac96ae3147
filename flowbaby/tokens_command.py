"""`flowbaby tokens create|list|revoke`: a team server's per-user API tokens (INGEST_CONTRACT.md 15.11).

They live in the team database (FLOWBABY_DATABASE_URL, process environment only), schema
flowbaby_admin, hashed; a new token is printed once, on stdout, and cannot be shown again.
Exit codes: 0 done, 1 nothing matched (revoke), 2 bad arguments or no database URL,
3 the database cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_tokens_command(commands: Any) -> None:
    parser = commands.add_parser("tokens", help="per-user API tokens of a team server (FLOWBABY_DATABASE_URL)")
    actions = parser.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="a new token for a user, scoped to namespaces; printed once")
    create.add_argument("--user", required=True, help="who holds it (recorded in the audit log)")
    create.add_argument(
        "--namespace",
        action="append",
        required=True,
        help="a namespace it may use; repeat for more, or * for every namespace",
    )
    listing = actions.add_parser("list", help="every token: id, user, namespaces, created, revoked (never the token)")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    revoke = actions.add_parser("revoke", help="revoke a token by id, or every token of a user")
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("token_id", nargs="?", help="the token's id (from create or list)")
    which.add_argument("--user", help="revoke every live token of this user")


def run_tokens_command(args: argparse.Namespace) -> int:
    from graph.api import EXIT_WORKSPACE_UNAVAILABLE, issue, open_token_store, team_database_url
    from graph.core.contract import FlowbabyError

    try:
        url = team_database_url()
    except FlowbabyError as error:
        print(f"flowbaby tokens: {error.message}", file=sys.stderr)
        return 2
    if not url:
        print("flowbaby tokens: set FLOWBABY_DATABASE_URL to the team database", file=sys.stderr)
        return 2
    try:
        store = open_token_store(url)
    except FlowbabyError as error:
        print(f"flowbaby tokens: {error.message}", file=sys.stderr)
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        if args.action == "create":
            try:
                record, token = issue(store, args.user, args.namespace)
            except ValueError as exc:
                print(f"flowbaby tokens: {exc}", file=sys.stderr)
                return 2
            print(token, flush=True)
            print(
                f"token {record.token_id} for {record.user} on {', '.join(record.namespaces)}: "
                "shown once, store it now",
                file=sys.stderr,
            )
            return 0
        if args.action == "list":
            rows: list[dict[str, Any]] = [
                {
                    "id": r.token_id,
                    "user": r.user,
                    "namespaces": list(r.namespaces),
                    "createdAt": r.created_at,
                    "revokedAt": r.revoked_at,
                }
                for r in store.records()
            ]
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                for row in rows:
                    state = f"revoked {row['revokedAt']}" if row["revokedAt"] else "live"
                    print(f"{row['id']}  {row['user']}  {','.join(row['namespaces'])}  {row['createdAt']}  {state}")
            return 0
        revoked = store.revoke(token_id=args.token_id) if args.token_id else store.revoke(user=args.user)
        if not revoked:
            print("flowbaby tokens: no live token matched", file=sys.stderr)
            return 1
        print(f"revoked {', '.join(revoked)} (in effect on every server within 5 s)")
        return 0
    finally:
        store.close()
