"""Remote objects: ``http(s)://`` and ``s3://`` URLs where a path goes (read_msgpack, scan_msgpack,
write_msgpack, the ``msgpack-arrow`` command), read and written through object_store.

Everything runs against local servers (remote_servers.py, fixtures in conftest.py): an in-memory
HTTP/1.1 server with fault injection (503s, a body cut mid-transfer, an object replaced between
requests) that counts the bytes it sends, and moto's S3. Every result is compared with what the
same bytes give when read from a local file. No internet.

Skipped only when msgpack_arrow was built without remote support (``msgpack_arrow.REMOTE`` false);
with MSGPACK_ARROW_REQUIRE_REMOTE=1 (make test) they fail instead.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import traceback
import uuid
import warnings
from pathlib import Path

import msgpack
import msgpack_numpy
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_cli_command import _command

import msgpack_arrow as ma

REMOTE = bool(getattr(ma, "REMOTE", False))
REQUIRE_REMOTE = os.environ.get("MSGPACK_ARROW_REQUIRE_REMOTE") == "1"

pytestmark = pytest.mark.skipif(
    not REMOTE and not REQUIRE_REMOTE,
    reason="this build of msgpack_arrow has no remote-store support (msgpack_arrow.REMOTE is false: "
    "built without object_store); set MSGPACK_ARROW_REQUIRE_REMOTE=1 to fail instead of skipping",
)

MiB = 1 << 20
#: a secret key that must never be printed (moto accepts any credentials)
SECRET = "msgpack-arrow-S3cr3t-Zq81xK-never-printed"


@pytest.fixture(autouse=True, scope="module")
def _remote_env():
    """Fail (not skip) without remote support under MSGPACK_ARROW_REQUIRE_REMOTE=1; keep the
    developer's AWS_* variables (a real endpoint, profile, CA bundle) and proxies out of these tests."""
    if not REMOTE:
        pytest.fail(
            "MSGPACK_ARROW_REQUIRE_REMOTE=1 but msgpack_arrow.REMOTE is false: this build has no "
            "remote-store (object_store) support"
        )
    with pytest.MonkeyPatch.context() as mp:
        for k in list(os.environ):
            if k.startswith("AWS_"):
                mp.delenv(k)
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setenv("no_proxy", "127.0.0.1,localhost")
        yield


# ---- data ------------------------------------------------------------------------------------


def records(n: int, *, dim: int = 8, start: int = 0, bump: float = 0.0) -> bytes:
    """A records stream as msgpack-numpy writes it: {"id", "label", "emb": float32[dim]} per row."""
    return b"".join(
        msgpack.packb(
            {"id": i, "label": f"r{i}", "emb": np.arange(dim, dtype="<f4") + i + bump},
            default=msgpack_numpy.encode,
        )
        for i in range(start, start + n)
    )


def local_read(tmp_path: Path, data: bytes, name: str = "local.msgpack") -> pl.DataFrame:
    """What the same bytes read as from a local file."""
    p = tmp_path / name
    p.write_bytes(data)
    return ma.read_msgpack(p)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[bytes, Path]:
    """~64 MiB: 4100 rows of 4096 float32 (16 KiB a row), and the same bytes in a local file."""
    data = records(4100, dim=4096)
    assert len(data) >= 64 * MiB
    p = tmp_path_factory.mktemp("big") / "big.msgpack"
    p.write_bytes(data)
    return data, p


def error_text(e: BaseException) -> str:
    """Everything an error shows: message, type, chained causes, as a traceback prints them."""
    return "".join(traceback.format_exception(e)) + repr(e) + repr(getattr(e, "args", ()))


# ---- HTTP ------------------------------------------------------------------------------------


def test_http_read_equals_local(http_server, tmp_path):
    data = records(300)
    url = http_server.put("/dumps/x.msgpack", data)
    want = local_read(tmp_path, data)
    assert_frame_equal(ma.read_msgpack(url), want)
    assert_frame_equal(ma.read_msgpack(url, columns=["label", "id"], n_rows=17), want.select("label", "id").head(17))
    assert_frame_equal(ma.scan_msgpack(url).collect(), want)
    # a plain web server is enough: object_store's HTTP store sends HEAD/GET only for a read
    # (no PROPFIND listing, which WebDAV servers alone answer)
    methods = {r.method for r in http_server.requests}
    assert methods <= {"GET", "HEAD"}, http_server.summary()


