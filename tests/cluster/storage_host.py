"""The storage host's servers in one process: moto's S3 and the WebHDFS test server,
listening on the host's address. Run on that host (``python -m tests.cluster.storage_host
ADDRESS S3_PORT``); prints one JSON line with the ports once both serve, then runs until
killed (a host loss is a SIGKILL, like any other process on the host)."""

from __future__ import annotations

import json
import logging
import sys
import threading


def main(address: str, s3_port: int) -> None:
    from moto.server import ThreadedMotoServer

    from tests.servers.webhdfs import WebHdfsServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    s3 = ThreadedMotoServer(ip_address=address, port=s3_port, verbose=False)
    s3.start()
    hdfs = WebHdfsServer(host=address).start()
    print(json.dumps({"s3": s3_port, "webhdfs": hdfs.port}), flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
