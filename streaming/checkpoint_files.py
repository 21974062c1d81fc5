"""Is the checkpoint whole? The files a restart reads, checked before Spark reads them.

A restart of the query reads the checkpoint's `metadata` (its id), the newest offset and commit
files (where the next batch starts and what it reads), where the Kafka source started
(`sources/0/0`), and for its engine state, each partition's newest snapshot and the changelogs
after it, up to the version the last committed batch left. Spark's own errors on a damaged file
name neither the file nor a way on (`Unexpected character ('g' ...)`, `CANNOT_LOAD_STATE_STORE`),
so the job looks first and says which file, in one line.

What is checked, without Spark: every such file is there, its Hadoop checksum (`.<name>.crc`,
on a local disk) matches, the text files parse, a snapshot is a whole zip whose SST files are
there, and a changelog's LZ4 block framing runs to its end mark. A byte changed inside a
compressed block with no checksum file beside it is left to Spark, whose failure the job then
names by the state folder (`state_failure`).

Both of the state store's checkpoint formats the pinned Spark (4.2) writes are known
(`spark.sql.streaming.stateStore.checkpointFormatVersion`, recorded in the offset log's conf):

- 1 (the default): a partition's versions are `<version>.zip` and `<version>.changelog`.
- 2: each is `<version>_<unique id>.zip` / `.changelog`; the commit log names the id of each
  operator's partitions (`stateUniqueIds`: operator -> partition -> one id per store), and each
  changelog begins with its lineage, the (version, id) pairs back to the snapshot it builds on.
  Several ids of one version may lie side by side (a batch retried): only those the lineage of
  the committed id names are read, as Spark's loader does.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator

from eo.runtime.monitoring import numbered
from eo.runtime.storage import Files

# Spark's failures that mean the checkpoint's engine state cannot be loaded.
STATE_FAILURES = (
    "CANNOT_LOAD_STATE_STORE",
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
    "CANNOT_READ_STREAMING_STATE_FILE",
    "ChecksumException",
)
LZ4_MAGIC = b"LZ4Block"
LZ4_HEADER = len(LZ4_MAGIC) + 13  # token, compressed length, original length, checksum


class Damaged(Exception):
    """A checkpoint file a restart needs is missing or unreadable; the message names it."""


def _checksum(files: Files, uri: str, data: bytes) -> None:
    """The file's bytes against Hadoop's checksum file beside it, when there is one."""
    folder, name = uri.rsplit("/", 1)
    crc_uri = f"{folder}/.{name}.crc"
    if not files.exists(crc_uri):
        return
    crc = files.read_bytes(crc_uri)
    if crc[:4] != b"crc\0" or len(crc) < 8:
        raise Damaged(f"{crc_uri}: not a Hadoop checksum file")
    every = struct.unpack(">i", crc[4:8])[0]
    stored = [struct.unpack(">I", crc[at : at + 4])[0] for at in range(8, len(crc) - 3, 4)]
    actual = [zlib.crc32(data[at : at + every]) for at in range(0, len(data), every)] if every > 0 else []
    if stored != actual:
        raise Damaged(f"{uri}: its bytes do not match its checksum file ({crc_uri.rsplit('/', 1)[-1]})")


def _read(files: Files, uri: str) -> bytes:
    if not files.exists(uri):
        raise Damaged(f"{uri}: missing")
    data = files.read_bytes(uri)
    _checksum(files, uri, data)
    return data


def _json(uri: str, text: str):
    try:
        return json.loads(text)
    except ValueError as error:
        raise Damaged(f"{uri}: not readable JSON ({error})") from None


def _log_entry(files: Files, uri: str, sources: bool) -> dict:
    """An offset or commit log file: a version line, the batch's metadata, then (offsets) one line
    per source, `-` for one that has none."""
    try:
        lines = _read(files, uri).decode().splitlines()
    except UnicodeDecodeError:
        raise Damaged(f"{uri}: not text") from None
    if not lines or not lines[0].startswith("v"):
        raise Damaged(f"{uri}: no version line")
    if len(lines) < 2:
        raise Damaged(f"{uri}: cut short")
    entry = _json(uri, lines[1])
    if sources:
        for line in lines[2:]:
            if line.strip() not in ("", "-"):
                _json(uri, line)
    return entry if isinstance(entry, dict) else {}


def _lz4_blocks(uri: str, data: bytes) -> Iterator[tuple[int, bytes, int]]:
    """A changelog compressed by Spark's LZ4 codec (lz4-java's block stream): blocks, each with its
    header, up to the end mark; each block's (token, stored bytes, original length), checked as
    it is reached (exhaust the iterator to check the framing of the whole file)."""
    at = 0
    while True:
        header = data[at : at + LZ4_HEADER]
        if len(header) < LZ4_HEADER or header[:8] != LZ4_MAGIC:
            raise Damaged(f"{uri}: an LZ4 block is damaged or cut short at byte {at}")
        compressed, original = struct.unpack("<ii", header[9:17])
        if compressed < 0 or original < 0:
            raise Damaged(f"{uri}: an LZ4 block is damaged at byte {at}")
        body = data[at + LZ4_HEADER : at + LZ4_HEADER + compressed]
        at += LZ4_HEADER + compressed
        if compressed == 0 and original == 0:
            if at != len(data):
                raise Damaged(f"{uri}: bytes after its end mark")
            return
        if at > len(data):
            raise Damaged(f"{uri}: cut short in an LZ4 block")
        yield header[8], body, original


def _utf(text: bytes, at: int) -> bytes | None:
    """The string Java's writeUTF wrote at `at` (a 2-byte length, then the text), if whole."""
    if len(text) < at + 2:
        return None
    end = at + 2 + struct.unpack(">H", text[at : at + 2])[0]
    return text[at + 2 : end] if len(text) >= end else None


