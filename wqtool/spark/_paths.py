"""Paths as the caller meant them, on the driver and on executors (no pyspark here)."""
from __future__ import annotations

import contextlib
import glob
import os
from dataclasses import dataclass
from typing import Sequence

from ..errors import InputError

_GLOB = set("*?[")


@contextlib.contextmanager
def working_dir(path: str | None):
    """Run with the driver's working directory, so relative PATHs mean what they meant to the caller and every
    path the engine prints (records, findings) is the string the caller gave, as with the local engine.

    Spark starts Python workers in a scratch directory; a task runs alone in its worker, so a temporary chdir is
    safe. On a cluster whose executors lack that directory, nothing changes (pass absolute paths there).
    """
    old = os.getcwd()
    if not path or path == old or not os.path.isdir(path):
        yield
        return
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def is_remote(p: str) -> bool:
    """A URI of another filesystem than this machine's (``s3://``, ``s3a://``, ``hdfs://``, ...)."""
    if "://" not in p:
        return False
    from urllib.parse import urlsplit
    u = urlsplit(p)
    return not (u.scheme == "file" and u.netloc in ("", "localhost"))


def local_path(p: str) -> str:
    """A ``file:`` URI (``file:///srv/log``, ``file:/srv/log``, ``file://localhost/srv/log``) as the local path it
    names; a plain path as it is; another scheme: an input error (``resolve`` stages those through fsspec)."""
    if "://" not in p and not p.startswith("file:"):
        return p
    from urllib.parse import unquote, urlsplit
    u = urlsplit(p)
    if u.scheme != "file" or u.netloc not in ("", "localhost"):
        raise InputError(f"{u.scheme or 'this'}:// paths are read through fsspec (resolve), not as local paths",
                         path=p)
    return unquote(u.path)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """``file:`` URIs become local paths; globs expand to their matches (sorted); a glob that matches nothing is
    an input error."""
    out: list[str] = []
    for p in map(local_path, paths):
        if _GLOB & set(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise InputError("no such file or directory (glob matched nothing)", path=p)
            out.extend(hits)
        else:
            out.append(p)
    return out


# ---------------------------------------------------------------- URIs and partitioned folders
@dataclass(frozen=True)
class Resolved:
    """The logs behind data-source paths: ``leaves`` are (local path, partition values) pairs — a remote URI's
    files staged in a local cache (``stage``) — and ``display`` the (local prefix, URI) pairs that name them as the
    caller did in rows and findings."""

    leaves: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    display: tuple[tuple[str, str], ...] = ()
    keys: tuple[str, ...] = ()          # the partition columns, in folder order

    def name(self, path: str | None) -> str | None:
        """``path`` as the caller named it (a staged file: its URI)."""
        if path:
            for local, uri in self.display:
                if path == local or path.startswith(local + os.sep):
                    return uri + path[len(local):].replace(os.sep, "/")
        return path


def _fs(p: str, storage: dict | None = None):
    """(fsspec filesystem, its path) for a remote URI; ``s3a://`` is S3 (s3fs). ``storage``: the filesystem's
    options (the data source's ``fs.*`` options: ``fs.endpoint_url``, ``fs.key``, ``fs.secret``, ...); without
    them s3fs takes the endpoint and keys from the environment as the AWS CLI does (``AWS_ENDPOINT_URL``, ...)."""
    try:
        import fsspec
    except ImportError:
        raise InputError("a remote URI needs fsspec (pip install 'wqtool[spark]') and its filesystem's package "
                         "(s3fs for s3:// and s3a://)", path=p) from None
    try:
        return fsspec.core.url_to_fs(p, **(storage or {}))
    except (ImportError, ValueError) as exc:
        raise InputError(f"cannot open this URI's filesystem: {exc}", path=p) from None


def _protocol_uri(fs, path: str, like: str) -> str:
    scheme = like.split("://", 1)[0]
    return f"{scheme}://{path.lstrip('/')}" if scheme != "hdfs" else like.split("://", 1)[0] + "://" + path


def _cache_dir(uri: str) -> str:
    import hashlib
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"wqtool-stage-{os.getuid()}",
                        hashlib.sha1(uri.encode()).hexdigest()[:20])


