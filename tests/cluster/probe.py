"""Small checks the tests run *on* a host (``python -m tests.cluster.probe CMD ...``): the
test process itself lives outside the hosts' network and cannot reach their addresses.
Each command prints one JSON line."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request


def master_state(args: argparse.Namespace) -> dict:
    with urllib.request.urlopen(f"{args.url}/json/", timeout=5) as response:
        return json.loads(response.read())


def create_bucket(args: argparse.Namespace) -> dict:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=args.bucket)
    return {"bucket": args.bucket}


def tally_output(args: argparse.Namespace) -> dict:
    from tests.support.workspace import read_output, tally

    table = read_output(args.url, "parquet", json.loads(args.options), columns=["id"])
    result = tally(table.column("id").combine_chunks(), args.rows)
    return {
        "rows": result.rows,
        "lost": result.lost,
        "duplicated": result.duplicated,
        "unexpected": result.unexpected,
        "text": str(result),
    }


def intrude(args: argparse.Namespace) -> dict:
    """Connect to the driver's control channel as a host that does not hold the job's
    token: with a made-up token, and with garbage instead of a handshake."""
    import socket

    from airflow_provider_seatunnel_ckpt.engine.transport import ControlClient, ProtocolError

    outcome: dict = {}
    client = ControlClient((args.host, args.port), "0" * 64, "intruder", on_message=lambda _m: None, connect_attempts=1)
    try:
        client.connect()
        outcome["wrong_token"] = "accepted"
    except ProtocolError as err:
        outcome["wrong_token"] = f"rejected: {err}"
    except OSError as err:
        outcome["wrong_token"] = f"unreachable: {err}"
    finally:
        client.close()
    with socket.create_connection((args.host, args.port), timeout=5) as sock:
        sock.settimeout(15)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: driver\r\n\r\n" * 4)
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
            outcome["garbage"] = "closed"
        except TimeoutError:
            outcome["garbage"] = "still open"
        except ConnectionResetError:
            outcome["garbage"] = "closed"
    return outcome


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="probe")
    commands = parser.add_subparsers(dest="command", required=True)
    sub = commands.add_parser("master-state")
    sub.add_argument("url")
    sub.set_defaults(run=master_state)
    sub = commands.add_parser("create-bucket")
    sub.add_argument("endpoint")
    sub.add_argument("bucket")
    sub.set_defaults(run=create_bucket)
    sub = commands.add_parser("tally")
    sub.add_argument("url")
    sub.add_argument("rows", type=int)
    sub.add_argument("options")
    sub.set_defaults(run=tally_output)
    sub = commands.add_parser("intrude")
    sub.add_argument("host")
    sub.add_argument("port", type=int)
    sub.set_defaults(run=intrude)
    args = parser.parse_args(argv)
    print(json.dumps(args.run(args)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
