"""Fetch the CSS, JS and fonts the Great Expectations Data Docs load from CDNs, so the pages
work offline (eo/runtime/quality/site.py rewrites the links to them).

    python -m infra.data_docs_assets [--into .cache/data-docs]

The packages and their sha512 are pinned in infra/data-docs/packages.json; each tarball comes
from the npm registry (reachable from these machines, unlike the CDNs), is checked, and is
unpacked to <into>/<package>/. Idempotent: a package already unpacked is kept.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

from eo.runtime.config import REPO_ROOT

MANIFEST = REPO_ROOT / "infra" / "data-docs" / "packages.json"
DEFAULT_INTO = REPO_ROOT / ".cache" / "data-docs"
REGISTRY = "https://registry.npmjs.org"


def tarball_url(name: str, version: str) -> str:
    return f"{REGISTRY}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"


def check_integrity(data: bytes, integrity: str, name: str) -> None:
    algorithm, expected = integrity.split("-", 1)
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise ValueError(f"{name}: {algorithm} of the tarball is {actual}, the manifest pins {expected}")


def unpack(data: bytes, target: Path) -> None:
    """npm tarballs keep everything under package/; strip that, refuse paths that leave target."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            relative = Path(*Path(member.name).parts[1:])
            path = (target / relative).resolve()
            if not path.is_relative_to(target.resolve()):
                raise ValueError(f"unsafe path in tarball: {member.name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.extractfile(member).read())


def fetch(into: Path = DEFAULT_INTO) -> list[str]:
    packages = json.loads(MANIFEST.read_text())["packages"]
    fetched = []
    for number, (name, pin) in enumerate(packages.items(), 1):
        target = into / name
        stamp = target / ".version"
        if stamp.exists() and stamp.read_text() == pin["version"]:
            continue
        print(f"[{number}/{len(packages)}] {name}@{pin['version']}", flush=True)
        with urllib.request.urlopen(tarball_url(name, pin["version"]), timeout=60) as response:
            data = response.read()
        check_integrity(data, pin["integrity"], name)
        unpack(data, target)
        stamp.write_text(pin["version"])
        fetched.append(name)
    return fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.data_docs_assets", description=__doc__.split("\n")[0])
    parser.add_argument("--into", type=Path, default=DEFAULT_INTO)
    args = parser.parse_args(argv)
    try:
        fetched = fetch(args.into)
    except OSError as exc:
        print(f"error: could not fetch the Data Docs assets from {REGISTRY}: {exc}", file=sys.stderr)
        return 3
    print(f"Data Docs assets in {args.into} ({len(fetched)} fetched, the rest already there)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