def test_http_rows_typed_late_read_as_the_local_file(http_server, tmp_path):
    # an optional field nil for 1,500 rows, an int column with a float at row 2,000: the object
    # is fetched once and typed from every row, plain or gzip-compressed, as the local file is
    import gzip

    rows = [{"n": i if i != 2000 else 2000.5, "opt": None if i < 1500 else f"s{i}"} for i in range(3000)]
    data = b"".join(msgpack_numpy.packb(r) for r in rows)
    want = local_read(tmp_path, data)
    assert want.schema == {"n": pl.Float64, "opt": pl.String}
    for name, body in (("/late.msgpack", data), ("/late.msgpack.gz", gzip.compress(data))):
        url = http_server.put(name, body)
        assert_frame_equal(ma.read_msgpack(url), want)
        # not held: fetched as a stream, typed from its first rows
        with pytest.raises(ma.DecodeError, match='record 1500, column "opt"'):
            ma.read_msgpack(url, hold_decompressed=0)
        # a scan's schema comes from the object's first rows (its head must not fetch it all)
        with pytest.raises(ma.DecodeError, match='record 1500, column "opt"'):
            ma.scan_msgpack(url).collect()


def test_http_scan_head_reads_only_the_start(http_server, big):
    data, path = big
    url = http_server.put("/big.msgpack", data)
    got = ma.scan_msgpack(url).head(10).collect()
    http_server.wait_idle(5)  # a body still being written is counted up to now
    sent = http_server.bytes_sent
    assert sent <= 16 * MiB, (
        f"head(10) of a {len(data) / MiB:.0f} MiB object moved {sent / MiB:.1f} MiB (at most 16 expected):\n"
        + http_server.summary()
    )
    assert_frame_equal(got, ma.read_msgpack(path).head(10))


def test_http_read_comes_in_windows_and_the_rest(http_server, big):
    # 2 MiB, 4 MiB, then the rest in one GET: a full read makes three requests, not one per window
    data, path = big
    url = http_server.put("/big.msgpack", data)
    assert_frame_equal(ma.read_msgpack(url), ma.read_msgpack(path))
    gets = http_server.requests_for("/big.msgpack", "GET")
    assert [r.status for r in gets] == [206, 206, 206], http_server.summary()
    assert sum(r.body_bytes for r in gets) == len(data), http_server.summary()
    # the later ranges are guarded by the first answer's ETag
    assert gets[0].if_match is None and all(r.if_match == http_server.etag("/big.msgpack") for r in gets[1:])


def test_http_server_without_ranges_is_read_in_one_get(http_server, tmp_path):
    data = records(3000, dim=512)  # 6 MiB: more than the first window
    url = http_server.put("/x.msgpack", data, ranges=False)
    assert_frame_equal(ma.read_msgpack(url), local_read(tmp_path, data))
    assert [r.status for r in http_server.requests_for("/x.msgpack", "GET")] == [200, 200], http_server.summary()


def test_http_empty_object_reads_as_an_empty_file(http_server, tmp_path):
    url = http_server.put("/empty.msgpack", b"")
    assert_frame_equal(ma.read_msgpack(url), local_read(tmp_path, b""))


def test_http_object_replaced_between_windows_is_an_error(http_server):
    # the first window arrives whole from the old object; the next one can only come from the new
    n = 3000
    data, new = records(n, dim=512), records(n, dim=512, bump=0.5)
    url = http_server.put("/x.msgpack", data, replace_after_first_get=new)
    with pytest.raises(OSError, match="changed") as ei:
        got = ma.read_msgpack(url)
        print(f"returned {got.height} rows\n{http_server.summary()}")
    assert "truncat" not in str(ei.value).lower()
    assert any(r.status == 412 for r in http_server.requests_for("/x.msgpack", "GET")), http_server.summary()


def test_http_scan_projection(http_server, tmp_path):
    data = records(500, dim=32)
    url = http_server.put("/x.msgpack", data)
    want = local_read(tmp_path, data)
    assert_frame_equal(ma.scan_msgpack(url).select("id").collect(), want.select("id"))
    assert_frame_equal(
        ma.scan_msgpack(url).filter(pl.col("id") % 7 == 3).select("label", "emb").collect(),
        want.filter(pl.col("id") % 7 == 3).select("label", "emb"),
    )


