"""The subtask state codec: JSON + raw blobs (format version 2), version 1 still read."""

from __future__ import annotations

import gc
import json
import os
import tracemalloc

import pytest

from airflow_provider_seatunnel_ckpt.engine import state_codec
from airflow_provider_seatunnel_ckpt.engine.state_codec import (
    BLOB_STR_MIN,
    MAGIC,
    SplitState,
    decode_subtask_state,
    encode_snapshot,
    encode_subtask_state,
    frame_snapshot,
    snapshot_split_states,
)
from airflow_provider_seatunnel_ckpt.storage import CorruptCheckpointError

MiB = 1 << 20


def roundtrip(states):
    return decode_subtask_state(bytes(encode_subtask_state(0, states)), "test").splits


def test_bytes_values_round_trip_exactly():
    every_byte = bytes(range(256)) * 3
    states = {"s": SplitState(position=7, operators={"0": {"raw": every_byte, "empty": b"", "nul": b"\x00"}})}
    data = encode_subtask_state(0, states)
    assert bytes(data[: len(MAGIC)]) == MAGIC
    assert every_byte in bytes(data)  # raw, not base64 or escaped
    restored = roundtrip(states)["s"].operators["0"]
    assert restored == {"raw": every_byte, "empty": b"", "nul": b"\x00"}
    assert type(restored["raw"]) is bytes


def test_mixed_json_and_bytes_nested():
    big_ascii = "a" * BLOB_STR_MIN
    big_unicode = "é€" * BLOB_STR_MIN
    states = {
        "split-a": SplitState(
            position={"file": "x.csv", "offset": 12, "token": b"\x01\x02"},
            operators={
                "0": {"counts": {"k": 1, "l": 2}, "nulls": 0},
                "2": {
                    "list": [1, b"one", [b"two", {"three": bytearray(b"3"), "f": 1.5}], None, "s"],
                    "view": memoryview(b"viewed bytes"),
                    "big": big_ascii,
                    "bigu": big_unicode,
                    "small": "é",
                    "null": None,
                },
            },
        ),
        "split-b": SplitState(position=None, finished=True),
    }
    restored = roundtrip(states)
    a = restored["split-a"]
    assert a.position == {"file": "x.csv", "offset": 12, "token": b"\x01\x02"}
    assert a.operators["0"] == {"counts": {"k": 1, "l": 2}, "nulls": 0}
    assert a.operators["2"] == {
        "list": [1, b"one", [b"two", {"three": b"3", "f": 1.5}], None, "s"],
        "view": b"viewed bytes",
        "big": big_ascii,
        "bigu": big_unicode,
        "small": "é",
        "null": None,
    }
    assert restored["split-b"] == SplitState(position=None, finished=True)


def test_big_strings_go_out_of_band_and_lone_surrogates_stay_json():
    odd = "\ud800" + "x" * BLOB_STR_MIN  # not encodable as UTF-8: stays (escaped) in the header
    states = {"s": SplitState(operators={"0": {"big": "b" * BLOB_STR_MIN, "odd": odd}})}
    snapshot = snapshot_split_states(0, states)
    assert [path for path, _ in snapshot.blobs] == [("s", "operators", "0", "big"), ("s", "operators", "0", "odd")]
    restored = decode_subtask_state(bytes(encode_snapshot(snapshot)), "t").splits["s"].operators["0"]
    assert restored == {"big": "b" * BLOB_STR_MIN, "odd": odd}


def test_states_of_the_previous_format_still_decode():
    # what the previous release's encode_subtask_state wrote, byte for byte
    v1 = (
        b'{"format":"seatunnel-ckpt/subtask-state","version":1,"subtask":1,"splits":{"range-00001":'
        b'{"position":4000,"finished":false,"operators":{"0":{"counts":{"a":3,"b":1},"nulls":2}}},'
        b'"range-00003":{"position":null,"finished":true,"operators":{}}}}'
    )
    restored = decode_subtask_state(v1, "v1").splits
    assert restored == {
        "range-00001": SplitState(position=4000, operators={"0": {"counts": {"a": 3, "b": 1}, "nulls": 2}}),
        "range-00003": SplitState(position=None, finished=True),
    }


