"""Counts one run of scripts/conformance.sh and writes its score table.

    conformance_results.py OUT --package PKG --legs LEGS --tasks "S1 S2 ..."
        --client-2026 "S1 ..." --client-2025 "S1 ..." --extensions "S1 ..."
        --table FILE [--command "scripts/conformance.sh"] [--commit REV]

OUT is the run's results directory (the runner's -o folders below it):
legacy/ and requirements/ (the two server legs), tasks/ and tasks-sqlite/
(the tasks-* scenarios on each store), client-REVISION/ (the client leg) and
client-extensions-REVISION/ (the auth extension scenarios, run at each
revision with --force). LEGS names those that ran (server, tasks, client).

Server leg: every SUCCESS and FAILURE check counts (the requirements run's
own tasks-* results are left out: they are counted from their own runs, one
per store). Client leg: SUCCESS counts as passed, FAILURE and WARNING as
failed, as in the runner's own verdict; the extension scenarios count the
same way, as legs of their own (the runner scores none of them). A scenario
that was asked for and left no results fails.

Prints the verdict and the failures, writes the table (Markdown) to FILE, and
exits 0 when every counted check passed.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone

SERVER_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z?$")
CLIENT_DIR = re.compile(r"^(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z?$")
# The legacy leg's scenarios a run must have results for (three of them are not scored by the runner).
LEGACY_EXPECTED = ("server-initialize", "server-session-lifecycle", "json-schema-2020-12",
                   "server-sse-polling", "tools-call-sampling")


def read_checks(path):
    try:
        with open(path) as f:
            checks = json.load(f)
    except (OSError, ValueError) as e:
        return [{"id": "checks.json", "status": "FAILURE", "errorMessage": f"unreadable: {e}"}]
    return checks if isinstance(checks, list) else []


def server_results(out, sub):
    """{scenario: checks} of one server-side run folder."""
    root = os.path.join(out, sub)
    found = {}
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, d, "checks.json")
        if os.path.isfile(path):
            m = SERVER_DIR.match(d)
            found.setdefault(m.group(1) if m else d, []).extend(read_checks(path))
    return found


def client_results(root, wanted):
    """{scenario: checks} of the client leg for the scenarios in `wanted` (auth/NAME under auth/)."""
    found = {}
    for scenario in wanted:
        sub, base = os.path.split(scenario)
        folder = os.path.join(root, sub)
        for d in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            m = CLIENT_DIR.match(d)
            path = os.path.join(folder, d, "checks.json")
            if m and m.group(1) == base and os.path.isfile(path):
                found.setdefault(scenario, []).extend(read_checks(path))
    return found


def count(checks, failing):
    passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
    failed = sum(1 for c in checks if c.get("status") in failing)
    return passed, failed


def skipped(checks):
    """Checks the suite itself skipped (a scenario pending a spec change, say)."""
    return sum(1 for c in checks if c.get("status") == "SKIPPED")


class Leg:
    """One counted part of the run: its scenarios' checks, what was missing, what failed."""

    def __init__(self, name, command, results, failing, expected=()):
        self.name, self.command, self.results, self.failing = name, command, results, failing
        self.missing = sorted(set(expected) - results.keys())

    def totals(self):
        p = f = 0
        for checks in self.results.values():
            a, b = count(checks, self.failing)
            p, f = p + a, f + b
        return p, f

    def skipped(self):
        return sum(skipped(checks) for checks in self.results.values())

    def ok(self):
        return not self.missing and self.totals()[1] == 0

    def failures(self):
        for scenario in sorted(self.results):
            for c in self.results[scenario]:
                if c.get("status") in self.failing:
                    why = c.get("errorMessage") or c.get("description") or ""
                    yield f"{self.name}: {scenario}: {c.get('status')} [{c.get('id')}] {why}".rstrip()
        for scenario in self.missing:
            yield f"{self.name}: {scenario}: no results"


def md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def scenario_table(leg):
    rows = ["| scenario | passed | failed | skipped by the suite |", "|---|---:|---:|---:|"]
    for scenario in sorted(leg.results):
        p, f = count(leg.results[scenario], leg.failing)
        rows.append(f"| `{scenario}` | {p} | {f} | {skipped(leg.results[scenario])} |")
    rows += [f"| `{s}` | – | no results | – |" for s in leg.missing]
    return rows


def run_time(out):
    """When the run began: the name of its results folder (UTC), else now."""
    try:
        return datetime.strptime(os.path.basename(os.path.normpath(out)), "%Y%m%dT%H%M%SZ")
    except ValueError:
        return datetime.now(timezone.utc)


