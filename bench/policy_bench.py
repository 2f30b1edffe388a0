"""Policy evaluator benchmark: our compiled evaluator against pycasbin and cedarpy on the same decisions.

    python bench/policy_bench.py            # 100, 1,000 and 10,000 constraints
    python bench/policy_bench.py --quick    # 100 and 1,000, fewer decisions

One seeded generator makes each policy set: 200 roles (10 % of them mfaRequired), users holding 5 roles
each, and constraints mixing API routes (criteriaOr of 1-3 route patterns, literal or with a trailing
`*`), assets (databaseId literal / `db-1*` / `*`, optionally AND assetType, AND assetName starts_with),
databases and a few user permissions; 85 % allow, 15 % deny, 1-3 methods each. The generator stays
inside what all three engines can state exactly, so the same policy is translated three ways:

- ours: the constraint dicts as stored, compiled by `CompiledPolicy`;
- casbin: one `p` line per route/resource pattern (`sub, typ, obj, act, eft`), roles as `g` lines,
  `keyMatch` (prefix up to the `*`), deny-override effect. Assets are the path
  `/<databaseId>/<assetType>/<assetName>`; MFA is a per-session subject (`user#mfa`) grouped into the
  roles that session may use;
- cedar: one permit/forbid per constraint (`like` for `*` patterns, `context.mfa` for mfaRequired roles),
  policies pre-parsed with `PolicySet.from_str`, users/roles/resources pre-built with
  `Entities.from_json_str`, one `is_authorized` per decision.

The decision point (issue 17, `--no-pdp` to skip) runs on the largest size: the same policy loaded into a
store (roles, constraints, 1,000 users' assignments), then subject checks through the SDK method in-process
(one, and a batch of 1,000) and over REST (a real uvicorn server on loopback, batch of 1,000), compared
with the peers' p50 on the same questions; explain's extra cost; who-can for one object; what-if for a
change of 100 constraints over every user x every API route.

Every engine's answers are checked against ours before its timings are printed. Latency percentiles time
each call alone with `perf_counter_ns` (includes ~0.1 µs of timer overhead); decisions/s times the loop.
Ours is measured with its bucket cache warm (one pass first); the cold first pass is printed too.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.local.policy import CompiledPolicy
from pluginsdk.principal import Principal

N_ROLES = 200
ROLES_PER_USER = 5
N_USERS = 1000
METHODS = ("GET", "PUT", "POST", "DELETE")
ASSET_TYPES = ("image", "model", "pointcloud", "video")

ROUTES = [
    "/api/v1/templates",
    "/api/v1/templates/{id}",
    "/api/v1/requests",
    "/api/v1/requests/{id}",
    "/api/v1/requests/{id}/status",
    "/api/v1/machines",
    "/api/v1/machines/{id}",
    "/auth/constraints",
    "/auth/constraints/{id}",
    "/auth/routes",
    "/auth/routes/api",
    "/auth/loginProfile/{id}",
    "/auth/api-keys",
    "/auth/api-keys/{id}",
    "/auth/user/api-keys",
    "/auth/user/api-keys/{id}",
    "/roles",
    "/roles/{id}",
    "/user-roles",
    "/user/managed",
    "/user/managed/{id}",
    "/secure-config",
    "/database",
    "/database/{db}",
    "/database/{db}/assets",
    "/database/{db}/assets/{id}",
    "/database/{db}/pipelines",
    "/database/{db}/workflows/{id}",
    "/metadataschema/{db}",
    "/tags",
    "/tag-types",
]


# -- generation --------------------------------------------------------------------------------
def route_pattern(rng: random.Random) -> str:
    """A route pattern: a concrete route, or a template cut at a placeholder with a trailing `*`."""
    tpl = rng.choice(ROUTES)
    if "{" not in tpl:
        return tpl + ("*" if rng.random() < 0.3 else "")
    if "{db}" in tpl and rng.random() < 0.6:
        tpl = tpl.replace("{db}", f"db-{rng.randrange(400)}")
    cut = tpl.find("{")
    if cut < 0:
        return tpl + ("*" if rng.random() < 0.5 else "")
    return tpl[:cut] + "*"


def concrete_route(rng: random.Random) -> str:
    tpl = rng.choice(ROUTES)
    return tpl.replace("{db}", f"db-{rng.randrange(500)}").replace("{id}", f"x{rng.randrange(1000)}")


@dataclass
class Generated:
    roles: dict[str, bool]
    constraints: list[dict[str, Any]]
    principals: list[Principal]
    decisions: list[tuple[Principal, str, dict[str, Any], str]]
    assets: list[dict[str, Any]]


def asset_criteria(rng: random.Random, object_type: str) -> list[dict[str, str]]:
    r = rng.random()
    if r < 0.7:
        crits = [{"field": "databaseId", "operator": "equals", "value": f"db-{rng.randrange(400)}"}]
        if object_type == "asset" and rng.random() < 0.5:
            crits.append({"field": "assetType", "operator": "equals", "value": rng.choice(ASSET_TYPES)})
            if rng.random() < 0.5:
                crits.append({"field": "assetName", "operator": "starts_with", "value": f"proj-{rng.randrange(50)}"})
        return crits
    if r < 0.9:
        return [{"field": "databaseId", "operator": "equals", "value": f"db-{rng.randrange(1, 10)}*"}]
    return [{"field": "databaseId", "operator": "equals", "value": "*"}]


def random_asset(rng: random.Random) -> dict[str, Any]:
    return {
        "databaseId": f"db-{rng.randrange(500)}",
        "assetType": rng.choice(ASSET_TYPES),
        "assetName": f"proj-{rng.randrange(60)}-{rng.randrange(10_000)}",
    }


def generate(n: int, n_decisions: int, seed: int = 7) -> Generated:
    rng = random.Random(seed * 1_000_003 + n)
    role_names = [f"role-{i:03d}" for i in range(N_ROLES)]
    roles = {r: rng.random() < 0.1 for r in role_names}
    users = [f"user-{i:04d}" for i in range(N_USERS)]
    constraints: list[dict[str, Any]] = []
    for i in range(n):
        kind = rng.random()
        methods = rng.sample(METHODS, rng.randint(1, 3))
        effect = "deny" if rng.random() < 0.15 else "allow"
        if kind < 0.5:
            object_type = "api"
            and_: list[dict[str, str]] = []
            or_ = [
                {"field": "route__path", "operator": "equals", "value": route_pattern(rng)}
                for _ in range(rng.randint(1, 3))
            ]
        else:
            object_type = "asset" if kind < 0.85 else "database"
            and_, or_ = asset_criteria(rng, object_type), []
        group: list[dict[str, str]] = []
        user: list[dict[str, str]] = []
        if rng.random() < 0.02:
            user = [{"userId": rng.choice(users), "permission": m, "permissionType": effect} for m in methods]
        else:
            for role in rng.sample(role_names, 1 if rng.random() < 0.8 else 2):
                group += [{"groupId": role, "permission": m, "permissionType": effect} for m in methods]
        constraints.append(
            {
                "constraintId": f"c{i}",
                "name": f"constraint {i}",
                "description": "generated for the benchmark",
                "objectType": object_type,
                "criteriaAnd": and_,
                "criteriaOr": or_,
                "groupPermissions": group,
                "userPermissions": user,
            }
        )
    principals = [
        Principal(user_id=u, roles=tuple(rng.sample(role_names, ROLES_PER_USER)), mfa=rng.random() < 0.5) for u in users
    ]
    decisions: list[tuple[Principal, str, dict[str, Any], str]] = []
    for _ in range(n_decisions):
        p = rng.choice(principals)
        r = rng.random()
        if r < 0.6:
            decisions.append((p, "api", {"route__path": concrete_route(rng)}, rng.choice(METHODS)))
        elif r < 0.9:
            decisions.append((p, "asset", random_asset(rng), rng.choice(METHODS)))
        else:
            decisions.append((p, "database", {"databaseId": f"db-{rng.randrange(500)}"}, rng.choice(METHODS)))
    assets = [random_asset(rng) for _ in range(10_000)]
    return Generated(roles, constraints, principals, decisions, assets)


# -- engines -------------------------------------------------------------------------------------
class Ours:
    name = "pluginsdk"

    def __init__(self, g: Generated) -> None:
        t0 = time.perf_counter()
        self.policy = CompiledPolicy(g.constraints, g.roles)
        self.compile_s = time.perf_counter() - t0

    def prepare(self, decisions: Sequence[tuple[Principal, str, dict[str, Any], str]]) -> list[Callable[[], bool]]:
        allowed = self.policy.is_allowed
        return [lambda p=p, t=t, a=a, m=m: allowed(p, t, a, m) for p, t, a, m in decisions]


CASBIN_MODEL = """
[request_definition]
r = sub, typ, obj, act