def test_http_503_is_retried(http_server, tmp_path):
    data = records(1000, dim=64)
    url = http_server.put("/x.msgpack", data, fail_first=2)
    assert_frame_equal(ma.read_msgpack(url), local_read(tmp_path, data))
    gets = http_server.requests_for("/x.msgpack", "GET")
    assert [r.status for r in gets[:3]] in ([503, 503, 200], [503, 503, 206]), http_server.summary()


def test_http_body_cut_mid_transfer_is_resumed(http_server, tmp_path):
    data = records(2000, dim=256)  # ~2 MiB
    cut = len(data) // 2 + 7  # inside a record
    url = http_server.put("/x.msgpack", data, cut_after=cut)
    assert_frame_equal(ma.read_msgpack(url), local_read(tmp_path, data))
    gets = http_server.requests_for("/x.msgpack", "GET")
    assert gets[0].cut, http_server.summary()
    # resumed where the cut is (a ranged GET from that byte), not read again from the start
    assert any(r.range and r.range.replace(" ", "").startswith(f"bytes={cut}-") for r in gets[1:]), (
        http_server.summary()
    )


@pytest.mark.parametrize("change", ["same-size", "shorter", "longer"])
@pytest.mark.parametrize("on_truncated", ["error", "keep"])
def test_http_object_replaced_mid_read_is_an_error(http_server, change, on_truncated):
    # The first GET is cut halfway and the object replaced as it is answered: the rest of the
    # bytes can only come from the new version. Splicing them on would give a mixed table (of the
    # right length when the sizes match), stopping at the cut a short one: both are wrong.
    n = 2000
    data = records(n, dim=256)
    new = {
        "same-size": records(n, dim=256, bump=0.5),
        "shorter": records(n - 50, dim=256),
        "longer": records(n + 50, dim=256),
    }[change]
    if change == "same-size":
        assert len(new) == len(data) and new != data
    url = http_server.put("/x.msgpack", data, cut_after=len(data) // 2 + 7, replace_after_first_get=new)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # a TruncatedInputWarning is recorded, not raised
        with pytest.raises(Exception) as ei:
            got = ma.read_msgpack(url, on_truncated=on_truncated)
            print(f"returned {got.height} rows (old object: {n})\n{http_server.summary()}")
    e = ei.value
    assert not isinstance(e, Warning), f"{type(e).__name__}: {e}"
    assert not [w for w in caught if issubclass(w.category, ma.TruncatedInputWarning)], [str(w.message) for w in caught]
    # the object was not cut short: it changed; the message must not call it a truncated input
    msg = str(e)
    assert not re.search(r"truncat|cut short", msg, re.IGNORECASE), msg


def test_http_missing_object_is_file_not_found(http_server):
    http_server.put("/present.msgpack", records(3))
    url = http_server.url("/nope/missing.msgpack")
    with pytest.raises(FileNotFoundError, match=re.escape(url)):
        ma.read_msgpack(url)
    with pytest.raises(FileNotFoundError, match=re.escape(url)):
        ma.scan_msgpack(url).collect()


# ---- S3 (moto) -------------------------------------------------------------------------------


def test_s3_read_and_scan_equal_local(s3_server, tmp_path):
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    data = records(300, dim=16)
    s3_server.client().put_object(Bucket=bucket, Key="dumps/x.msgpack", Body=data)
    url = f"s3://{bucket}/dumps/x.msgpack"
    want = local_read(tmp_path, data)
    assert_frame_equal(ma.read_msgpack(url, storage_options=so), want)
    assert_frame_equal(ma.scan_msgpack(url, storage_options=so).collect(), want)
    assert_frame_equal(
        ma.scan_msgpack(url, storage_options=so).filter(pl.col("id") >= 250).select("label", "id").collect(),
        want.filter(pl.col("id") >= 250).select("label", "id"),
    )


def test_s3_glob_reads_the_matches_in_sorted_order(s3_server, tmp_path):
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    objects = {
        # written out of order; sorted as strings: part-1, part-10, part-2 (as a local glob sorts)
        "dir/part-2.msgpack": records(7, start=200),
        "dir/part-10.msgpack": records(5, start=100),
        "dir/part-1.msgpack": records(3, start=0),
        # not matched by dir/*.msgpack
        "dir/notes.txt": b"id,name\n1,alpha\n",
        "dir/sub/part-0.msgpack": records(2, start=900),
        "dir2/part-3.msgpack": records(4, start=300),
    }
    client = s3_server.client()
    for key, data in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(data)
    local = sorted(glob.glob(str(tmp_path / "dir" / "*.msgpack")))
    assert [Path(p).name for p in local] == ["part-1.msgpack", "part-10.msgpack", "part-2.msgpack"]
    want = pl.concat([ma.read_msgpack(p) for p in local])
    assert_frame_equal(ma.read_msgpack(str(tmp_path / "dir" / "*.msgpack")), want)
    url = f"s3://{bucket}/dir/*.msgpack"
    assert_frame_equal(ma.read_msgpack(url, storage_options=so), want)
    assert_frame_equal(ma.scan_msgpack(url, storage_options=so).collect(), want)


def test_dask_reads_an_s3_glob_one_partition_per_object(s3_server, tmp_path):
    """msgpack_arrow.dask takes the same URLs and storage_options, through the reader's own
    object-store client (no fsspec/s3fs): the glob is listed, each partition streams its object."""
    mad = pytest.importorskip("msgpack_arrow.dask")
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    client = s3_server.client()
    parts = {f"d/part-{i}.msgpack": records(20 + i, start=100 * i) for i in (2, 0, 1)}
    for key, data in parts.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)
    df = mad.read_msgpack(f"s3://{bucket}/d/*.msgpack", columns=["id", "emb"], storage_options=so)
    assert df.npartitions == 3
    got = pl.from_pandas(df.compute(scheduler="sync").reset_index(drop=True))
    want = pl.concat([local_read(tmp_path, parts[f"d/part-{i}.msgpack"], f"{i}.msgpack") for i in range(3)])
    assert got["id"].to_list() == want["id"].to_list()
    assert np.array_equal(np.stack(got["emb"].to_list()), want["emb"].to_numpy())


