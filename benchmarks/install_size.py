"""What the default install no longer pulls in now that Ray and the OTLP exporter are extras (issue 43).

    .venv/bin/python benchmarks/install_size.py [--out benchmarks/results]

Run with the venv's Python: it reads that venv's installed metadata (``importlib.metadata``: each distribution's
``Requires-Dist`` and its RECORD of files) and pyproject.toml's ``[project] dependencies`` and
``optional-dependencies``. The closure of a set of requirements is every installed distribution they pull in,
markers evaluated for this interpreter and the extras asked for (``ray[data]`` brings pandas, fsspec ...). Then:

- ``default_after``: the closure of ``dependencies`` (the default install now);
- ``default_before``: the closure of ``dependencies`` plus the ``ray`` and ``otel`` extras (what ``dependencies``
  listed before they moved);
- per extra: the distributions its closure adds to the default one (nothing else in the default set needs them),
  which a default install no longer pulls in;
- ``site_packages``: the whole ``site-packages`` folder of this venv (the test extras and model files included),
  and that minus what the ray and otel extras alone bring.

Sizes are bytes on disk (allocated blocks, as ``du`` counts them; a file linked twice counted once) of the files
each distribution's RECORD lists (its package folders, its ``.dist-info``, its scripts). Writes
``install_size.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
MOVED = ("ray", "otel")  # the extras that were part of [project] dependencies before issue 43


def _disk(path: Path, seen: set[tuple[int, int]]) -> int:
    try:
        st = path.lstat()
    except OSError:
        return 0
    if (st.st_dev, st.st_ino) in seen:
        return 0
    seen.add((st.st_dev, st.st_ino))
    return st.st_blocks * 512


def tree_size(root: Path) -> int:
    """The files below ``root`` (the folders' own blocks not counted)."""
    seen: set[tuple[int, int]] = set()
    return sum(_disk(Path(folder) / f, seen) for folder, _, files in os.walk(root) for f in files)


def dist_size(dist: metadata.Distribution) -> int:
    seen: set[tuple[int, int]] = set()
    return sum(_disk(Path(dist.locate_file(f)), seen) for f in dist.files or [])


def closure(requirements: list[str]) -> tuple[dict[str, metadata.Distribution], set[str]]:
    """Installed distributions ``requirements`` pull in (by canonical name), and the names not installed."""
    found: dict[str, metadata.Distribution] = {}
    missing: set[str] = set()
    done: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = found.get(name) or metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            missing.add(name)
            continue
        found[name] = dist
        for wanted in ("", *sorted(req.extras)):
            if (name, wanted) in done:
                continue
            done.add((name, wanted))
            todo.extend((Requirement(r), wanted) for r in dist.requires or [])
    return found, missing


def _rows(names: set[str], dists: dict[str, metadata.Distribution], sizes: dict[str, int]) -> list[dict]:
    return sorted(({"name": n, "version": dists[n].version, "bytes": sizes[n]} for n in names),
                  key=lambda row: -row["bytes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps, optional = project["dependencies"], project["optional-dependencies"]
    default, missing = closure(deps)
    before, _ = closure([*deps, *(r for extra in MOVED for r in optional[extra])])
    every = {**default, **before}
    sizes = {name: dist_size(dist) for name, dist in every.items()}

    extras = {}
    for extra in MOVED:
        with_extra, _ = closure([*deps, *optional[extra]])
        added = set(with_extra) - set(default)
        every.update(with_extra)
        sizes.update({n: dist_size(with_extra[n]) for n in added if n not in sizes})
        extras[extra] = {"requires": optional[extra], "bytes": sum(sizes[n] for n in added),
                         "distributions": _rows(added, with_extra, sizes)}
    removed = set(before) - set(default)
    site = Path(sysconfig.get_paths()["purelib"])
    site_bytes, ray_folder_bytes = tree_size(site), tree_size(site / "ray")
    result = {
        "python": sys.version.split()[0],
        "site_packages": str(site),
        "default_before": {"distributions": len(before), "bytes": sum(sizes[n] for n in before)},
        "default_after": {"distributions": len(default), "bytes": sum(sizes[n] for n in default)},
        "no_longer_in_default": {"distributions": len(removed), "bytes": sum(sizes[n] for n in removed),
                                 "names": sorted(removed)},
        "extras": extras,
        "ray_package_folder_bytes": ray_folder_bytes,
        "site_packages_bytes": site_bytes,
        "site_packages_minus_extras_bytes": site_bytes - sum(sizes[n] for n in removed),
        "not_installed_requirements": sorted(missing),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "install_size.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    mb = 1024 * 1024
    print(f"default install before: {result['default_before']['bytes'] / mb:,.0f} MiB "
          f"({len(before)} distributions); after: {result['default_after']['bytes'] / mb:,.0f} MiB ({len(default)})")
    for extra, info in extras.items():
        print(f"  [{extra}] no longer pulled in: {info['bytes'] / mb:,.0f} MiB: "
              + ", ".join(row["name"] for row in info["distributions"]))
    print(f"site-packages: {site_bytes / mb:,.0f} MiB; minus the ray and otel extras: "
          f"{result['site_packages_minus_extras_bytes'] / mb:,.0f} MiB")


if __name__ == "__main__":
    main()