[policy_definition]
p = sub, typ, obj, act, eft

[role_definition]
g = _, _

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = g(r.sub, p.sub) && r.typ == p.typ && r.act == p.act && keyMatch(r.obj, p.obj)
"""


def casbin_object(object_type: str, attrs: dict[str, Any]) -> str:
    if object_type == "api":
        return str(attrs["route__path"])
    if object_type == "database":
        return f"/{attrs['databaseId']}"
    return f"/{attrs['databaseId']}/{attrs['assetType']}/{attrs['assetName']}"


def casbin_pattern(object_type: str, and_: list[dict[str, str]]) -> str:
    """The generated asset/database criteria as one keyMatch pattern over the resource path."""
    by = {c["field"]: c["value"] for c in and_}
    db = by["databaseId"]
    if object_type == "database":
        return f"/{db}"
    if db.endswith("*"):
        return f"/{db}"
    out = f"/{db}/"
    if "assetType" in by:
        out += f"{by['assetType']}/"
        if "assetName" in by:
            return out + by["assetName"] + "*"
    return out + "*"


class Casbin:
    name = "pycasbin"

    def __init__(self, g: Generated) -> None:
        import casbin

        m = casbin.model.Model()
        m.load_model_from_text(CASBIN_MODEL)
        self.e = casbin.Enforcer(m)
        rows: list[list[str]] = []
        for c in g.constraints:
            t = c["objectType"]
            objs = [x["value"] for x in c["criteriaOr"]] if t == "api" else [casbin_pattern(t, c["criteriaAnd"])]
            subjects = [(p["groupId"], p) for p in c["groupPermissions"]] + [
                (p["userId"], p) for p in c["userPermissions"]
            ]
            for sub, p in subjects:
                for obj in objs:
                    rows.append([sub, t, obj, p["permission"], p["permissionType"]])
        self.e.add_policies(rows)
        grouping: list[list[str]] = []
        for pr in g.principals:
            for mfa in (False, True):
                s = f"{pr.user_id}#{'mfa' if mfa else 'plain'}"
                grouping.append([s, pr.user_id])
                grouping += [[s, r] for r in pr.roles if mfa or not g.roles[r]]
        self.e.add_grouping_policies(grouping)

    def prepare(self, decisions: Sequence[tuple[Principal, str, dict[str, Any], str]]) -> list[Callable[[], bool]]:
        enforce = self.e.enforce
        return [
            lambda s=f"{p.user_id}#{'mfa' if p.mfa else 'plain'}", t=t, o=casbin_object(t, a), m=m: bool(
                enforce(s, t, o, m)
            )
            for p, t, a, m in decisions
        ]


def cedar_str(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid Cedar string literal for this text


def cedar_like(s: str) -> str:
    """A Cedar `like` pattern: our `*` stays a wildcard, a literal backslash or quote is escaped."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cedar_test(attr: str, value: str) -> str:
    return f"resource.{attr} like {cedar_like(value)}" if "*" in value else f"resource.{attr} == {cedar_str(value)}"


