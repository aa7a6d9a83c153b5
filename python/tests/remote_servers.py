"""Local stand-ins for remote object stores, for python/tests/test_remote.py (no internet).

* :class:`ObjectServer`: a threaded HTTP/1.1 server on 127.0.0.1 serving in-memory objects
  ``{"/path": bytes}`` the way object_store's HTTP store expects a plain web server to: HEAD and
  GET with ``Content-Length``, ``ETag``, ``Last-Modified`` and ``Accept-Ranges: bytes``; ranged GETs
  (``Range: bytes=a-b``, ``bytes=a-``, ``bytes=-n``) answered 206 with ``Content-Range``; 404 for a
  missing object, 416 for a bad or unsatisfiable range; ``If-Match`` / ``If-None-Match`` (and the
  date preconditions) checked against the ETag (412, or 304 for a GET/HEAD whose If-None-Match
  matches). It counts the body bytes it sends (in total and per request) and records every request
  (method, path, Range and If-Match headers, status). Faults can be set per object:
  ``fail_first=n`` (the first n GETs are answered 503), ``cut_after=k`` (the first GET body is cut
  after k bytes: headers for the full length, k bytes, then the socket is closed) and
  ``replace_after_first_get=new_bytes`` (as a first GET is answered, with the old bytes, the
  object becomes ``new_bytes`` with a new ETag: every later request sees the new version).
* :class:`S3Server`: moto's S3 in a thread on 127.0.0.1 (port chosen by the OS), with the
  ``storage_options`` that reach it (object_store's configuration keys, as Polars takes them), the
  same as ``AWS_*`` environment variables, and a boto3 client.

Only loopback addresses are used; nothing here reaches the network. moto and boto3 are imported
when an :class:`S3Server` is made (they are test requirements: tests/requirements.txt).
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import socket
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ObjectServer", "Request", "S3Server"]

#: Body bytes written to the socket per send (the byte counters move in steps of at most this).
SEND_CHUNK = 64 * 1024


@dataclass
class Request:
    """One request the :class:`ObjectServer` saw."""

    method: str
    path: str
    range: str | None
    if_match: str | None = None
    if_none_match: str | None = None
    status: int | None = None
    #: body bytes written for this request (updated as they are sent)
    body_bytes: int = 0
    #: the body was cut on purpose (``cut_after``) or the client went away before its end
    cut: bool = False


@dataclass
class _Object:
    data: bytes
    etag: str
    last_modified: float
    fail_first: int = 0
    cut_after: int | None = None
    replace_after_first_get: bytes | None = None
    ranges: bool = True  # False: Range is ignored (a 200 with the whole body), as some servers do
    gets: int = 0  # GETs answered 2xx so far


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    idle: threading.Condition = field(init=False)
    objects: dict[str, _Object] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    bytes_sent: int = 0
    bodies_in_flight: int = 0
    connections: set = field(default_factory=set)
    last_modified: float = 0.0

    def __post_init__(self) -> None:
        self.idle = threading.Condition(self.lock)


def _etag(data: bytes, generation: int) -> str:
    # content and generation: a put of new bytes always changes it
    return '"%s-%d"' % (hashlib.md5(data).hexdigest(), generation)


def _etag_list(header: str) -> list[str]:
    return [t.strip() for t in header.split(",") if t.strip()]


def _strong_match(tags: list[str], etag: str) -> bool:
    return "*" in tags or etag in tags  # If-Match: strong comparison (a W/ tag never matches)


def _weak_match(tags: list[str], etag: str) -> bool:
    bare = etag.removeprefix("W/")
    return "*" in tags or any(t.removeprefix("W/") == bare for t in tags)


def _http_date(value: str) -> Any:
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # an invalid date: the precondition is ignored (RFC 9110)


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) inclusive, or None when the range is malformed or unsatisfiable (416)."""
    m = _RANGE.match(header.strip())
    if not m or (m[1] == "" and m[2] == ""):
        return None  # multi-range, other units, garbage: refused loudly rather than ignored
    if m[1] == "":  # suffix: the last n bytes
        n = int(m[2])
        if n == 0 or size == 0:
            return None
        return max(0, size - n), size - 1
    first = int(m[1])
    last = int(m[2]) if m[2] else size - 1
    if first >= size or last < first:
        return None
    return first, min(last, size - 1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every response has a Content-Length
    server_version = "msgpack-arrow-test-objects/1"
    timeout = 60  # a client that neither reads nor closes frees its thread after this

    # the server object carries the shared state
    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (quiet)
        pass

    def setup(self) -> None:
        super().setup()
        sndbuf = getattr(self.server, "send_buffer", None)
        if sndbuf:
            # a fixed, small send buffer (no autotuning to 4 MiB): what the counters say was sent
            # is close to what the client has taken in
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        with self.state.lock:
            self.state.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.state.lock:
                self.state.connections.discard(self.connection)

    # ---- helpers --------------------------------------------------------------------------

    def _record(self) -> Request:
        r = Request(
            method=self.command,
            path=self.path,
            range=self.headers.get("Range"),
            if_match=self.headers.get("If-Match"),
            if_none_match=self.headers.get("If-None-Match"),
        )
        with self.state.lock:
            self.state.requests.append(r)
        return r

    def _drain_request_body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _simple(self, rec: Request, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        rec.status = status
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if status == 304:
            pass  # no body, and no Content-Length: it would describe the object
        elif status != 204:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD" and status not in (204, 304):
            self._send_body(rec, body, len(body))

    def _send_body(self, rec: Request, body: bytes | memoryview, limit: int) -> bool:
        """Write body[:limit] in chunks, counting; False if the client went away."""
        view = memoryview(body)[:limit]
        st = self.state
        with st.lock:
            st.bodies_in_flight += 1
        try:
            for i in range(0, len(view), SEND_CHUNK):
                chunk = view[i : i + SEND_CHUNK]
                try:
                    self.wfile.write(chunk)
                except OSError:  # reset, broken pipe, timeout: the client dropped the body
                    rec.cut = True
                    self.close_connection = True
                    return False
                with st.lock:
                    st.bytes_sent += len(chunk)
                    rec.body_bytes += len(chunk)
            return True
        finally:
            with st.lock:
                st.bodies_in_flight -= 1
                st.idle.notify_all()

    def _preconditions(self, rec: Request, obj: _Object) -> bool:
        """False when a precondition failed (and the 412/304 answer was sent)."""
        h = self.headers
        safe = self.command in ("GET", "HEAD")
        meta = {"ETag": obj.etag, "Last-Modified": email.utils.formatdate(obj.last_modified, usegmt=True)}
        im = h.get("If-Match")
        if im is not None and not _strong_match(_etag_list(im), obj.etag):
            self._simple(rec, 412, b"If-Match: the ETag does not match\n", meta)
            return False
        ius = h.get("If-Unmodified-Since")
        if im is None and ius is not None:
            t = _http_date(ius)
            if t is not None and int(obj.last_modified) > t.timestamp():
                self._simple(rec, 412, b"If-Unmodified-Since: modified since\n", meta)
                return False
        inm = h.get("If-None-Match")
        if inm is not None and _weak_match(_etag_list(inm), obj.etag):
            if safe:
                self._simple(rec, 304, b"", meta)
            else:
                self._simple(rec, 412, b"If-None-Match: the ETag matches\n", meta)
            return False
        ims = h.get("If-Modified-Since")
        if inm is None and ims is not None and safe:
            t = _http_date(ims)
            if t is not None and int(obj.last_modified) <= t.timestamp():
                self._simple(rec, 304, b"", meta)
                return False
        return True

    # ---- methods --------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self._get_or_head()

    def do_GET(self) -> None:
        self._get_or_head()

    def _get_or_head(self) -> None:
        rec = self._record()
        st = self.state
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        is_get = self.command == "GET"
        with st.lock:
            obj = st.objects.get(path)
            if obj is not None:
                # a snapshot: a replacement during this answer does not change what it sends
                data, etag, mtime = obj.data, obj.etag, obj.last_modified
                fail = is_get and obj.fail_first > 0
                if fail:
                    obj.fail_first -= 1
        if obj is None:
            self._simple(rec, 404, f"no object {path}\n".encode())
            return
        if fail:
            self._simple(rec, 503, b"service unavailable (fault injected)\n", {"Retry-After": "0"})
            return
        if not self._preconditions(rec, obj):
            return
        size = len(data)
        headers = {
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "bytes",
            "ETag": etag,
            "Last-Modified": email.utils.formatdate(mtime, usegmt=True),
        }
        if not obj.ranges:
            del headers["Accept-Ranges"]
        rng = self.headers.get("Range") if is_get and obj.ranges else None
        if rng is not None:
            span = _parse_range(rng, size)
            if span is None:
                self._simple(rec, 416, b"range not satisfiable\n", {"Content-Range": f"bytes */{size}", "ETag": etag})
                return
            first, last = span
            status = 206
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        else:
            first, last = 0, size - 1
            status = 200
        length = last - first + 1
        cut = None
        if is_get:
            with st.lock:
                obj.gets += 1
                if obj.gets == 1:
                    cut = obj.cut_after
                    if obj.replace_after_first_get is not None and st.objects.get(path) is obj:
                        # replaced now, before this answer's body goes out (which still carries
                        # the old bytes): no later request, on any connection, can race it
                        st.objects[path] = _new_object(st, obj.replace_after_first_get)
                        obj.replace_after_first_get = None
        rec.status = status
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if not is_get:
            return
        limit = length if cut is None else min(cut, length)
        self._send_body(rec, memoryview(data)[first : last + 1], limit)
        if limit < length and not rec.cut:
            # headers promised `length` bytes: closing now is a body cut short mid-transfer
            rec.cut = True
            self.close_connection = True
            self._close_now()

    def _close_now(self) -> None:
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_PUT(self) -> None:
        rec = self._record()
        body = self._drain_request_body()
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        st = self.state
        with st.lock:
            obj = st.objects.get(path)
        if obj is not None and not self._preconditions(rec, obj):
            return
        if obj is None and self.headers.get("If-Match") is not None:
            self._simple(rec, 412, b"If-Match: no such object\n")
            return
        with st.lock:
            st.objects[path] = _new_object(st, body)
            etag = st.objects[path].etag
        self._simple(rec, 201 if obj is None else 204, b"", {"ETag": etag})

    def do_DELETE(self) -> None:
        rec = self._record()
        self._drain_request_body()
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        with self.state.lock:
            gone = self.state.objects.pop(path, None)
        if gone is None:
            self._simple(rec, 404, f"no object {path}\n".encode())
        else:
            self._simple(rec, 204)

    def _not_allowed(self) -> None:
        rec = self._record()
        self._drain_request_body()
        # PROPFIND (object_store's list), MKCOL, COPY, POST, ...: not a WebDAV server
        self._simple(rec, 405, f"{self.command} not supported\n".encode(), {"Allow": "GET, HEAD, PUT, DELETE"})

    do_POST = do_PROPFIND = do_MKCOL = do_COPY = do_MOVE = do_OPTIONS = do_PATCH = _not_allowed


def _new_object(st: _State, data: bytes) -> _Object:
    """A new version (call with st.lock held): new ETag, a Last-Modified later than any before."""
    st.last_modified = max(float(int(time.time())), st.last_modified + 1.0)
    gen = int(st.last_modified)
    return _Object(data=bytes(data), etag=_etag(data, gen), last_modified=st.last_modified)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class ObjectServer:
    """In-memory objects over HTTP/1.1 on 127.0.0.1 (see the module docstring).

    >>> with ObjectServer({"/a.bin": b"hello"}) as s:
    ...     import urllib.request
    ...     urllib.request.urlopen(s.url("/a.bin")).read()
    b'hello'
    """

    def __init__(
        self, objects: dict[str, bytes] | None = None, host: str = "127.0.0.1", send_buffer: int | None = 256 * 1024
    ) -> None:
        self._state = _State()
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.state = self._state  # type: ignore[attr-defined]
        # SO_SNDBUF of each connection (None: the kernel's autotuned default, up to
        # net.ipv4.tcp_wmem's maximum, 4 MiB here, all counted as sent once accepted)
        self._httpd.send_buffer = send_buffer  # type: ignore[attr-defined]
        self.host, self.port = self._httpd.server_address[:2]
        self._thread: threading.Thread | None = None
        for path, data in (objects or {}).items():
            self.put(path, data)

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> ObjectServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="object-server", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection (a client blocked on a body sees it end)."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(10)
            self._thread = None
        with self._state.lock:
            conns = list(self._state.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()

    def __enter__(self) -> ObjectServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- objects --------------------------------------------------------------------------

    def url(self, path: str) -> str:
        if not path.startswith("/"):
            path = "/" + path
        return f"http://{self.host}:{self.port}{path}"

    def put(
        self,
        path: str,
        data: bytes,
        *,
        fail_first: int = 0,
        cut_after: int | None = None,
        replace_after_first_get: bytes | None = None,
        ranges: bool = True,
    ) -> str:
        """Add or replace an object (a new ETag); returns its URL. Faults as :meth:`set_fault`."""
        if not path.startswith("/"):
            path = "/" + path
        with self._state.lock:
            self._state.objects[path] = _new_object(self._state, data)
        self.set_fault(
            path,
            fail_first=fail_first,
            cut_after=cut_after,
            replace_after_first_get=replace_after_first_get,
            ranges=ranges,
        )
        return self.url(path)

    def set_fault(
        self,
        path: str,
        *,
        fail_first: int = 0,
        cut_after: int | None = None,
        replace_after_first_get: bytes | None = None,
        ranges: bool = True,
    ) -> None:
        """Faults of one object: the next ``fail_first`` GETs are answered 503; the object's first
        GET answered 2xx has its body cut after ``cut_after`` bytes (its headers announce the whole
        length; then the socket is closed); as that first GET is answered the object becomes
        ``replace_after_first_get`` (a new ETag; that answer still sends the old bytes, so the
        client sees the change on its next request); with ``ranges=False`` a Range header is
        ignored (a 200 with the whole body, no ``Accept-Ranges``)."""
        if not path.startswith("/"):
            path = "/" + path
        with self._state.lock:
            obj = self._state.objects[path]
            obj.fail_first = fail_first
            obj.cut_after = cut_after
            obj.replace_after_first_get = None if replace_after_first_get is None else bytes(replace_after_first_get)
            obj.ranges = ranges

    def delete(self, path: str) -> None:
        with self._state.lock:
            del self._state.objects[path if path.startswith("/") else "/" + path]

    def data(self, path: str) -> bytes:
        with self._state.lock:
            return self._state.objects[path if path.startswith("/") else "/" + path].data

    def etag(self, path: str) -> str:
        with self._state.lock:
            return self._state.objects[path if path.startswith("/") else "/" + path].etag

    # ---- what was seen --------------------------------------------------------------------

    @property
    def bytes_sent(self) -> int:
        """Body bytes written to sockets so far (all requests; headers not counted)."""
        with self._state.lock:
            return self._state.bytes_sent

    @property
    def requests(self) -> list[Request]:
        """Every request so far, in arrival order (copies)."""
        with self._state.lock:
            return [Request(**vars(r)) for r in self._state.requests]

    def requests_for(self, path: str, method: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.path.split("?", 1)[0] == path and (method is None or r.method == method)]

    def reset_counters(self) -> None:
        with self._state.lock:
            self._state.bytes_sent = 0
            self._state.requests.clear()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no response body is being sent; False if one still is after ``timeout``
        (a client that holds a response open without reading it)."""
        deadline = time.monotonic() + timeout
        with self._state.idle:
            while self._state.bodies_in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._state.idle.wait(left)
        return True

    def summary(self) -> str:
        """The requests seen, one a line (for assertion messages)."""
        return "\n".join(
            f"{r.method} {r.path} range={r.range} if-match={r.if_match} -> {r.status} "
            f"({r.body_bytes} body bytes{', cut' if r.cut else ''})"
            for r in self.requests
        )


# ---- S3 (moto) ------------------------------------------------------------------------------


class S3Server:
    """moto's S3 on 127.0.0.1, port chosen by the OS (``ThreadedMotoServer(port=0)``).

    moto keeps its buckets in process-wide state: servers and tests in one process share them, so
    tests use fresh bucket names (:meth:`new_bucket`). Any credentials are accepted.
    """

    ACCESS_KEY = "testing"
    SECRET_KEY = "testing"
    REGION = "us-east-1"

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.endpoint: str | None = None

    def start(self) -> S3Server:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def storage_options(self, secret: str | None = None) -> dict[str, str]:
        """object_store's configuration keys for this server (Polars' ``storage_options``)."""
        assert self.endpoint, "start() first"
        return {
            "endpoint_url": self.endpoint,
            "aws_access_key_id": self.ACCESS_KEY,
            "aws_secret_access_key": self.SECRET_KEY if secret is None else secret,
            "aws_region": self.REGION,
            "allow_http": "true",
        }

    def env(self, secret: str | None = None) -> dict[str, str]:
        """The same as ``AWS_*`` environment variables (what object_store's ``from_env`` reads)."""
        assert self.endpoint, "start() first"
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY if secret is None else secret,
            "AWS_REGION": self.REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self) -> Any:
        """A boto3 S3 client of this server (path-style addressing)."""
        import boto3
        from botocore.config import Config

        assert self.endpoint, "start() first"
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.ACCESS_KEY,
            aws_secret_access_key=self.SECRET_KEY,
            region_name=self.REGION,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def new_bucket(self, prefix: str = "test") -> str:
        """Create a bucket with a fresh name; returns the name."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name