def head_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def table(args, legs, per_store):
    when = run_time(args.out).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Conformance: the official MCP suite against conduit-mcp", "",
           f"Written by `{args.command}` from its own run; do not edit by hand, except the last section (the Events draft suite's check ids, which no runner scores yet: the script keeps it). Suite: "
           f"`{args.package}` (Node 22 through `npx`). Run on {when} at commit `{args.commit or head_commit()}`.",
           "",
           "Every check the suite scores is counted: on the server legs a `FAILURE` fails; on the "
           "client leg a `WARNING` fails too, as in the runner's own verdict; a scenario asked for "
           "that leaves no results fails. Checks the suite skips itself are shown, not counted "
           "(`INFO` checks, notes without a verdict, are left out). The Tasks extension's "
           "scenarios (`tasks-*`) are run one by one against the fixture on each task store, since "
           "the `--requirements` run does not score them. The client's auth extension scenarios "
           "(client credentials with a secret or with `private_key_jwt`, DPoP with and without "
           "nonces, enterprise-managed authorization, workload identity) are on no spec timeline: "
           "they are run at each revision with `--force` and counted as legs of their own.", "",
           "| leg | scenarios | checks passed | failed | skipped by the suite | verdict |",
           "|---|---:|---:|---:|---:|---|"]
    for leg in legs:
        p, f = leg.totals()
        verdict = "pass" if leg.ok() else "**FAIL**"
        scenarios = len(leg.results) + len(leg.missing)
        out.append(f"| {leg.name} | {scenarios} | {p} | {f} | {leg.skipped()} | {verdict} |")
    for leg in legs:
        if leg not in per_store.values():
            out += ["", f"## {leg.name}", "", f"`{leg.command}`", ""] + scenario_table(leg)
        elif leg is next(iter(per_store.values())):
            out += store_table(per_store)
    failures = [line for leg in legs for line in leg.failures()]
    out += ["", "## Failures", ""] + ([f"- {md(line)}" for line in failures] or ["None."])
    return "\n".join(out) + "\n"


def store_table(per_store):
    """The tasks-* scenarios, one column pair per store."""
    stores = list(per_store)
    names = sorted(set().union(*(leg.results.keys() | set(leg.missing) for leg in per_store.values())))
    out = ["", "## Tasks extension, per store", "",
           "`conformance server --scenario NAME`, once per scenario against the fixture on each store.", "",
           "| scenario | " + " | ".join(f"{s} passed | {s} failed | {s} skipped" for s in stores) + " |",
           "|---|" + "---:|---:|---:|" * len(stores)]
    for name in names:
        cells = []
        for store in stores:
            leg = per_store[store]
            if name in leg.results:
                cells += [str(n) for n in count(leg.results[name], leg.failing)] + [str(skipped(leg.results[name]))]
            else:
                cells += ["–", "no results", "–"]
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return out


# Sections of the table's file written by hand from this heading on (the
# Events draft suite's check ids: no runner scores them yet), kept by a rewrite.
HAND_WRITTEN = "## Events extension (draft suite check ids)"


def hand_written(path):
    """What follows HAND_WRITTEN in the file at `path`, if it is there."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return ""
    at = text.find(HAND_WRITTEN)
    return text[at:] if at >= 0 else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--package", required=True)
    ap.add_argument("--legs", default="server tasks client")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--client-2026", default="")
    ap.add_argument("--client-2025", default="")
    ap.add_argument("--extensions", default="")
    ap.add_argument("--table", required=True)
    ap.add_argument("--command", default="scripts/conformance.sh")
    ap.add_argument("--commit", help="the commit the run tested (default: HEAD now)")
    args = ap.parse_args()
    ran = set(args.legs.split())
    tasks = args.tasks.split()
    server_failing = ("FAILURE",)
    client_failing = ("FAILURE", "WARNING")

    legs, per_store = [], {}
    if "server" in ran:
        legacy = server_results(args.out, "legacy")
        legs.append(Leg("server 2025-11-25", "conformance server --requirements 2025-11-25", legacy,
                        server_failing, LEGACY_EXPECTED))
        modern = {s: c for s, c in server_results(args.out, "requirements").items() if s not in tasks}
        legs.append(Leg("server 2026-07-28", "conformance server --requirements 2026-07-28", modern,
                        server_failing))
    if "tasks" in ran:
        for store, sub in (("memory", "tasks"), ("SQLite", "tasks-sqlite")):
            leg = Leg(f"tasks-* on {store}", "conformance server --scenario NAME", server_results(args.out, sub),
                      server_failing, tasks)
            legs.append(leg)
            per_store[store] = leg
    if "client" in ran:
        for revision, wanted in (("2026-07-28", args.client_2026.split()), ("2025-11-25", args.client_2025.split())):
            found = client_results(os.path.join(args.out, "client-" + revision), wanted)
            legs.append(Leg(f"client {revision}", f"conformance client --spec-version {revision} --scenario NAME",
                            found, client_failing, wanted))
        wanted = args.extensions.split()
        for revision in ("2026-07-28", "2025-11-25") if wanted else ():
            found = client_results(os.path.join(args.out, "client-extensions-" + revision), wanted)
            legs.append(Leg(f"client extensions {revision}",
                            f"conformance client --spec-version {revision} --force --scenario NAME",
                            found, client_failing, wanted))

    kept = hand_written(args.table)
    with open(args.table, "w") as f:
        f.write(table(args, legs, per_store))
        if kept:
            f.write("\n" + kept)

    print()
    for leg in legs:
        p, f = leg.totals()
        print(f"conformance {leg.name}: {p} passed, {f} failed, {len(leg.results)} scenarios"
              + (f", {len(leg.missing)} without results" if leg.missing else ""))
    failures = [line for leg in legs for line in leg.failures()]
    if failures:
        print("failures:\n  " + "\n  ".join(failures))
    print(f"score table: {args.table}")
    if not legs or not any(leg.results for leg in legs):
        print("conformance: no results found", file=sys.stderr)
        return 1
    return 0 if all(leg.ok() for leg in legs) else 1


if __name__ == "__main__":
    sys.exit(main())
