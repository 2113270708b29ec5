"""PATHs as URIs, read through one filesystem layer (fsspec): the CLI's commands and the Spark data sources alike.

A ``file:`` URI names a local path. Any other URI that no format reads itself (``Format.detect (About.reads_urls)``: a database
URL) is a file or folder of an fsspec filesystem — ``s3://`` and ``s3a://`` (s3fs), ``hdfs://``, ``gs://``, ... —
copied read-only into a local staging cache (``stage``) and read there; reports, rows and findings name the URI,
never the staged copy (``NamedLog``). Commands that change files refuse a staged log (a copy is no place to
repair). Partitioned folders (``host=a/...``, Spark's layout) split into their leaves with their values
(``resolve``).

The cache is ``$TMPDIR/wqtool-stage-<uid>/``, one entry per URI: a file is fetched again when its size or ETag
/ modification time changed; a file gone from the remote side is removed from the copy; entries unused for
``WQTOOL_STAGE_MAX_AGE`` seconds (7 days) are removed, and the least recently used go while the cache holds more
than ``WQTOOL_STAGE_MAX_BYTES`` (10 GiB), none used in the last hour (a command may be reading it).

Only the engine's own modules are used; fsspec is imported when a URI is met (``pip install 'wqtool[uri]'``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import json
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..errors import InputError, UsageError, WqError

_GLOB = set("*?[")
EXTRA = "pip install 'wqtool[uri]'"
#: fsspec options every remote URI gets unless the caller's own say otherwise (``use_spark_conf``: Spark's
#: ``spark.hadoop.fs.s3a.*`` settings, so one setting serves Spark's S3A connector and this layer)
DEFAULTS: dict[str, dict] = {}


# ---------------------------------------------------------------- what a PATH is
def is_uri(p: str) -> bool:
    """A ``scheme://`` or ``file:`` PATH (database URLs included: ``is_stageable`` tells them apart)."""
    return "://" in p or p.startswith("file:")


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


