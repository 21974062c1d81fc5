"""Make a built Data Docs site work offline: the CDN links in Great Expectations' pages point
at copies under static/vendor/, taken from the npm packages infra/data_docs_assets.py fetched.

Without this, offline pages are unstyled and the index lists nothing (its table is drawn by
bootstrap-table from a CDN).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from eo.runtime.environment import environment

ASSETS = REPO_ROOT / ".cache" / "data-docs"
VENDOR = Path("static") / "vendor"

# The CDN files GX 1.x templates load (render/view/templates/*.j2) -> (npm package, file in it).
CDN_FILES = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": (
        "bootstrap",
        "dist/css/bootstrap.min.css",
    ),
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": ("bootstrap", "dist/js/bootstrap.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": (
        "bootstrap-table",
        "dist/bootstrap-table.min.css",
    ),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": (
        "bootstrap-table",
        "dist/bootstrap-table.min.js",
    ),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css": (
        "bootstrap-table",
        "dist/extensions/filter-control/bootstrap-table-filter-control.css",
    ),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css": (
        "bootstrap-table",
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.css",
    ),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js": (
        "bootstrap-table",
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": (
        "bootstrap-datepicker",
        "dist/css/bootstrap-datepicker.min.css",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": (
        "bootstrap-datepicker",
        "dist/js/bootstrap-datepicker.min.js",
    ),
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": (
        "@forevolve/bootstrap-dark",
        "dist/css/bootstrap-prefers-dark.css",
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": (
        "@fortawesome/fontawesome-free",
        "css/all.min.css",
    ),
    "https://code.jquery.com/jquery-3.7.1.min.js": ("jquery", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": (
        "popper.js",
        "dist/umd/popper.min.js",
    ),
    "https://cdn.jsdelivr.net/npm/vega@5": ("vega", "build/vega.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-lite@5": ("vega-lite", "build/vega-lite.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-embed@6": ("vega-embed", "build/vega-embed.min.js"),
}
# Files a vendored file loads relative to itself (Font Awesome's css/../webfonts/).
COMPANIONS = {"@fortawesome/fontawesome-free": ["webfonts"]}
_LOGO_TAG = re.compile(r"<img[^>]*logo-long\.png[^>]*>", re.DOTALL)
# A CDN tag's integrity hash is for the CDN's bytes; a local copy is trusted as the page is.
_CHECKS = re.compile(r'\s+(integrity="[^"]*"|crossorigin="[^"]*")')
_LINKS = re.compile("|".join(re.escape(url) for url in sorted(CDN_FILES, key=len, reverse=True)))


def assets_ready(assets: Path = ASSETS) -> bool:
    return all((assets / package / path).is_file() for package, path in CDN_FILES.values())


def vendor(site: Path, assets: Path = ASSETS) -> None:
    """Copy the files the pages need into site/static/vendor/<package>/."""
    wanted = {(package, path) for package, path in CDN_FILES.values()}
    wanted |= {(package, folder) for package, folders in COMPANIONS.items() for folder in folders}
    for package, path in wanted:
        source, target = assets / package / path, site / VENDOR / package / path
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def localize_page(html: str, depth: int) -> str:
    """Point one page's CDN links at static/vendor/, `depth` folders below the site's root."""
    up = "../" * depth

    def local(match: re.Match) -> str:
        package, path = CDN_FILES[match.group(0)]
        return f"{up}{VENDOR.as_posix()}/{package}/{path}"

    html = _LINKS.sub(local, html)
    html = re.sub(r"<(script|link)\b[^>]*>", lambda tag: _CHECKS.sub("", tag.group(0)), html)
    # The logo lives on GX's S3 bucket: offline, a title in its place.
    return _LOGO_TAG.sub('<span class="h4 text-dark">Data Docs: stream vs batch</span>', html)


def localize(site: Path, assets: Path = ASSETS) -> bool:
    """Make every page under `site` load its assets locally. False (pages left as GX wrote
    them, needing the network) when the assets were not fetched: run `make setup`."""
    if not assets_ready(assets):
        return False
    vendor(site, assets)
    for page in site.rglob("*.html"):
        depth = len(page.relative_to(site).parts) - 1
        page.write_text(localize_page(page.read_text(), depth))
    return True


def remote_links(site: Path) -> list[str]:
    """Asset links that still leave the machine (for tests and a warning)."""
    found = set()
    for page in site.rglob("*.html"):
        html = page.read_text()
        found |= set(re.findall(r'(?:src|href)="(https?://[^"]+\.(?:css|js)[^"]*)"', html))
        found |= {url for url in CDN_FILES if url in html}
    return sorted(found)


def gx_project(settings) -> Path:
    """GX keeps its project on the local disk (eo/runtime/environment.py says where)."""
    return environment(settings).gx_project


def data_docs_root(settings) -> str:
    """Where the Data Docs are published: <reports_root>/data-docs (a folder or a bucket prefix)."""
    return f"{settings.reports_root.rstrip('/')}/data-docs"
