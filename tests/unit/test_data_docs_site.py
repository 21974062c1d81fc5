"""The Data Docs work offline: every CDN link of Great Expectations' pages points at a local
copy, fetched from the npm registry with its pinned hash."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile

import pytest

from eo.runtime.quality import site
from infra.data_docs_assets import check_integrity, tarball_url, unpack

pytestmark = pytest.mark.unit

PAGE = """<html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css"/>
<script src="https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js"
  integrity="sha384-x" crossorigin="anonymous"></script>
<script src="https://cdn.jsdelivr.net/npm/vega-lite@5"></script>
<img class="NO-CACHE"
  src="https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/logo-long.png?d=1" alt="Great Expectations"/>
<a href="https://docs.greatexpectations.io/">docs</a>
</head></html>"""


def test_a_page_loads_its_assets_locally_at_any_depth():
    page = site.localize_page(PAGE, depth=2)
    assert 'href="../../static/vendor/bootstrap/dist/css/bootstrap.min.css"' in page
    assert 'src="../../static/vendor/popper.js/dist/umd/popper.min.js"></script>' in page  # no CDN hash
    assert 'src="../../static/vendor/vega-lite/build/vega-lite.min.js"' in page
    assert "https://docs.greatexpectations.io/" in page  # plain links stay
    assert "logo-long.png" not in page and "Data Docs: stream vs batch" in page  # GX's logo is on S3


def test_a_site_is_localized_only_when_the_assets_are_there(tmp_path):
    built = tmp_path / "site"
    (built / "validations" / "x").mkdir(parents=True)
    (built / "index.html").write_text(PAGE)
    (built / "validations" / "x" / "run.html").write_text(PAGE)
    assets = tmp_path / "assets"
    assert not site.localize(built, assets)
    assert site.remote_links(built)  # left as GX wrote it
    for package, path in site.CDN_FILES.values():
        (assets / package / path).parent.mkdir(parents=True, exist_ok=True)
        (assets / package / path).write_text(f"/* {package} */")
    (assets / "@fortawesome/fontawesome-free/webfonts").mkdir(parents=True)
    (assets / "@fortawesome/fontawesome-free/webfonts/fa.woff2").write_bytes(b"font")
    assert site.localize(built, assets)
    assert site.remote_links(built) == []
    assert (built / "static/vendor/jquery/dist/jquery.min.js").read_text() == "/* jquery */"
    assert (built / "static/vendor/@fortawesome/fontawesome-free/webfonts/fa.woff2").exists()
    assert "../../static/vendor/" in (built / "validations/x/run.html").read_text()


def _tarball(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_tarball_is_checked_and_unpacked_without_its_top_folder(tmp_path):
    data = _tarball({"package/dist/a.js": b"a"})
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode()
    check_integrity(data, f"sha512-{digest}", "a")
    with pytest.raises(ValueError, match="manifest pins"):
        check_integrity(data + b"x", f"sha512-{digest}", "a")
    unpack(data, tmp_path / "a")
    assert (tmp_path / "a" / "dist" / "a.js").read_bytes() == b"a"
    with pytest.raises(ValueError, match="unsafe path"):
        unpack(_tarball({"package/../../evil.js": b"x"}), tmp_path / "b")


def test_scoped_packages_have_their_registry_address():
    assert tarball_url("@fortawesome/fontawesome-free", "6.6.0") == (
        "https://registry.npmjs.org/@fortawesome/fontawesome-free/-/fontawesome-free-6.6.0.tgz"
    )