@pytest.mark.parametrize("rows,dim", [(300, 8), (1300, 4096)], ids=["small", "multipart-20MiB"])
def test_s3_write_equals_local_write(s3_server, tmp_path, rows, dim):
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    df = local_read(tmp_path, records(rows, dim=dim))
    url = f"s3://{bucket}/out/d.msgpack"
    ma.write_msgpack(df, url, storage_options=so)
    local = tmp_path / "written.msgpack"
    ma.write_msgpack(df, local)
    client = s3_server.client()
    body = client.get_object(Bucket=bucket, Key="out/d.msgpack")["Body"].read()
    assert body == local.read_bytes()
    assert_frame_equal(ma.read_msgpack(url, storage_options=so), df)
    # writing again replaces the object whole
    ma.write_msgpack(df.head(5), url, storage_options=so)
    ma.write_msgpack(df.head(5), local)
    assert client.get_object(Bucket=bucket, Key="out/d.msgpack")["Body"].read() == local.read_bytes()


def test_s3_failed_write_aborts_the_upload_and_keeps_the_previous_object(s3_server):
    """The upload is started when the output is opened; an error after that (here: a column
    with no msgpack-numpy form) aborts it: the previous object stays byte-identical and no
    multipart upload is left behind."""
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="out.msgpack", Body=b"previous")
    url = f"s3://{bucket}/out.msgpack"
    objects = pl.DataFrame({"o": pl.Series([object()], dtype=pl.Object)})
    with pytest.raises(ma.EncodeError):
        ma.write_msgpack(objects, url, storage_options=so)
    assert client.get_object(Bucket=bucket, Key="out.msgpack")["Body"].read() == b"previous"
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_s3_sink_failing_mid_stream_aborts_at_once(s3_server, tmp_path):
    """A query that fails after several parts are uploaded (a Python UDF raising on a later
    batch): its exception comes back as it was, within seconds (the abort runs with the GIL
    released, so it never waits on object_store's retry budget), and the upload is aborted."""
    import time

    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="out.msgpack", Body=b"previous")
    n = 200_000
    src = tmp_path / "src.parquet"
    emb = np.random.default_rng(5).random((n, 64), dtype=np.float32)
    pl.DataFrame({"x": np.arange(n), "e": emb}).write_parquet(src, row_group_size=20_000)

    def fail_late(s: pl.Series) -> pl.Series:
        if len(s) and s[0] >= 150_000:
            raise ValueError("the query failed late")
        return s

    lf = pl.scan_parquet(src).with_columns(
        pl.col("x").map_batches(fail_late, return_dtype=pl.Int64, is_elementwise=True)
    )
    start = time.monotonic()
    with pytest.raises(ValueError, match="the query failed late"):
        ma.sink_msgpack(lf, f"s3://{bucket}/out.msgpack", storage_options=so)
    assert time.monotonic() - start < 30
    assert client.get_object(Bucket=bucket, Key="out.msgpack")["Body"].read() == b"previous"
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_s3_missing_key_is_file_not_found(s3_server):
    bucket, so = s3_server.new_bucket(), s3_server.storage_options()
    s3_server.client().put_object(Bucket=bucket, Key="present.msgpack", Body=records(3))
    url = f"s3://{bucket}/nope/missing.msgpack"
    with pytest.raises(FileNotFoundError, match=re.escape(url)):
        ma.read_msgpack(url, storage_options=so)
    with pytest.raises(FileNotFoundError, match=re.escape(url)):
        ma.scan_msgpack(url, storage_options=so).collect()


