#!/usr/bin/env python3
"""Fetch the vendored browser assets (CodeMirror 5, KaTeX, htmx and its SSE extension, Swagger UI) from the npm registry.

Reproducible: every package is pinned by version AND by the sha256 of its tarball, and only the
listed files (plus each package's LICENSE) are extracted into
``platform/inferprep/static/vendor/<name>-<version>/``. The result is committed, so serving the
platform never needs the network; run this script only to check or to bump a pin::

    python scripts/fetch_assets.py            # fetch, verify, extract (overwrites the vendor folder)
    python scripts/fetch_assets.py --check    # verify the committed files against fresh tarballs

To bump a version, change it below, run once with ``--print-sha`` and paste the new digest.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"
VENDOR = Path(__file__).resolve().parent.parent / "platform" / "inferprep" / "static" / "vendor"

# name, version, sha256 of the registry tarball, files inside the tarball's package/ folder
PACKAGES: list[tuple[str, str, str, list[str]]] = [
    ("codemirror", "5.65.18", "775b7a711166c3f39899e56179a7fc8b5b755c3a043ee973c54ae5838023400f",
     ["LICENSE", "lib/codemirror.js", "lib/codemirror.css", "mode/python/python.js",
      "addon/edit/matchbrackets.js", "addon/comment/comment.js", "addon/selection/active-line.js"]),
    ("katex", "0.16.22", "e9e0d167db3175481cbadaff38e8d90b130f6a3ddb451a47e43c577fd511f365",
     ["LICENSE", "dist/katex.min.js", "dist/katex.min.css", "dist/contrib/auto-render.min.js",
      "dist/fonts/*.woff2"]),
    ("swagger-ui-dist", "5.18.2", "8c87031bfd483b8e0d835faf0d09d82464642ac41d674ffca44efc22bd0a9c24",
     ["LICENSE", "NOTICE", "swagger-ui-bundle.js", "swagger-ui.css"]),
    ("htmx.org", "2.0.4", "a34988d1b9f005a458d593aa8d7486537cb878b8ac3b82703db1268983123ecc",
     ["LICENSE", "dist/htmx.min.js"]),
    ("htmx-ext-sse", "2.2.4", "90b46f5ab915ba2f64e6348448c8dba509277a47e15c125ffb65754eb4f6b5dc",
     ["LICENSE", "dist/sse.min.js"]),
]


def tarball_url(name: str, version: str) -> str:
    return f"{REGISTRY}/{name}/-/{name.split('/')[-1]}-{version}.tgz"


def fetch(name: str, version: str) -> bytes:
    with urllib.request.urlopen(tarball_url(name, version), timeout=60) as r:  # noqa: S310 - fixed https URL
        return r.read()


def wanted(member: str, patterns: list[str]) -> bool:
    rel = member.removeprefix("package/")
    return any(Path(rel).match(p) if "*" in p else rel == p for p in patterns)


def extract(blob: bytes, patterns: list[str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile() and wanted(m.name, patterns):
                out[m.name.removeprefix("package/")] = tar.extractfile(m).read()
    missing = [p for p in patterns if "*" not in p and p not in out]
    if missing:
        raise SystemExit(f"tarball lacks {missing}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the committed files with the pinned tarballs")
    ap.add_argument("--print-sha", action="store_true", help="print each tarball's sha256 and stop")
    args = ap.parse_args(argv)
    bad = 0
    for name, version, sha, patterns in PACKAGES:
        blob = fetch(name, version)
        digest = hashlib.sha256(blob).hexdigest()
        if args.print_sha:
            print(f"{name} {version} {digest}")
            continue
        if digest != sha:
            print(f"{name} {version}: sha256 {digest} does not match the pin {sha}", file=sys.stderr)
            return 1
        files = extract(blob, patterns)
        dest = VENDOR / f"{name.replace('.', '-')}-{version}"
        for rel, data in sorted(files.items()):
            target = dest / rel
            if args.check:
                if not target.is_file() or target.read_bytes() != data:
                    print(f"differs or missing: {target}", file=sys.stderr)
                    bad += 1
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        print(f"{name} {version}: {len(files)} files {'checked' if args.check else 'written'} in {dest}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