# ---------------------------------------------------------------- fsspec
def s3a_storage(conf: dict[str, str]) -> dict:
    """fsspec (s3fs) options from Hadoop S3A settings (``spark.hadoop.fs.s3a.*`` or ``fs.s3a.*`` keys):
    endpoint, access / secret key, session token, path-style access, region. Others are ignored."""
    c = {k[len("spark.hadoop."):] if k.startswith("spark.hadoop.") else k: str(v) for k, v in conf.items()}
    out: dict[str, Any] = {}
    ep = c.get("fs.s3a.endpoint")
    if ep:
        ssl = c.get("fs.s3a.connection.ssl.enabled", "true").strip().lower() != "false"
        out["endpoint_url"] = ep if "://" in ep else ("https://" if ssl else "http://") + ep
    for hadoop, fs in (("fs.s3a.access.key", "key"), ("fs.s3a.secret.key", "secret"),
                       ("fs.s3a.session.token", "token")):
        if c.get(hadoop):
            out[fs] = c[hadoop]
    if c.get("fs.s3a.path.style.access", "").strip().lower() == "true":
        out["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    region = c.get("fs.s3a.endpoint.region")
    if region:
        out["client_kwargs"] = {"region_name": region}
    return out


def use_spark_conf(conf: dict[str, str]) -> None:
    """Make Spark's S3A settings (``spark.hadoop.fs.s3a.*``) the defaults of every ``s3://`` / ``s3a://`` URI
    this process opens (the caller's own options still win)."""
    s3 = s3a_storage(conf)
    if s3:
        DEFAULTS["s3"] = s3
    else:
        DEFAULTS.pop("s3", None)


def _options(p: str, storage: dict | None) -> dict:
    """The fs options ``p`` is opened with: ``storage`` over ``DEFAULTS``; an S3 URI without an endpoint among
    them gets the AWS CLI's from the environment (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``) by name, which
    botocore would read anyway — so fsspec's cached filesystem and the staging cache's entry are the endpoint's
    the environment names now, not the one it named when the first URI was opened."""
    scheme = p.split("://", 1)[0].lower()
    if scheme not in ("s3", "s3a", "s3n"):
        return dict(storage or {})
    out = {**DEFAULTS.get("s3", {}), **(storage or {})}
    env = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if env and not out.get("endpoint_url") and not (out.get("client_kwargs") or {}).get("endpoint_url"):
        out["endpoint_url"] = env
    return out


def _fs(p: str, storage: dict | None = None):
    """(fsspec filesystem, its path) for a remote URI; ``s3a://`` is S3 (s3fs). ``storage``: the filesystem's
    options (the data source's ``fs.*`` options: ``fs.endpoint_url``, ``fs.key``, ``fs.secret``, ...) over
    ``DEFAULTS``; without them s3fs takes the endpoint and keys from the environment as the AWS CLI does
    (``AWS_ENDPOINT_URL``, ...)."""
    try:
        import fsspec
    except ImportError:
        raise InputError(f"a URI is read through fsspec, which is not installed: {EXTRA} (s3fs for s3:// and "
                         "s3a://)", path=p) from None
    try:
        return fsspec.core.url_to_fs(p, **_options(p, storage))
    except (ImportError, ValueError) as exc:
        raise InputError(f"cannot open this URI's filesystem: {exc} ({EXTRA})", path=p) from None


def _protocol_uri(path: str, like: str) -> str:
    scheme = like.split("://", 1)[0]
    return f"{scheme}://{path.lstrip('/')}" if scheme != "hdfs" else scheme + "://" + path


def _why(exc: BaseException) -> str:
    """A filesystem error in one line: its class and first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


# ---------------------------------------------------------------- the staging cache
def cache_root() -> str:
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"wqtool-stage-{os.getuid()}")


def _cache_dir(uri: str, opts: dict, root: str | None = None) -> str:
    """The cache entry of ``uri`` read with the fs options ``opts``: keyed by the URI and the endpoint it is read
    from, so one bucket path on two stores (MinIO and AWS, two test servers) is two entries, never one copy
    fetched back and forth — or mixed, when two commands stage them at once."""
    import hashlib
    endpoint = opts.get("endpoint_url") or (opts.get("client_kwargs") or {}).get("endpoint_url") or ""
    key = uri if not endpoint else f"{uri}\n{endpoint}"
    return os.path.join(root or cache_root(), hashlib.sha1(key.encode()).hexdigest()[:20])


def _stamps(base: str) -> dict:
    """What the staged copy in the cache entry ``base`` was fetched from: {remote path: [size, ETag or mtime]}
    (``.stage.json``)."""
    try:
        with open(os.path.join(base, ".stage.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def stage_plan(logs: Sequence) -> tuple:
    """What a task on another machine needs to read the staged copies ``logs`` (``resolve_each``'s, a remote URI's
    named by a ``NamedFormat``) are read from: per copy (its local path, the URI, the fs options this process
    used — ``DEFAULTS`` included —, its cache entry, the copy's stamps). ``restage`` uses it in the task."""
    out: dict[str, tuple] = {}
    for lg in logs:
        fmt = getattr(lg, "fmt", None)
        if not isinstance(fmt, NamedFormat):
            continue
        names = fmt.localized
        for lo, uri in names.display:
            if lo in names.staged and lo not in out:
                base = os.path.dirname(lo)      # stage: the copy is the entry's one top
                out[lo] = (lo, uri, _options(uri, None), base, _stamps(base))
    return tuple(out.values())


def restage(plan: Sequence[tuple]) -> dict[str, str]:
    """In a Spark task: make each staged copy of ``plan`` (``stage_plan``) readable here, as the driver read it.
    A copy at the driver's path with the driver's stamps is used as it is (an executor on the driver's machine);
    else the URI is staged in this machine's own cache (``cache_root``: this process's ``tempfile.gettempdir()``,
    never a path the driver computed) and must have the stamps the driver's copy had: a remote file that changed
    in between is an error, never a read of another version. Returns {the driver's path: this machine's copy} for
    the copies staged elsewhere than the driver's path (the task reads those: ``spark.cluster``)."""
    moved: dict[str, str] = {}
    for lo, uri, opts, base, stamps in plan:
        if os.path.exists(lo) and _stamps(base) == stamps:
            continue
        got = stage(uri, opts)
        if _stamps(os.path.dirname(got)) != stamps:
            raise InputError("changed between the driver's read and this executor's (size or ETag): run the "
                             "command again", path=uri)
        if got != lo:
            moved[lo] = got
    return moved


def _lock(base: str, exclusive: bool, wait: bool = True) -> int | None:
    import fcntl
    fd = os.open(os.path.join(base, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _size(path: str) -> int:
    n = 0
    for d, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                n += os.lstat(os.path.join(d, name)).st_size
    return n


#: an entry staged (used) this recently is never removed for size: a command may be reading it
GRACE_S = 3600.0


def clean_cache(*, max_bytes: int | None = None, max_age_s: float | None = None, keep: str | None = None,
                now: float | None = None) -> list[str]:
    """Bound the staging cache: remove entries unused (``.stage.json`` untouched) for ``max_age_s`` seconds, then
    the least recently used while the cache holds more than ``max_bytes`` (defaults: ``WQTOOL_STAGE_MAX_AGE``,
    7 days; ``WQTOOL_STAGE_MAX_BYTES``, 10 GiB) — but none used in the last ``GRACE_S`` (an hour: a command may
    be reading it). ``keep`` (an entry directory) and an entry another process is staging (its lock held) stay.
    Returns the entries removed. No lock is held while a copy is read: a file fetched again replaces the old one
    by rename, so a reader keeps the bytes it opened."""
    root = cache_root()
    if max_bytes is None:
        max_bytes = int(os.environ.get("WQTOOL_STAGE_MAX_BYTES", 10 << 30))
    if max_age_s is None:
        max_age_s = float(os.environ.get("WQTOOL_STAGE_MAX_AGE", 7 * 86400))
    now = time.time() if now is None else now
    try:
        names = os.listdir(root)
    except OSError:
        return []
    entries = []
    for n in names:
        d = os.path.join(root, n)
        if d == keep or not os.path.isdir(d):
            continue
        try:
            used = os.stat(os.path.join(d, ".stage.json")).st_mtime
        except OSError:
            used = os.stat(d).st_mtime
        entries.append((used, d))
    entries.sort()
    total = _size(root) if max_bytes >= 0 else 0
    removed = []
    for used, d in entries:
        if now - used <= max_age_s and (total <= max_bytes or now - used < GRACE_S):
            break
        fd = _lock(d, True, wait=False)
        if fd is None:            # another process reads it
            continue
        try:
            size = _size(d)
            shutil.rmtree(d, ignore_errors=True)
        finally:
            os.close(fd)
        total -= size
        removed.append(d)
    return removed


def stage(uri: str, storage: dict | None = None) -> str:
    """A local copy of a remote file or directory (every file under it), in a cache keyed by the URI and its
    endpoint; a file is fetched again when its size or ETag / modification time changed, and a file the remote
    side no longer has is removed from the copy. Returns the local path. Reads the remote side only; each copy is
    written to a temporary name and renamed. The cache is bounded first (``clean_cache``)."""
    fs, path = _fs(uri, storage)
    try:
        fs.invalidate_cache(path)       # what the remote side holds now, not a listing fsspec kept
        info = fs.info(path)
        if info["type"] == "directory":
            files = {k: v for k, v in fs.find(path, detail=True).items() if v.get("type") != "directory"}
            root = path.rstrip("/")
        else:
            files, root = {path: info}, None
    except FileNotFoundError:
        raise InputError("no such file or directory", path=uri) from None
    except Exception as exc:  # noqa: BLE001 — a filesystem's own errors (botocore's NoCredentialsError, ...)
        raise InputError(f"cannot read it: {_why(exc)}", path=uri) from None
    base = _cache_dir(uri, _options(uri, storage))
    os.makedirs(base, exist_ok=True)
    clean_cache(keep=base)
    top = os.path.join(base, os.path.basename(path.rstrip("/")) or "root")
    fd = _lock(base, True)
    try:
        meta_path = os.path.join(base, ".stage.json")
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            meta = {}
        want = set()
        for rp, d in sorted(files.items()):
            local = top if root is None else os.path.join(top, *rp[len(root):].strip("/").split("/"))
            want.add(local)
            stamp = [d.get("size"), str(d.get("ETag") or d.get("etag") or d.get("LastModified") or d.get("mtime")
                                        or "")]
            if meta.get(rp) == stamp and os.path.exists(local) and os.path.getsize(local) == d.get("size"):
                continue
            os.makedirs(os.path.dirname(local), exist_ok=True)
            tmp = local + ".part"
            try:
                fs.get_file(rp, tmp)
            except Exception as exc:  # noqa: BLE001 — as above
                raise InputError(f"cannot read it: {_why(exc)}", path=_protocol_uri(rp, uri)) from None
            os.replace(tmp, local)
            meta[rp] = stamp
        _prune(base, top, want)
        meta = {k: v for k, v in meta.items() if k in files}
        with open(meta_path + ".part", "w") as f:
            json.dump(meta, f)
        os.replace(meta_path + ".part", meta_path)     # its mtime: when the entry was last used
        if root is not None:
            os.makedirs(top, exist_ok=True)
    finally:
        os.close(fd)
    return top


def _prune(base: str, top: str, want: set[str]) -> None:
    """Remove from an entry what the remote side no longer has (stale files, a file that became a folder)."""
    for d, dirs, names in os.walk(base, topdown=False):
        for n in names:
            p = os.path.join(d, n)
            if d == base and n in (".lock", ".stage.json"):
                continue
            if p not in want:
                os.unlink(p)
        if d not in (base, top) and not os.listdir(d):
            os.rmdir(d)


# ---------------------------------------------------------------- partitioned folders
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
        return named(self.display, path)


def named(display: Sequence[tuple[str, str]], path: str | None) -> str | None:
    """``path`` with the first matching local prefix of ``display`` ((local, URI) pairs) replaced by its URI."""
    if path:
        for local, uri in display:
            if path == local or path.startswith(local + os.sep):
                return uri + path[len(local):].replace(os.sep, "/")
    return path


def partition_leaves(path: str, values=()) -> list[tuple[str, tuple]]:
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
    from urllib.parse import unquote
    for n in parts:
        k, v = n.split("=", 1)
        out += partition_leaves(os.path.join(path, n), (*values, (unquote(k), unquote(v))))
    return out


def _remote_hits(p: str, storage: dict | None) -> list[str]:
    """A remote URI, or the URIs its glob matches (sorted); a glob that matches nothing is an input error."""
    if not _GLOB & set(p.split("://", 1)[1]):
        return [p]
    fs, path = _fs(p, storage)
    try:
        fs.invalidate_cache()
        found = fs.glob(path)
    except Exception as exc:  # noqa: BLE001 — as in stage
        raise InputError(f"cannot list it: {_why(exc)}", path=p) from None
    hits = [_protocol_uri(h, p) for h in sorted(found)]
    if not hits:
        raise InputError("no such file or directory (glob matched nothing)", path=p)
    return hits


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
        for uri in _remote_hits(p, storage):
            local = stage(uri, storage)
            locals_.append(local)
            display.append((local, uri.rstrip("/")))
    leaves = [leaf for p in locals_ for leaf in partition_leaves(p)]
    keys = {tuple(k for k, _ in v) for _, v in leaves}
    if len(keys) > 1:
        a, b = sorted(keys)[:2]
        raise InputError(f"partitioned folders with different keys ({'/'.join(a) or 'none'} and "
                         f"{'/'.join(b) or 'none'}): one table takes one layout", path=paths[0])
    return Resolved(tuple(leaves), tuple(display), next(iter(keys), ()))


def partition_keys(paths: Sequence[str], storage: dict | None = None) -> tuple[str, ...]:
    """The partition columns of data-source paths (``resolve``'s keys); for the schema, on the driver."""
    return resolve(paths, storage).keys


# ---------------------------------------------------------------- the CLI's PATHs (format.resolve_each's hook)
@dataclass
class Localized:
    """What ``localize`` made of the PATHs: the local paths to resolve, the (local prefix, URI) pairs that name
    them, the prefixes that are staged copies (read-only), and the errors of URIs that could not be staged."""

    paths: list[str]
    display: list[tuple[str, str]]
    staged: set[str]
    errors: dict[str, BaseException]
    _re: Any = None

    def name(self, s: str | None) -> str | None:
        return named(self.display, s)

    def text(self, text: str) -> str:
        """``text`` (JSON lines, a table) with every local path of ``display`` in it named by its URI: one pass,
        whole paths only (``/srv/log`` in ``/srv/log/1.log``, not in ``/srv/log2`` nor again inside the URI)."""
        if not self.display or not any(lo in text for lo, _ in self.display):
            return text
        import re
        if self._re is None:
            uris = dict(sorted(self.display, key=lambda d: -len(d[0])))
            alt = "|".join(re.escape(lo) for lo in uris)
            self._re = (re.compile(rf"(?<![\w./-])({alt})(?=/|[^\w.-]|$)"), uris)
        rx, uris = self._re
        return rx.sub(lambda m: uris[m.group(1)], text)

    def error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, WqError) and exc.path:
            exc.path = self.name(exc.path)
        return exc


def localize(paths: Sequence[str], storage: dict | None = None, *,
             read_as_is: Callable[[str], bool] = lambda p: False) -> Localized:
    """The CLI's PATHs with URIs made local: a ``file:`` URI its path, a remote URI its staged copy (a glob: every
    match), each named by its URI; other PATHs, and a remote URI that ``read_as_is`` (a format reads it itself: a
    database), as they are. A URI that cannot be staged keeps its place with its error (``Localized.errors``: the
    resolver reports it as that PATH's)."""
    loc = Localized([], [], set(), {})
    for p in paths:
        if not is_uri(p) or p.startswith("jdbc:") or (is_remote(p) and read_as_is(p)):
            loc.paths.append(p)
            continue
        try:
            if not is_remote(p):
                hits = expand_paths([p])
                for lo in hits:
                    loc.paths.append(lo)
                    uri = p.rstrip("/") if len(hits) == 1 and not _GLOB & set(p) else "file://" + os.path.abspath(lo)
                    loc.display.append((os.path.normpath(lo), uri))
                continue
            for uri in _remote_hits(p, storage):
                lo = stage(uri, storage)
                loc.paths.append(lo)
                loc.display.append((lo, uri.rstrip("/")))
                loc.staged.add(lo)
        except (WqError, OSError) as exc:
            loc.paths.append(p)
            loc.errors[p] = exc
    return loc


class NamedFormat:
    """A format whose reports, findings and rows name a URI instead of the local path (or staged copy) they were
    read from. Everything else is the format's own. ``read_only``: a staged copy — plans (pack, clean, repair)
    are refused."""

    def __init__(self, fmt, names: Localized, *, read_only: bool):
        self._fmt, self._names, self.read_only = fmt, names, read_only

    def __getattr__(self, name: str):
        return getattr(self._fmt, name)

    def __repr__(self) -> str:
        return repr(self._fmt)

    @property
    def format(self):
        """The format itself."""
        return self._fmt

    @property
    def localized(self) -> Localized:
        """The PATHs' local copies and URIs this format names (``stage_plan`` ships the staged ones)."""
        return self._names

    # -- naming
    def name(self, s: str | None) -> str | None:
        return self._names.name(s)

    def report(self, rep):
        """A LogReport (or VerifyReport) named by the URI: its root, findings, torn tail and folds."""
        if hasattr(rep, "logs") and not hasattr(rep, "findings"):
            for lr in rep.logs:
                self.report(lr)
            return rep
        rep.root = self.name(rep.root)
        for f in rep.findings:
            self.finding(f)
        if rep.last_good:
            rep.last_good = (self.name(rep.last_good[0]), *rep.last_good[1:])
        for fold in rep.folds.values():
            for attr in ("first", "last"):
                v = getattr(fold, attr, None)
                if v:
                    setattr(fold, attr, (self.name(v[0]), *v[1:]))
        return rep

    def finding(self, f):
        f.path, f.last_path = self.name(f.path), self.name(f.last_path)
        return f

    def event(self, ev):
        """A record or a finding of ``run``'s events, named by the URI."""
        p = getattr(ev, "path", None)
        if isinstance(p, str):
            with contextlib.suppress(AttributeError, dataclasses.FrozenInstanceError):
                ev.path = self.name(p)
        if isinstance(getattr(ev, "last_path", None), str):
            ev.last_path = self.name(ev.last_path)
        return ev

    @contextlib.contextmanager
    def _errors(self):
        try:
            yield
        except WqError as exc:
            raise self._names.error(exc) from None

    def _text(self, text: str) -> str:
        return self._names.text(text)

    # -- the format's parts, named by the URI
    @functools.cached_property
    def passes(self):
        return _NamedPasses(self)

    @functools.cached_property
    def dump(self):
        return _NamedDump(self)

    @functools.cached_property
    def plans(self):
        return None if self._fmt.plans is None else _NamedPlans(self)

    def run(self, log, opts, **kw):
        with self._errors():
            return _NamedPass(self._fmt.run(log, opts, **kw), self)

    def state_view(self, state, log=None):
        """The state's view, its rows and text naming the URI (replay rows carry a file: Kestrel, EVTJ, ...)."""
        return _Renamed(self._fmt.state_view(state, log), self._text)


class _NamedPart:
    """A part of a ``NamedFormat``'s format (``engine.caps``): what it does not name is the format's own."""

    def __init__(self, named: NamedFormat, part):
        self._n, self._part = named, part

    def __getattr__(self, name: str):
        return getattr(self._part, name)


class _NamedPasses(_NamedPart):
    def __init__(self, named: NamedFormat):
        super().__init__(named, named.format.passes)

    def run_log(self, log, opts, **kw):
        with self._n._errors():
            return self._n.report(self._part.run_log(log, opts, **kw))

    def verify(self, logs, opts, **kw):
        with self._n._errors():
            return self._n.report(self._part.verify(logs, opts, **kw))

    def stats_log(self, log, opts, **kw):
        with self._n._errors():
            rep, st = self._part.stats_log(log, opts, **kw)
        return self._n.report(rep), st

    def replay_findings(self, log, opts) -> Iterator:
        with self._n._errors():
            for f in self._part.replay_findings(log, opts):
                yield self._n.finding(f)

    def log_name(self, log) -> str:
        return self._n.name(self._part.log_name(log))


class _NamedDump(_NamedPart):
    def __init__(self, named: NamedFormat):
        super().__init__(named, named.format.dump)

    def encoded_records(self, log, opts, **kw):
        with self._n._errors():
            fast = self._part.encoded_records(log, opts, **kw)
        if fast is None:
            return None
        report, chunks = fast
        return self._n.report(report), ((n, self._n._text(text)) for n, text in chunks)

    def special(self, which, logs, opts, **kw):
        with self._n._errors():
            for stream, chunk in self._part.special(which, logs, opts, **kw):
                yield stream, self._n._text(chunk) if isinstance(chunk, str) else chunk


class _NamedPlans(_NamedPart):
    """A staged copy is no place to change files: every plan is refused there."""

    def __init__(self, named: NamedFormat):
        super().__init__(named, named.format.plans)

    def _check(self, what: str, log):
        if self._n.read_only:
            raise UsageError(f"{what} changes files, and this log is a read-only local copy of a remote URI: run "
                             f"{what} where the log is (a local path or file://)", path=self._n.name(log.root))

    def pack(self, log, opts):
        self._check("pack", log)
        return self._part.pack(log, opts)

    def repair(self, log, opts):
        self._check("repair", log)
        return self._part.repair(log, opts)

    def repair_loss(self, log, opts, prior=None):
        self._check("repair", log)
        return self._part.repair_loss(log, opts, prior)

    def clean(self, log, opts):
        self._check("clean", log)
        return self._part.clean(log, opts)


class _Renamed:
    """An object whose methods' results (strings, and the strings in dicts, lists, tuples and iterators of them)
    have the staged prefixes replaced by the URIs (``text``); attributes as they are."""

    def __init__(self, inner, text):
        self._inner, self._t = inner, text

    def __getattr__(self, name: str):
        v = getattr(self._inner, name)
        if not callable(v):
            return v

        def call(*a, **kw):
            return self._conv(v(*a, **kw))
        return call

    def _conv(self, v):
        if isinstance(v, str):
            return self._t(v)
        if isinstance(v, dict):
            return {k: self._conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self._conv(x) for x in v)
        if isinstance(v, Iterator):
            return (self._conv(x) for x in v)
        return v


class _NamedPass:
    """``Format.run``'s pass with its events and report named by the URI."""

    def __init__(self, inner, fmt: NamedFormat):
        self._inner, self._fmt = inner, fmt

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def events(self):
        with self._fmt._errors():
            for ev in self._inner.events():
                yield self._fmt.event(ev)

    @property
    def report(self):
        return self._fmt.report(self._inner.report)


def named_report(log, rep):
    """``rep`` (a LogReport) of ``log`` named as the caller named the log (a URI's; as it is otherwise): for
    runners that compute reports elsewhere (Spark)."""
    fmt = getattr(log, "fmt", None)
    return fmt.report(rep) if isinstance(fmt, NamedFormat) and not isinstance(rep, BaseException) else rep