def test_s3_errors_never_show_the_secret_key(s3_server, tmp_path):
    bucket, so = s3_server.new_bucket(), s3_server.storage_options(secret=SECRET)
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="notes.msgpack", Body=b"id,name\n1,alpha\n2,beta\n")
    client.put_object(Bucket=bucket, Key="cut.msgpack", Body=records(10)[:-5])
    df = local_read(tmp_path, records(4))
    other = f"no-such-bucket-{uuid.uuid4().hex[:8]}"
    failing = {
        "missing key": lambda: ma.read_msgpack(f"s3://{bucket}/missing.msgpack", storage_options=so),
        "missing key, scan": lambda: ma.scan_msgpack(f"s3://{bucket}/missing.msgpack", storage_options=so).collect(),
        "glob matching nothing": lambda: ma.read_msgpack(f"s3://{bucket}/none/*.msgpack", storage_options=so),
        "not msgpack": lambda: ma.read_msgpack(f"s3://{bucket}/notes.msgpack", storage_options=so),
        "truncated": lambda: ma.read_msgpack(f"s3://{bucket}/cut.msgpack", storage_options=so),
        "missing bucket": lambda: ma.read_msgpack(f"s3://{other}/x.msgpack", storage_options=so),
        "write to a missing bucket": lambda: ma.write_msgpack(df, f"s3://{other}/x.msgpack", storage_options=so),
        "unknown option": lambda: ma.read_msgpack(
            f"s3://{bucket}/notes.msgpack", storage_options={**so, "not_an_option": "1"}
        ),
    }
    for what, call in failing.items():
        with pytest.raises(Exception) as ei:
            call()
        text = error_text(ei.value)
        assert SECRET not in text, f"{what}: the secret key is in the error:\n{text}"


# ---- GCS and Azure ---------------------------------------------------------------------------
# Neither has a server on PyPI that object_store can talk to: gcp-storage-emulator (2026.7.19)
# sends no Last-Modified or ETag on a GET (object_store requires them) and has no XML multipart
# API; Azurite is an npm package. Their reads go to the ObjectServer instead, standing in for each
# store's endpoint: the tests check the URL forms, the configuration keys and the request paths.


def gcs_options(tmp_path: Path, server) -> dict[str, str]:
    """storage_options sending the GCS client to ``server`` without OAuth: a service-account file
    with object_store's ``gcs_base_url`` and ``disable_oauth`` fields (what its own tests use
    against fake-gcs-server)."""
    account = tmp_path / "service-account.json"
    account.write_text(
        json.dumps(
            {
                "gcs_base_url": f"http://{server.host}:{server.port}",
                "disable_oauth": True,
                "client_email": "",
                "private_key": "",
                "private_key_id": "",
            }
        )
    )
    return {"google_service_account": str(account)}