def _lineage(uri: str, data: bytes) -> list[tuple[int, str]]:
    """The (version, unique id) pairs a format-2 changelog names before its own: its first two
    strings are its writer's version (`v3`...) and the lineage as JSON, in its first LZ4 blocks.
    The framing of the whole file is checked too."""
    import pyarrow as pa  # the codec of Spark's blocks (lz4 raw); only format 2 needs it

    text, found = b"", None
    try:
        for token, body, original in _lz4_blocks(uri, data):
            if found is None:
                stored = token & 0xF0 == 0x10  # lz4-java's method bits: 0x10 stored, 0x20 compressed
                block = body if stored else pa.Codec("lz4_raw").decompress(body, decompressed_size=original)
                text += bytes(block)
                writer = _utf(text, 0)
                found = None if writer is None else _utf(text, 2 + len(writer))
    except pa.ArrowException:
        raise Damaged(f"{uri}: an LZ4 block does not decompress") from None
    if found is None:
        raise Damaged(f"{uri}: cut short before its lineage")
    try:
        return [(int(entry["version"]), str(entry["checkpointUniqueId"])) for entry in json.loads(found.decode())]
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise Damaged(f"{uri}: its lineage is not readable") from None


def _snapshot(files: Files, folder: str, uri: str) -> None:
    """A RocksDB snapshot: a whole zip whose metadata's SST files are in the folder's SSTs/."""
    try:
        with zipfile.ZipFile(io.BytesIO(_read(files, uri))) as snapshot:
            broken = snapshot.testzip()
            metadata = snapshot.read("metadata").decode().splitlines() if "metadata" in snapshot.namelist() else []
    except zipfile.BadZipFile:
        raise Damaged(f"{uri}: not a whole zip file") from None
    if broken is not None:
        raise Damaged(f"{uri}: {broken} inside it is damaged")
    if len(metadata) < 2:
        raise Damaged(f"{uri}: no readable metadata inside it")
    stored = set(files.names(f"{folder}/SSTs"))
    for sst in _json(uri, metadata[1]).get("sstFiles", []):
        if sst["dfsSstFileName"] not in stored:
            raise Damaged(f"{folder}/SSTs/{sst['dfsSstFileName']}: missing (named by {uri.rsplit('/', 1)[-1]})")


def _versions(files: Files, folder: str, suffix: str) -> list[int]:
    names = (name.removesuffix(suffix) for name in files.names(folder) if name.endswith(suffix))
    return sorted(int(name) for name in names if name.isdigit())


def _partition(files: Files, folder: str, version: int, codec: str | None) -> None:
    """One state partition can load `version`: its newest snapshot at or below it, then every
    changelog after that snapshot up to it."""
    snapshots = [v for v in _versions(files, folder, ".zip") if v <= version]
    base = snapshots[-1] if snapshots else 0
    if base:
        _snapshot(files, folder, f"{folder}/{base}.zip")
    for at in range(base + 1, version + 1):
        uri = f"{folder}/{at}.changelog"
        data = _read(files, uri)
        if codec == "lz4":
            for _ in _lz4_blocks(uri, data):
                pass


