#!/usr/bin/python3
"""The registry unit's ExecStartPost (run as root): wait until this instance has read its journal (/health/ready),
then let clients in again.

Apicurio opens its HTTP port before it has read its Kafka journal and meanwhile answers 404 for what it has not read.
With --drain-port, the unit's ExecStartPre put a firewall rule first that rejects new connections to that port, so
clients that list several instances fail over at once; this removes it when the instance is ready, or when it gives
up (the unit then fails, and systemd starts it again). The unit is `active` only once the instance is ready.
"""

from __future__ import annotations

import argparse
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request


def ready(url: str, context: ssl.SSLContext | None) -> bool:
    try:
        with urllib.request.urlopen(url + "/health/ready", timeout=3, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="this instance, as clients reach it (https://address:port)")
    parser.add_argument("--ca", default="", help="the CA bundle its certificate is checked against")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--drain-port", type=int, default=0, help="remove the ufw reject rule of this port at the end")
    args = parser.parse_args()
    context = ssl.create_default_context(cafile=args.ca) if args.ca else None
    deadline = time.monotonic() + args.timeout
    try:
        while not ready(args.url, context):
            if time.monotonic() > deadline:
                print(f"{args.url} not ready after {args.timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.5)
        print(f"{args.url} ready")
        return 0
    finally:
        if args.drain_port:
            rule = ["reject", "proto", "tcp", "to", "any", "port", str(args.drain_port)]
            subprocess.run(["/usr/sbin/ufw", "delete", *rule], check=False, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
