"""The brokers' list of open transactions (Kafka's ``ListTransactions``, KIP-664, brokers
3.0 and later), which kafka-python's protocol layer does not define.

Every broker coordinates the transactions of its own transaction log partitions, so the
question goes to each broker and the answers are joined. The EXACTLY_ONCE sink uses it to
fence what its earlier runs left open under ids its upward probes never reach
(``exactly_once.fence_listed``); Flink's Kafka sink aborts lingering transactions from the
same listing. Request and response are version 0: a state filter and the ids, nothing more.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api import Request, Response
from kafka.protocol.types import CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields

#: a transaction that is begun and not yet ending: what holds read_committed readers back
ONGOING = "Ongoing"


class ListTransactionsResponse_v0(Response):
    API_KEY = 66
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("unknown_state_filters", CompactArray(CompactString("utf-8"))),
        (
            "transaction_states",
            CompactArray(
                ("transactional_id", CompactString("utf-8")),
                ("producer_id", Int64),
                ("transaction_state", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class ListTransactionsRequest_v0(Request):
    API_KEY = 66
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = ListTransactionsResponse_v0
    SCHEMA = Schema(
        ("state_filters", CompactArray(CompactString("utf-8"))),
        ("producer_id_filters", CompactArray(Int64)),
        ("tags", TaggedFields),
    )


ListTransactionsRequest = [ListTransactionsRequest_v0]


def ongoing_request() -> Any:
    """The request for every open transaction, of any producer."""
    return ListTransactionsRequest_v0(state_filters=[ONGOING], producer_id_filters=[], tags={})


def listed_ids(response: Any, prefix: str) -> list[str]:
    """The transactional ids of ``response`` that start with ``prefix``."""
    return [
        str(transactional_id)
        for transactional_id, _producer_id, _state, _tags in response.transaction_states or []
        if str(transactional_id).startswith(prefix)
    ]
