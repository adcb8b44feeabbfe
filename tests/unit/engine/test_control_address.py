"""Where the driver's control channel listens and what executors are told."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.control_address import ControlEndpoint, control_endpoint
from airflow_provider_seatunnel_ckpt.errors import ConfigError


def endpoint(master: str, monkeypatch: pytest.MonkeyPatch, local_ip: str | None = None, **conf: str) -> ControlEndpoint:
    if local_ip is None:
        monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    else:
        monkeypatch.setenv("SPARK_LOCAL_IP", local_ip)
    return control_endpoint(conf.get, master)


def test_local_mode_stays_on_loopback_whatever_spark_says(monkeypatch: pytest.MonkeyPatch) -> None:
    found = endpoint(
        "local[2]", monkeypatch, "10.0.0.5", **{"spark.driver.host": "10.0.0.5", "spark.driver.bindAddress": "0.0.0.0"}
    )
    assert found == ControlEndpoint("127.0.0.1", "127.0.0.1", 0)


def test_a_cluster_driver_listens_and_advertises_where_spark_does(monkeypatch: pytest.MonkeyPatch) -> None:
    found = endpoint("spark://10.0.0.2:7077", monkeypatch, **{"spark.driver.host": "10.0.0.9"})
    assert found == ControlEndpoint("10.0.0.9", "10.0.0.9", 0)
    behind_nat = endpoint(
        "yarn", monkeypatch, **{"spark.driver.host": "203.0.113.7", "spark.driver.bindAddress": "0.0.0.0"}
    )
    assert behind_nat == ControlEndpoint("0.0.0.0", "203.0.113.7", 0)
    assert endpoint("k8s://https://api:6443", monkeypatch, "10.0.0.3").advertised_host == "10.0.0.3"


def test_the_control_keys_override_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    found = endpoint(
        "spark://m:7077",
        monkeypatch,
        **{
            "spark.driver.host": "10.0.0.9",
            "spark.seatunnel.control.host": "gw.example",
            "spark.seatunnel.control.bindAddress": "10.0.0.9",
            "spark.seatunnel.control.port": "47100",
        },
    )
    assert found == ControlEndpoint("10.0.0.9", "gw.example", 47100)
    local = endpoint("local[*]", monkeypatch, **{"spark.seatunnel.control.bindAddress": "0.0.0.0"})
    assert local == ControlEndpoint("0.0.0.0", "127.0.0.1", 0)


def test_a_published_address_alone_is_advertised_not_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind NAT: executors are told the published address; the driver listens on its own."""
    found = endpoint(
        "spark://m:7077",
        monkeypatch,
        **{"spark.driver.host": "10.0.0.9", "spark.seatunnel.control.host": "203.0.113.7"},
    )
    assert found == ControlEndpoint("10.0.0.9", "203.0.113.7", 0)


@pytest.mark.parametrize("port", ["http", "-1", "65536"])
def test_a_bad_port_names_the_key(monkeypatch: pytest.MonkeyPatch, port: str) -> None:
    with pytest.raises(ConfigError) as raised:
        endpoint("spark://m:7077", monkeypatch, **{"spark.seatunnel.control.port": port})
    assert str(raised.value).startswith("spark.seatunnel.control.port: expected a port number")