@pytest.mark.parametrize("scheme", ["gs", "gcs"])
def test_gcs_read_scan_and_head(http_server, tmp_path, big, scheme):
    data = records(300)
    http_server.put("/bucket/dumps/x.msgpack", data)
    so = gcs_options(tmp_path, http_server)
    url = f"{scheme}://bucket/dumps/x.msgpack"
    want = local_read(tmp_path, data)
    assert_frame_equal(ma.read_msgpack(url, storage_options=so), want)
    assert_frame_equal(ma.scan_msgpack(url, storage_options=so).select("id", "emb").collect(), want.select("id", "emb"))
    # the bucket, then the object name (GCS's client escapes its '/' and '.')
    assert {r.path for r in http_server.requests} == {"/bucket/dumps%2Fx%2Emsgpack"}, http_server.summary()
    # streaming: head(10) of a 64 MiB object stops the transfer early, as over HTTP and S3
    big_data, big_path = big
    http_server.put("/bucket/big.msgpack", big_data)
    before = http_server.bytes_sent
    got = ma.scan_msgpack(f"{scheme}://bucket/big.msgpack", storage_options=so).head(10).collect()
    http_server.wait_idle(5)
    assert http_server.bytes_sent - before <= 16 * MiB, http_server.summary()
    assert_frame_equal(got, ma.read_msgpack(big_path).head(10))


def test_gcs_missing_object_is_file_not_found(http_server, tmp_path):
    so = gcs_options(tmp_path, http_server)
    with pytest.raises(FileNotFoundError, match=re.escape("gs://bucket/none.msgpack")):
        ma.read_msgpack("gs://bucket/none.msgpack", storage_options=so)


AZURITE_ACCOUNT = "devstoreaccount1"
#: Azurite's published development key (not a secret; object_store signs requests with it)
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@pytest.mark.parametrize(
    "url",
    [
        "az://cont/d/x.msgpack",
        "azure://cont/d/x.msgpack",
        "abfs://cont/d/x.msgpack",
        f"abfss://cont@{AZURITE_ACCOUNT}.dfs.core.windows.net/d/x.msgpack",
    ],
)
def test_azure_url_forms_and_configuration(http_server, tmp_path, url):
    """Every Azure URL form names container ``cont`` and blob ``d/x.msgpack``; with
    ``azure_endpoint`` (an http:// endpoint allows plain HTTP without more, as for S3) the signed
    GET goes to ``{endpoint}/cont/d/x.msgpack``."""
    data = records(40)
    http_server.put(f"/{AZURITE_ACCOUNT}/cont/d/x.msgpack", data)
    so = {
        "azure_storage_account_name": AZURITE_ACCOUNT,
        "azure_storage_account_key": AZURITE_KEY,
        "azure_endpoint": f"http://{http_server.host}:{http_server.port}/{AZURITE_ACCOUNT}",
    }
    assert_frame_equal(ma.read_msgpack(url, storage_options=so), local_read(tmp_path, data))
    assert {r.path for r in http_server.requests} == {f"/{AZURITE_ACCOUNT}/cont/d/x.msgpack"}


@pytest.mark.parametrize(
    ("url", "key", "hint"),
    [
        ("s3://b/x.msgpack", "google_service_account", "aws_access_key_id"),
        ("gs://b/x.msgpack", "aws_region", "google_service_account"),
        ("az://c/x.msgpack", "aws_region", "azure_storage_account_name"),
        ("http://127.0.0.1:9/x.msgpack", "aws_region", "allow_http"),
    ],
)
def test_unknown_storage_option_names_the_store_and_its_keys(url, key, hint):
    with pytest.raises(ValueError) as e:
        ma.read_msgpack(url, storage_options={key: "x"})
    assert key in str(e.value) and hint in str(e.value), str(e.value)


# ---- the command -----------------------------------------------------------------------------


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The installed `msgpack-arrow`, without the caller's AWS_* variables (plus `env`)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    e.update(env or {})
    return subprocess.run([*_command(), *args], capture_output=True, text=True, timeout=120, env=e)


def storage_args(so: dict[str, str]) -> list[str]:
    return [a for k, v in so.items() for a in ("--storage-option", f"{k}={v}")]


def without_rows(text: str) -> list[str]:
    # a local file may know its row count before reading it all, a stream not
    return [line for line in text.splitlines() if not line.startswith("rows: ")]


