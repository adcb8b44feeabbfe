"""Control-channel messages: lossless round trips, and strict rejection of malformed input."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_seatunnel_ckpt.engine.messages import (
    MESSAGE_TYPES,
    AbortCheckpoint,
    Ack,
    AckStats,
    AddSplits,
    AssignSplits,
    CheckpointKind,
    Decline,
    EndOfInput,
    FinishJob,
    NotifyComplete,
    Register,
    RequestSplit,
    RestoreState,
    StateHandle,
    TaskFailed,
    TriggerBarrier,
    decode,
    decode_json,
    encode,
    encode_json,
)
from airflow_provider_seatunnel_ckpt.errors import ProtocolError

ids = st.integers(min_value=0, max_value=2**53)
texts = st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
handles = st.one_of(
    st.binary(max_size=64).map(StateHandle.of_bytes),
    st.builds(
        StateHandle,
        size=ids,
        sha256=st.text("0123456789abcdef", min_size=64, max_size=64),
        path=st.text(min_size=1, max_size=60),
    ),
)
handle_tuples = st.lists(handles, max_size=3).map(tuple)
split_plans = st.lists(st.tuples(texts, st.dictionaries(texts, json_values, max_size=3)), max_size=3).map(tuple)
stats = st.builds(AckStats, sync_ms=ids, async_ms=ids, state_bytes=ids, rows_since_last=ids)

any_message = st.one_of(
    st.builds(Register, subtask=ids, attempt=ids),
    st.builds(
        Ack,
        checkpoint_id=ids,
        subtask=ids,
        attempt=ids,
        state_handles=handle_tuples,
        sink_commit_info=json_values,
        stats=stats,
    ),
    st.builds(Decline, checkpoint_id=ids, subtask=ids, attempt=ids, reason=texts),
    st.builds(EndOfInput, subtask=ids, attempt=ids),
    st.builds(TaskFailed, subtask=ids, attempt=ids, error=texts),
    st.builds(
        RestoreState,
        checkpoint_id=st.none() | ids,
        state_handles=handle_tuples,
        sink_commit_info=json_values,
        added_splits=split_plans,
        shared=st.booleans(),
    ),
    st.builds(AddSplits, added_splits=split_plans),
    st.builds(RequestSplit, subtask=ids, attempt=ids),
    st.builds(AssignSplits, indices=st.lists(ids, max_size=3).map(tuple), no_more=st.booleans()),
    st.builds(TriggerBarrier, checkpoint_id=ids, kind=st.sampled_from(CheckpointKind), timestamp_ms=ids),
    st.builds(NotifyComplete, checkpoint_id=ids),
    st.builds(FinishJob, checkpoint_id=ids),
    st.builds(AbortCheckpoint, checkpoint_id=ids, reason=texts),
)


def test_every_message_type_is_covered_by_the_strategy():
    assert set(MESSAGE_TYPES) == {
        "register",
        "ack",
        "decline",
        "end_of_input",
        "task_failed",
        "restore_state",
        "trigger_barrier",
        "notify_complete",
        "abort_checkpoint",
        "finish_job",
        "request_split",
        "assign_splits",
        "add_splits",
    }


@settings(max_examples=300, deadline=None)
@given(any_message)
def test_dict_round_trip_is_lossless(message):
    assert decode(encode(message)) == message


@settings(max_examples=300, deadline=None)
@given(any_message)
def test_json_round_trip_is_lossless_and_json_safe(message):
    data = encode_json(message)
    assert json.loads(data)["type"] == message.TYPE
    assert decode_json(data) == message


def _garbage():
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-5, max_value=5),
        texts,
        st.floats(allow_nan=False),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(texts, st.integers(), max_size=2),
    )


@settings(max_examples=400, deadline=None)
@given(any_message, st.data())
def test_a_corrupted_field_is_either_still_valid_or_a_protocol_error(message, data):
    raw = encode(message)
    key = data.draw(st.sampled_from(sorted(raw)))
    raw[key] = data.draw(_garbage())
    try:
        decoded = decode(raw)
    except ProtocolError as err:
        text = str(err)
        assert "message" in text
        if key != "type":
            assert f"{message.TYPE} message" in text
    else:
        assert encode(decoded) == raw  # accepted only if it is exactly a valid message


GOOD_ACK = encode(Ack(3, 1, 0, (StateHandle.of_bytes(b"abc"),), {"files": ["a"]}, AckStats(1, 2, 3, 4)))


def _ack_with(**changes):
    raw = copy.deepcopy(GOOD_ACK)
    for path, value in changes.items():
        target = raw
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return raw


@pytest.mark.parametrize(
    "raw, expected",
    [
        ([1, 2], "message: expected a JSON object, got list"),
        ({"checkpoint_id": 1}, "message: unknown type None"),
        ({"type": "hello"}, "message: unknown type 'hello'"),
        (_ack_with(checkpoint_id=KeyError), r"ack message: missing field\(s\) \['checkpoint_id'\]"),
        (_ack_with(extra=1), r"ack message: unknown field\(s\) \['extra'\]"),
        (_ack_with(checkpoint_id=True), "ack message, field checkpoint_id: expected a non-negative integer, got bool"),
        (_ack_with(subtask=-1), "ack message, field subtask: expected a non-negative integer, got -1"),
        (_ack_with(attempt="0"), "ack message, field attempt: expected a non-negative integer, got str"),
        (_ack_with(state_handles={}), "ack message, field state_handles: expected a list"),
        (_ack_with(state_handles__0__inline="***"), r"field state_handles\[0\].inline: is not valid base64"),
        (_ack_with(state_handles__0__size=4), r"field state_handles\[0\].inline: holds 3 bytes but size says 4"),
        (_ack_with(state_handles__0__sha256="0" * 64), r"state_handles\[0\].inline: sha256 does not match"),
        (_ack_with(state_handles__0__sha256="XYZ"), r"state_handles\[0\].sha256: expected 64 lowercase hex"),
        (_ack_with(state_handles__0__path="/x"), r"state_handles\[0\]: exactly one of 'path' and 'inline'"),
        (_ack_with(state_handles__0__inline=KeyError), r"state_handles\[0\]: exactly one of 'path' and 'inline'"),
        (_ack_with(sink_commit_info={"a": float("nan")}), "field sink_commit_info.a: nan is not valid JSON"),
        (_ack_with(sink_commit_info={"a": (1, 2)}), "field sink_commit_info.a: tuple is not JSON-safe"),
        (_ack_with(stats__sync_ms=-2), "ack message, field stats.sync_ms: expected a non-negative integer"),
        (_ack_with(stats__bogus=1), r"ack message, field stats: unknown field\(s\) \['bogus'\]"),
        (
            {"type": "trigger_barrier", "checkpoint_id": 1, "kind": "snapshot", "timestamp_ms": 0},
            "trigger_barrier message, field kind: expected one of checkpoint, savepoint, final, got 'snapshot'",
        ),
        (
            {"type": "restore_state", "checkpoint_id": -1},
            "restore_state message, field checkpoint_id: expected a non-negative integer",
        ),
        (
            {"type": "decline", "checkpoint_id": 1, "subtask": 0, "attempt": 0, "reason": 5},
            "decline message, field reason: expected a string, got int",
        ),
    ],
)
def test_malformed_messages_name_the_type_and_field(raw, expected):
    with pytest.raises(ProtocolError, match=expected):
        decode(raw)


@pytest.mark.parametrize("data", [b"{not json", b"\xff\xfe", "[1,", b'{"type": "ack", "checkpoint_id": NaN}'])
def test_bytes_that_are_not_json_are_a_protocol_error(data):
    with pytest.raises(ProtocolError, match="message"):
        decode_json(data)


def test_invalid_messages_cannot_even_be_constructed():
    with pytest.raises(ProtocolError, match="notify_complete message, field checkpoint_id"):
        NotifyComplete(-1)
    with pytest.raises(ProtocolError, match="trigger_barrier message, field kind"):
        TriggerBarrier(1, "checkpoint", 0)
    with pytest.raises(ProtocolError, match="state handle: exactly one of"):
        StateHandle(size=1, sha256="0" * 64)
    with pytest.raises(ProtocolError, match="ack message, field sink_commit_info.1: set is not JSON-safe"):
        Ack(1, 0, 0, sink_commit_info={"1": {2}})
    with pytest.raises(ProtocolError, match=r"add_splits message, field added_splits\[0\]: expected \[split_id, spec"):
        AddSplits((("orders-0",),))
    with pytest.raises(
        ProtocolError, match=r"add_splits message, field added_splits\[0\].start: nan is not valid JSON"
    ):
        AddSplits((("orders-0", {"start": float("nan")}),))


def test_optional_fields_may_be_omitted_on_the_wire():
    assert decode({"type": "ack", "checkpoint_id": 1, "subtask": 0, "attempt": 2}) == Ack(1, 0, 2)
    assert decode({"type": "restore_state", "checkpoint_id": None}) == RestoreState(None)


def test_state_handles_carry_exactly_one_location_on_the_wire():
    inline = StateHandle.of_bytes(b"\x00\x01")
    assert StateHandle.to_json(inline) == {"size": 2, "sha256": inline.sha256, "inline": "AAE="}
    at_path = StateHandle(size=9, sha256="a" * 64, path="chk-0000000001/task-0-0.state")
    assert "inline" not in at_path.to_json()
