"""Checks that the published crates move together: each takes the workspace's
version, and every dependency between them asks for exactly that version.

Usage: python3 scripts/lib/published_versions.py CRATE_DIR...
Prints what is off and exits 1, or prints the version and exits 0.
"""

import sys
import tomllib


def main(crate_dirs):
    with open("Cargo.toml", "rb") as f:
        workspace = tomllib.load(f)["workspace"]
    version = workspace["package"]["version"]
    published = {}
    for d in crate_dirs:
        with open(f"{d}/Cargo.toml", "rb") as f:
            manifest = tomllib.load(f)
        published[manifest["package"]["name"]] = (d, manifest)
    wrong = []
    for name, (d, manifest) in published.items():
        if manifest["package"].get("version") != {"workspace": True}:
            wrong.append(f"{d}/Cargo.toml: version must be `version.workspace = true`")
        if manifest["package"].get("publish") is False:
            wrong.append(f"{d}/Cargo.toml: publish = false on a published crate")
    for name, spec in workspace.get("dependencies", {}).items():
        if name in published and (not isinstance(spec, dict) or spec.get("version") != version):
            wrong.append(f"Cargo.toml: [workspace.dependencies] {name} must ask for version {version!r}")
    for name, (d, manifest) in published.items():
        for table in ("dependencies", "dev-dependencies", "build-dependencies"):
            for dep, spec in manifest.get(table, {}).items():
                if dep in published and not (isinstance(spec, dict) and spec.get("workspace") is True):
                    wrong.append(f"{d}/Cargo.toml: [{table}] {dep} must be `workspace = true`")
    if wrong:
        print("\n".join(wrong))
        return 1
    print(f"published crates at {version}: {', '.join(sorted(published))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