def test_cli_head_http(http_server, tmp_path):
    data = records(50)
    url = http_server.put("/x.msgpack", data)
    p = tmp_path / "x.msgpack"
    p.write_bytes(data)
    r = cli("head", url, "-n", "3")
    assert r.returncode == 0, r.stderr
    local = cli("head", str(p), "-n", "3")
    assert local.returncode == 0, local.stderr
    lines, want = r.stdout.splitlines(), local.stdout.splitlines()
    assert lines[:-1] == want[:-1], r.stdout  # the same table of 3 rows
    assert re.fullmatch(r"\(3 (rows shown|of 50 rows)\)", lines[-1]), r.stdout


def test_cli_convert_http(http_server, tmp_path):
    data = records(200, dim=16)
    url = http_server.put("/dumps/x.msgpack", data)
    p = tmp_path / "x.msgpack"
    p.write_bytes(data)
    out, local_out = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    r = cli("convert", url, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert cli("convert", str(p), "-o", str(local_out)).returncode == 0
    assert_frame_equal(pl.read_parquet(out), pl.read_parquet(local_out))


@pytest.mark.parametrize("ext", ["msgpack", "parquet", "arrow", "npz"])
def test_cli_convert_to_s3_equals_a_local_convert(s3_server, tmp_path, ext):
    """convert -o s3://…: the same bytes as a local convert. msgpack, Parquet and Arrow IPC are
    uploaded as they are written (a multipart upload, 20 MiB here: several parts); NPZ, whose
    writer goes back to patch its entries, is staged locally and then uploaded."""
    bucket = s3_server.new_bucket()
    src = tmp_path / "x.msgpack"
    src.write_bytes(records(1300, dim=4096))
    local = tmp_path / f"local.{ext}"
    assert cli("convert", str(src), "-o", str(local)).returncode == 0
    url = f"s3://{bucket}/out/x.{ext}"
    r = cli("convert", str(src), "-o", url, *storage_args(s3_server.storage_options()))
    assert r.returncode == 0, r.stderr
    body = s3_server.client().get_object(Bucket=bucket, Key=f"out/x.{ext}")["Body"].read()
    assert body == local.read_bytes()


def test_cli_failed_convert_to_s3_keeps_the_previous_object(s3_server, tmp_path):
    """The second input's types conflict with the first's: the error comes after the first input
    was uploaded in part; the upload is aborted, the previous object stays and no upload is left
    behind."""
    bucket = s3_server.new_bucket()
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="out.parquet", Body=b"previous")
    a, b = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    a.write_bytes(records(1300, dim=4096))
    b.write_bytes(b"".join(msgpack.packb({"id": str(i)}) for i in range(3)))
    r = cli("convert", str(a), str(b), "-o", f"s3://{bucket}/out.parquet", *storage_args(s3_server.storage_options()))
    assert r.returncode != 0 and '"id" is str here but i64' in r.stderr, r.stderr
    assert client.get_object(Bucket=bucket, Key="out.parquet")["Body"].read() == b"previous"
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_cli_missing_http_object(http_server):
    url = http_server.url("/missing.msgpack")
    r = cli("schema", url)
    assert r.returncode == 1 and url in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("how", ["storage-options", "environment"])
def test_cli_schema_s3(s3_server, tmp_path, how):
    bucket = s3_server.new_bucket()
    data = records(40, dim=16)
    s3_server.client().put_object(Bucket=bucket, Key="dumps/x.msgpack", Body=data)
    p = tmp_path / "x.msgpack"
    p.write_bytes(data)
    url = f"s3://{bucket}/dumps/x.msgpack"
    if how == "storage-options":
        r = cli("schema", url, *storage_args(s3_server.storage_options()))
    else:
        r = cli("schema", url, env=s3_server.env())
    assert r.returncode == 0, r.stderr
    local = cli("schema", str(p))
    assert local.returncode == 0, local.stderr
    assert without_rows(r.stdout) == without_rows(local.stdout), r.stdout
    assert "emb: f32[16]" in r.stdout


@pytest.mark.parametrize("how", ["storage-options", "environment"])
def test_cli_errors_never_show_the_secret_key(s3_server, how):
    bucket = s3_server.new_bucket()
    url = f"s3://{bucket}/missing.msgpack"
    if how == "storage-options":
        r = cli("schema", url, *storage_args(s3_server.storage_options(secret=SECRET)))
    else:
        r = cli("schema", url, env=s3_server.env(secret=SECRET))
    assert r.returncode == 1 and url in r.stderr, r.stderr
    assert SECRET not in r.stdout + r.stderr, r.stderr
