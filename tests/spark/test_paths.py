"""Data-source paths: file: URIs name local files (issue 24 item 3, the part done); other schemes are refused
with a clear error, never read as a relative path."""
from __future__ import annotations

import pytest

from wqtool.errors import InputError
from wqtool.spark._paths import expand_paths, local_path


@pytest.mark.parametrize("uri, path", [("file:///srv/a b/log", "/srv/a b/log"), ("file:/srv/log", "/srv/log"),
                                       ("file://localhost/srv/log", "/srv/log"), ("file:///srv/x%20y", "/srv/x y"),
                                       ("rel/log", "rel/log"), ("/abs/log", "/abs/log")])
def test_file_uris_are_local_paths(uri, path):
    assert local_path(uri) == path


@pytest.mark.parametrize("uri", ["s3a://bucket/log", "hdfs://nn:8020/log", "file://otherhost/srv/log"])
def test_other_schemes_are_refused(uri):
    with pytest.raises(InputError, match="paths are not read here yet"):
        local_path(uri)


def test_a_file_uri_glob_expands(tmp_path):
    for n in ("a", "b"):
        (tmp_path / n).mkdir()
    assert expand_paths([f"file://{tmp_path}/*"]) == [str(tmp_path / "a"), str(tmp_path / "b")]
