"""Where the driver's control channel listens and the address executors are told to use.

On a cluster the executors must reach the driver, so the defaults follow Spark's own
driver settings: listen on ``spark.driver.bindAddress`` (else ``spark.driver.host``) and
advertise ``spark.driver.host``, the address Spark already hands its executors. Behind NAT
or a firewall those can be overridden, like Spark's own ``spark.driver.port``:

* ``spark.seatunnel.control.host``: the address executors connect to;
* ``spark.seatunnel.control.bindAddress``: the local address the driver listens on;
* ``spark.seatunnel.control.port``: a fixed port (default 0: any free port).

In local mode everything runs on this machine, so the channel stays on 127.0.0.1 unless
one of the keys above says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConfigError

HOST_KEY = "spark.seatunnel.control.host"
BIND_ADDRESS_KEY = "spark.seatunnel.control.bindAddress"
PORT_KEY = "spark.seatunnel.control.port"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ControlEndpoint:
    bind_address: str  #: the driver listens here
    advertised_host: str  #: executors connect here
    port: int  #: 0: any free port


def control_endpoint(conf: Callable[[str], str | None], master: str) -> ControlEndpoint:
    """The control channel's addresses from the Spark configuration (``conf(key)`` is
    None for an unset key) and the master URL."""
    local = master.startswith("local")
    driver_host = None if local else conf("spark.driver.host") or os.environ.get("SPARK_LOCAL_IP")
    advertised = conf(HOST_KEY) or driver_host or LOOPBACK
    # An advertised address may not be local (NAT): on a cluster, listen where Spark does.
    bind = conf(BIND_ADDRESS_KEY) or (
        advertised if local else conf("spark.driver.bindAddress") or driver_host or advertised
    )
    raw_port = conf(PORT_KEY) or "0"
    try:
        port = int(raw_port)
    except ValueError:
        raise ConfigError(PORT_KEY, f"expected a port number, got {raw_port!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(PORT_KEY, f"expected a port number from 0 to 65535, got {port}")
    return ControlEndpoint(bind, advertised, port)