class Cedar:
    name = "cedarpy"

    def __init__(self, g: Generated, decisions: Sequence[tuple[Principal, str, dict[str, Any], str]]) -> None:
        import cedarpy

        self.cedarpy = cedarpy
        kinds = {"api": "Route", "asset": "Asset", "database": "Database"}
        fields = {"api": {"route__path": "path"}, "asset": {}, "database": {}}
        policies: list[str] = []
        for c in g.constraints:
            t = c["objectType"]
            ren = fields[t]
            when_and = [cedar_test(ren.get(x["field"], x["field"]), x["value"]) for x in c["criteriaAnd"]]
            when_or = [cedar_test(ren.get(x["field"], x["field"]), x["value"]) for x in c["criteriaOr"]]
            cond = " && ".join(when_and + ([f"({' || '.join(when_or)})"] if when_or else []))
            per: dict[tuple[str, str, str], list[str]] = {}
            for p in c["groupPermissions"]:
                per.setdefault(("Role", p["groupId"], p["permissionType"]), []).append(p["permission"])
            for p in c["userPermissions"]:
                per.setdefault(("User", p["userId"], p["permissionType"]), []).append(p["permission"])
            for (ptype, who, effect), methods in per.items():
                head = "permit" if effect == "allow" else "forbid"
                scope = (
                    f"principal in {ptype}::{cedar_str(who)}"
                    if ptype == "Role"
                    else f"principal == User::{cedar_str(who)}"
                )
                actions = ", ".join(f'Action::"{m}"' for m in methods)
                mfa = "context.mfa && " if ptype == "Role" and g.roles.get(who) else ""
                policies.append(
                    f"{head} ({scope}, action in [{actions}], resource is {kinds[t]}) when {{ {mfa}{cond} }};"
                )
        self.text = "\n".join(policies)
        self.policies = cedarpy.PolicySet.from_str(self.text)
        entities: list[dict[str, Any]] = [
            {"uid": {"type": "Role", "id": r}, "attrs": {}, "parents": []} for r in g.roles
        ]
        entities += [
            {
                "uid": {"type": "User", "id": p.user_id},
                "attrs": {},
                "parents": [{"type": "Role", "id": r} for r in p.roles],
            }
            for p in g.principals
        ]
        self.resource_ids: list[dict[str, str]] = []
        seen: set[str] = set()
        for i, (_p, t, a, _m) in enumerate(decisions):
            rid = f"r{i}"
            attrs = {fields[t].get(k, k): v for k, v in a.items()}
            self.resource_ids.append({"type": kinds[t], "id": rid})
            if rid not in seen:
                seen.add(rid)
                entities.append({"uid": {"type": kinds[t], "id": rid}, "attrs": attrs, "parents": []})
        self.entities = cedarpy.Entities.from_json_str(json.dumps(entities))

    def prepare(self, decisions: Sequence[tuple[Principal, str, dict[str, Any], str]]) -> list[Callable[[], bool]]:
        is_authorized = self.cedarpy.is_authorized
        policies, entities = self.policies, self.entities
        out: list[Callable[[], bool]] = []
        for (p, _t, _a, m), res in zip(decisions, self.resource_ids, strict=True):
            req = {
                "principal": {"type": "User", "id": p.user_id},
                "action": {"type": "Action", "id": m},
                "resource": res,
                "context": {"mfa": p.mfa},
            }
            out.append(lambda req=req: bool(is_authorized(req, policies, entities).allowed))
        return out