def stage(uri: str, storage: dict | None = None) -> str:
    """A local copy of a remote file or directory (every file under it), in a cache keyed by the URI; a file is
    fetched again when its size or ETag / modification time changed. Returns the local path. Reads the remote
    side only; the copy is written to a temporary name and renamed."""
    import json
    fs, path = _fs(uri, storage)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise InputError("no such file or directory", path=uri) from None
    except OSError as exc:
        raise InputError(f"cannot read it: {exc}", path=uri) from None
    base = _cache_dir(uri)
    top = os.path.join(base, os.path.basename(path.rstrip("/")) or "root")
    if info["type"] == "directory":
        files = {k: v for k, v in fs.find(path, detail=True).items() if v.get("type") != "directory"}
        root = path.rstrip("/")
    else:
        files, root = {path: info}, None
    os.makedirs(base, exist_ok=True)
    meta_path = os.path.join(base, ".stage.json")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        meta = {}
    for rp, d in sorted(files.items()):
        local = top if root is None else os.path.join(top, *rp[len(root):].strip("/").split("/"))
        stamp = [d.get("size"), str(d.get("ETag") or d.get("etag") or d.get("LastModified") or d.get("mtime") or "")]
        if meta.get(rp) == stamp and os.path.exists(local) and os.path.getsize(local) == d.get("size"):
            continue
        os.makedirs(os.path.dirname(local), exist_ok=True)
        tmp = local + ".part"
        fs.get_file(rp, tmp)
        os.replace(tmp, local)
        meta[rp] = stamp
    with open(meta_path + ".part", "w") as f:
        json.dump(meta, f)
    os.replace(meta_path + ".part", meta_path)
    if root is not None:
        os.makedirs(top, exist_ok=True)
    return top


def _partition_leaves(path: str, values=()) -> list[tuple[str, tuple]]:
    """A folder whose subfolders are named ``key=value`` (Spark's partitioned layout): one leaf per folder at
    the bottom, with its (key, value) pairs; any other path is one leaf. A folder mixing ``key=value`` folders with
    other entries (dot- and underscore-names aside, as Spark skips them) is an input error, never a silent skip."""
    if not os.path.isdir(path):
        return [(path, values)]
    names = sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))
    parts = [n for n in names if "=" in n and os.path.isdir(os.path.join(path, n))]
    if not parts:
        return [(path, values)]
    other = [n for n in names if n not in parts]
    if other:
        raise InputError(f"a partitioned folder (key=value folders) also holds {other[0]!r}: move it, or name the "
                         "log folders one by one", path=path)
    out = []
    for n in parts:
        k, v = n.split("=", 1)
        from urllib.parse import unquote
        out += _partition_leaves(os.path.join(path, n), (*values, (unquote(k), unquote(v))))
    return out


def resolve(paths: Sequence[str], storage: dict | None = None) -> Resolved:
    """Data-source paths -> the logs to discover: local paths and ``file:`` URIs as ``expand_paths``; other URIs
    through fsspec (a glob listed there), each staged locally (``stage``); then partitioned folders
    (``host=a/...``) split into their leaves with their partition values, the same keys everywhere."""
    locals_: list[str] = []
    display: list[tuple[str, str]] = []
    for p in paths:
        if not is_remote(p):
            locals_ += expand_paths([p])
            continue
        hits = [p]
        if _GLOB & set(p.split("://", 1)[1]):
            fs, path = _fs(p, storage)
            hits = [_protocol_uri(fs, h, p) for h in sorted(fs.glob(path))]
            if not hits:
                raise InputError("no such file or directory (glob matched nothing)", path=p)
        for uri in hits:
            local = stage(uri, storage)
            locals_.append(local)
            display.append((local, uri.rstrip("/")))
    leaves = [leaf for p in locals_ for leaf in _partition_leaves(p)]
    keys = {tuple(k for k, _ in v) for _, v in leaves}
    if len(keys) > 1:
        a, b = sorted(keys)[:2]
        raise InputError(f"partitioned folders with different keys ({'/'.join(a) or 'none'} and "
                         f"{'/'.join(b) or 'none'}): one table takes one layout", path=paths[0])
    return Resolved(tuple(leaves), tuple(display), next(iter(keys), ()))


def partition_keys(paths: Sequence[str], storage: dict | None = None) -> tuple[str, ...]:
    """The partition columns of data-source paths (``resolve``'s keys); for the schema, on the driver."""
    return resolve(paths, storage).keys