def test_json_only_state_is_written_as_before():
    """No blobs: the version-1 document, byte for byte (the previous release reads it)."""
    states = {"s": SplitState(position=[1, "two"], operators={"1": {"counts": {str(i): i for i in range(100)}}})}
    data = encode_subtask_state(4, states)
    splits = {k: {"position": v.position, "finished": v.finished, "operators": v.operators} for k, v in states.items()}
    previous = {"format": state_codec.FORMAT, "version": 1, "subtask": 4, "splits": splits}
    assert bytes(data) == json.dumps(previous, separators=(",", ":"), allow_nan=False).encode("utf-8")
    assert roundtrip(states) == states


@pytest.fixture
def encoded():
    states = {"s": SplitState(position=1, operators={"0": {"a": b"A" * 1000, "b": b"B" * 500, "n": 1}})}
    return bytes(encode_subtask_state(0, states))


@pytest.mark.parametrize("cut", [0, 3, 8, 12, 16, 40, -1501, -501, -1])
def test_a_truncated_frame_raises_a_clear_error(encoded, cut):
    with pytest.raises(CorruptCheckpointError, match=r"where: .*(truncated|not valid JSON|not a subtask state)"):
        decode_subtask_state(encoded[:cut], "where")


def test_a_truncated_blob_names_the_blob(encoded):
    with pytest.raises(CorruptCheckpointError, match=r"blob 1 is truncated: 500 bytes expected, 499 present"):
        decode_subtask_state(encoded[:-1], "where")


def test_damaged_frames_raise_clear_errors(encoded):
    header_size = int.from_bytes(encoded[len(MAGIC) : len(MAGIC) + 8], "big")
    start = len(MAGIC) + 8
    header = json.loads(encoded[start : start + header_size])

    def with_header(h):
        raw = json.dumps(h).encode()
        return encoded[: len(MAGIC)] + len(raw).to_bytes(8, "big") + raw + encoded[start + header_size :]

    with pytest.raises(CorruptCheckpointError, match="unexpected bytes after its blobs"):
        decode_subtask_state(encoded + b"x", "w")
    with pytest.raises(CorruptCheckpointError, match="truncated: header of"):
        decode_subtask_state(encoded[: len(MAGIC)] + (1 << 40).to_bytes(8, "big") + encoded[start:], "w")
    bad_path = json.loads(json.dumps(header))
    bad_path["blobs"][0]["path"] = ["s", "operators", "0", "n"]  # a real value, not a placeholder
    with pytest.raises(CorruptCheckpointError, match="does not lead to a placeholder"):
        decode_subtask_state(with_header(bad_path), "w")
    bad_size = json.loads(json.dumps(header))
    bad_size["blobs"][0]["size"] = -1
    with pytest.raises(CorruptCheckpointError, match="malformed blob entry"):
        decode_subtask_state(with_header(bad_size), "w")
    newer = dict(header, version=99)
    with pytest.raises(CorruptCheckpointError, match="version 99 is not supported"):
        decode_subtask_state(with_header(newer), "w")
    flipped = bytearray(encoded)
    flipped[start + 2] ^= 0xFF
    with pytest.raises(CorruptCheckpointError, match="not valid JSON"):
        decode_subtask_state(bytes(flipped), "w")


def test_nothing_but_json_and_raw_bytes_is_read():
    # a pickle is not a state, whatever it contains
    import pickle

    with pytest.raises(CorruptCheckpointError):
        decode_subtask_state(pickle.dumps({"splits": {}}), "w")
    source = open(state_codec.__file__).read()
    assert "import pickle" not in source and "pickle.load" not in source and "marshal" not in source


def test_values_that_cannot_be_encoded_are_reported_at_the_snapshot_with_their_path():
    states = {"s": SplitState(operators={"0": {"ok": [1, {"bad": {1, 2}}]}})}
    with pytest.raises(TypeError, match=r"split 's' \['operators'\]\['0'\]\['ok'\]\[1\]\['bad'\] is a builtins.set"):
        snapshot_split_states(0, states)