# -- measuring -----------------------------------------------------------------------------------
@dataclass
class Row:
    engine: str
    constraints: int
    decisions: int
    per_s: float
    p50_us: float
    p99_us: float


def measure(engine: str, n: int, calls: list[Callable[[], bool]], budget_s: float, expected: list[bool]) -> Row:
    """Time each call alone (as many as fit the budget, at least 20), then the same calls in a bare loop.

    Every answer is compared with ours (`expected`): a disagreement stops the benchmark.
    """
    lat: list[int] = []
    answers: list[bool] = []
    start = time.perf_counter()
    for f in calls:
        t0 = time.perf_counter_ns()
        ok = f()
        lat.append(time.perf_counter_ns() - t0)
        answers.append(ok)
        if len(lat) >= 20 and time.perf_counter() - start > budget_s:
            break
    bad = sum(1 for got, want in zip(answers, expected, strict=False) if got != want)
    if bad:
        raise SystemExit(f"{engine} disagrees with pluginsdk on {bad} of {len(answers)} decisions at {n} constraints")
    subset = calls[: len(lat)]
    t0 = time.perf_counter()
    for f in subset:
        f()
    elapsed = time.perf_counter() - t0
    lat.sort()
    return Row(
        engine,
        n,
        len(lat),
        len(subset) / elapsed,
        lat[len(lat) // 2] / 1000,
        lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1000,
    )


def fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}" if x >= 10 else f"{x:,.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 and 1,000 constraints, fewer decisions")
    ap.add_argument("--sizes", type=int, nargs="*", help="constraint counts (default 100 1000 10000)")
    ap.add_argument("--decisions", type=int, help="decisions per size (default 20,000; quick 5,000)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per peer engine per size (default 8; quick 2)")
    ap.add_argument("--no-peers", action="store_true", help="only our evaluator")
    ap.add_argument("--no-pdp", action="store_true", help="skip the decision-point section (issue 17)")
    ap.add_argument("--pdp-calls", type=int, default=2000, help="SDK subject checks timed one by one (default 2,000)")
    args = ap.parse_args()
    sizes = args.sizes or ([100, 1000] if args.quick else [100, 1000, 10_000])
    n_dec = args.decisions or (5_000 if args.quick else 20_000)
    budget = args.budget if args.budget is not None else (2.0 if args.quick else 8.0)

    rows: list[Row] = []
    extra: list[str] = []
    for n in sizes:
        g = generate(n, n_dec)
        ours = Ours(g)
        compile_times = []
        for _ in range(5):
            t0 = time.perf_counter()
            built = CompiledPolicy(g.constraints, g.roles)
            compile_times.append(time.perf_counter() - t0)
            del built  # freed outside the timed region
        calls = ours.prepare(g.decisions)
        t0 = time.perf_counter()
        answers = [f() for f in calls]  # cold pass: builds the per-principal buckets
        cold_us = (time.perf_counter() - t0) / len(calls) * 1e6
        rows.append(measure("pluginsdk", n, calls, 1e9, answers))
        p = g.principals[0]
        ft = []
        for _ in range(5):
            t0 = time.perf_counter()
            kept = ours.policy.filter_allowed(p, "asset", g.assets, "GET")
            ft.append(time.perf_counter() - t0)
        cands = sorted(ours.policy.candidates(pp, t, a, m) for pp, t, a, m in g.decisions[:2000])
        extra.append(
            f"| {n:,} | {statistics.median(compile_times) * 1000:.1f} | {cold_us:.1f} | "
            f"{min(ft) * 1000:.2f} ({len(kept):,} kept) | {sum(answers) / len(answers):.0%} | "
            f"{cands[len(cands) // 2]} / {cands[-1]} |"
        )
        if args.no_peers:
            continue
        try:
            cas = Casbin(g)
            rows.append(measure("pycasbin", n, cas.prepare(g.decisions), budget, answers))
        except ImportError as exc:
            print(f"pycasbin skipped: {exc}", file=sys.stderr)
        try:
            ced = Cedar(g, g.decisions)
            rows.append(measure("cedarpy", n, ced.prepare(g.decisions), budget, answers))
        except ImportError as exc:
            print(f"cedarpy skipped: {exc}", file=sys.stderr)

    ours_p50 = {r.constraints: r.p50_us for r in rows if r.engine == "pluginsdk"}
    print("| engine | constraints | decisions timed | decisions/s | p50 µs | p99 µs | p50 vs ours |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = r.p50_us / ours_p50[r.constraints]
        print(
            f"| {r.engine} | {r.constraints:,} | {r.decisions:,} | {fmt(r.per_s)} | {fmt(r.p50_us)} | "
            f"{fmt(r.p99_us)} | {fmt(ratio)}× |"
        )
    print()
    print(
        "| constraints | compile ms | cold decision µs | filter_allowed(10,000 assets) ms | allowed | rules tested p50 / max |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for line in extra:
        print(line)
    if not args.no_pdp:
        import asyncio

        from pdp_bench import run_pdp  # bench/pdp_bench.py

        g = generate(sizes[-1], n_dec)
        peers = {r.engine: r.p50_us for r in rows if r.constraints == sizes[-1]}
        asyncio.run(run_pdp(g, peers, args.pdp_calls))


if __name__ == "__main__":
    main()