def _partition_v2(files: Files, folder: str, version: int, unique_id: str, codec: str | None) -> None:
    """One state partition can load `version` as format 2 names it (`unique_id`, from the commit
    log): that version's snapshot, or its changelog and, by each changelog's lineage, the ones
    before it down to a snapshot or to version 1. Without the LZ4 codec the lineage is not read,
    and only the committed version's own file is checked."""
    while version > 0:
        snapshot = f"{folder}/{version}_{unique_id}.zip"
        if files.exists(snapshot):
            _snapshot(files, folder, snapshot)
            return
        uri = f"{folder}/{version}_{unique_id}.changelog"
        data = _read(files, uri)
        if codec != "lz4":
            return
        earlier = [entry for entry in _lineage(uri, data) if entry[0] < version]
        if not earlier:  # the first version, or one whose lineage Spark reads no further
            return
        version, unique_id = max(earlier)


def _operators(files: Files, state: str) -> Iterator[tuple[int, str, int]]:
    """Each stateful operator's number, folder and number of partitions (its `_metadata`)."""
    for operator in numbered(files, state):
        folder = f"{state}/{operator}"
        uri = f"{folder}/_metadata/metadata"
        lines = _read(files, uri).decode(errors="replace").splitlines()
        info = _json(uri, lines[1]) if len(lines) > 1 else None
        try:
            yield operator, folder, int(info["stateStoreInfo"][0]["numPartitions"])
        except (TypeError, KeyError, IndexError, ValueError):
            raise Damaged(f"{uri}: not the state's metadata") from None


def check(files: Files, root: str) -> None:
    """Raise Damaged naming the first file a restart of the query at `root` would fail on; a
    checkpoint with no batch planned yet has nothing to check but its id."""
    root = root.rstrip("/")
    planned = numbered(files, f"{root}/offsets")
    if files.exists(f"{root}/metadata") or planned:
        meta = _json(f"{root}/metadata", _read(files, f"{root}/metadata").decode(errors="replace").strip() or "?")
        if not isinstance(meta, dict) or "id" not in meta:
            raise Damaged(f"{root}/metadata: no query id in it")
    if not planned:
        return
    newest = _log_entry(files, f"{root}/offsets/{planned[-1]}", sources=True)
    if len(planned) > 1:
        _log_entry(files, f"{root}/offsets/{planned[-2]}", sources=True)  # where a replay of the newest starts
    for source in numbered(files, f"{root}/sources"):
        first = f"{root}/sources/{source}/0"
        if files.exists(first):
            lines = _read(files, first).decode(errors="replace").splitlines()
            _json(first, lines[-1] if lines else "?")
    committed = numbered(files, f"{root}/commits")
    if not committed:
        return
    commit_uri = f"{root}/commits/{committed[-1]}"
    commit = _log_entry(files, commit_uri, sources=False)
    state = f"{root}/state"
    if not files.names(state):
        raise Damaged(f"{state}: missing, though batch {committed[-1]} was committed with it")
    codec = newest.get("conf", {}).get("spark.sql.streaming.stateStore.compression.codec", "lz4")
    unique_ids = commit.get("stateUniqueIds")  # only in checkpoint format 2
    for operator, folder, partitions in _operators(files, state):
        if unique_ids is None:
            for partition in range(partitions):
                _partition(files, f"{folder}/{partition}", committed[-1] + 1, codec)
            continue
        ids = unique_ids.get(str(operator)) if isinstance(unique_ids, dict) else None
        if not isinstance(ids, list) or len(ids) != partitions or not all(isinstance(i, list) and i for i in ids):
            raise Damaged(f"{commit_uri}: names no state id of each of operator {operator}'s {partitions} partitions")
        for partition in range(partitions):
            _partition_v2(files, f"{folder}/{partition}", committed[-1] + 1, str(ids[partition][0]), codec)


def state_failure(error: BaseException) -> str | None:
    """Which of Spark's failures to load the engine state the query failed with, if any."""
    text = f"{type(error).__name__}: {error}"
    return next((marker for marker in STATE_FAILURES if marker in text), None)