def test_the_snapshot_is_isolated_from_later_in_place_updates():
    blob = b"x" * 100
    counts = {"a": 1}
    state = SplitState(position=10, operators={"0": {"counts": counts, "blob": blob, "log": [1]}})
    snapshot = snapshot_split_states(0, {"s": state})
    # the processing thread goes on, as CountByKey does: in place
    counts["a"] = 2
    counts["b"] = 1
    state.operators["0"]["log"].append(2)
    state.operators["0"]["blob"] = b"y"
    state.position = 20
    restored = decode_subtask_state(bytes(encode_snapshot(snapshot)), "t").splits["s"]
    assert restored == SplitState(position=10, operators={"0": {"counts": {"a": 1}, "blob": blob, "log": [1]}})


def test_the_snapshot_shares_big_values_instead_of_copying_them():
    blob = os.urandom(BLOB_STR_MIN)
    text = "t" * BLOB_STR_MIN
    snapshot = snapshot_split_states(0, {"s": SplitState(operators={"0": {"b": blob, "t": text}})})
    assert [value for _, value in snapshot.blobs] == [blob, text]
    assert all(value is original for (_, value), original in zip(snapshot.blobs, (blob, text)))


@pytest.mark.parametrize("kind", ["bytes", "str"])
def test_a_large_blob_is_copied_once(kind):
    size = 64 * MiB
    value = b"\xab" * size if kind == "bytes" else "z" * size
    states = {"s": SplitState(position=1, operators={"0": {"blob": value, "batches": 3}})}
    gc.collect()
    tracemalloc.start()
    try:
        snapshot = snapshot_split_states(0, states)
        data = encode_snapshot(snapshot)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(data) < size + 4096
    assert peak < 1.2 * size, f"peak {peak / MiB:.1f} MiB for a {size / MiB:.0f} MiB {kind}"
    del data
    gc.collect()
    tracemalloc.start()
    try:
        # decoding: the stored bytes plus one copy (the restored value)
        stored = bytes(encode_subtask_state(0, states))
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        restored = decode_subtask_state(stored, "t").splits
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert restored["s"].operators["0"]["blob"] == value
    assert peak - base < 1.2 * size


@pytest.mark.parametrize("kind", ["bytes", "str", "non-ascii str", "json only"])
def test_the_pieces_are_the_encoding_and_none_holds_a_whole_large_value(kind):
    """A storage writes the pieces as they come: together they are exactly the encoded
    state, and no piece is larger than a slice, however large the value."""
    size = 9 * MiB
    value = {"bytes": b"\xab" * size, "str": "z" * size, "non-ascii str": "\u00e9" * (size // 2), "json only": 42}[kind]
    states = {"s": SplitState(position=1, operators={"0": {"v": value, "n": 3}})}
    encoded = frame_snapshot(snapshot_split_states(0, states))
    pieces = list(encoded.pieces())
    whole = b"".join(pieces)
    assert len(whole) == encoded.size
    assert whole == bytes(encode_subtask_state(0, states)) == bytes(encoded.to_bytes())
    assert max(len(p) for p in pieces) <= max(state_codec._COPY_CHUNK, len(pieces[0]))
    assert decode_subtask_state(whole, "t").splits["s"].operators["0"]["v"] == value


def test_a_split_not_started_is_left_out_and_restores_as_new() -> None:
    """A subtask's state names the splits it started: at 100,000 files the ones not yet
    started were half the first checkpoints' bytes (bench/scale_bench.py). A restore reads
    a split it finds no state for from its beginning, which is what a fresh entry means."""
    states = {
        "new": SplitState(),
        "reading": SplitState(position=7),
        "done": SplitState(position=9, finished=True),
        "counted": SplitState(operators={"0": {"n": 1}}),
    }
    decoded = decode_subtask_state(bytes(frame_snapshot(snapshot_split_states(0, states)).to_bytes()), "w").splits
    assert set(decoded) == {"reading", "done", "counted"}
    assert decoded.get("new", SplitState()) == states["new"]
