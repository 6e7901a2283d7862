"""The local lab: systemd containers that behave like VMs, for the Kafka roles to provision.

Run as ``python -m kafkalab.lab {engine,image,up,down,status,tools}`` from the repository root, as root.

- ``engine``  makes sure a Docker engine answers (installs docker.io and starts dockerd if needed).
- ``image``   builds the release's image (``kafkalab/debian12:<recipe hash>`` for bookworm, images/releases.yml;
              KAFKALAB_RELEASE picks another) from debootstrap, without any registry.
- ``up``      starts one container per inventory host at its ``ansible_host`` address, reachable by SSH.
- ``down``    removes the lab's containers and network (only what carries our label).
- ``status``  prints one line per lab host.
- ``tools``   installs what the verification suite runs on this machine, the controller, when it is missing:
              openssl, and chromium, which draws the Kafka overview page.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kafkalab.lab.common import LabError, ensure_tools
from kafkalab.lab.engine import cmd_engine
from kafkalab.lab.hosts import cmd_down, cmd_status, cmd_up
from kafkalab.lab.image import cmd_image

DEFAULT_INVENTORY = "inventories/lab"
# The commands tests/cluster runs on the controller beyond Python's, each with its Debian package.
VERIFY_TOOLS = {"chromium": "chromium", "openssl": "openssl"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("engine", help="make sure a Docker engine answers")
    sub.add_parser("tools", help="install what the verification suite runs on the controller")
    image = sub.add_parser("image", help="build the systemd base image if its recipe changed")
    image.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    for name, text in (("up", "start the lab"), ("down", "remove the lab"), ("status", "show the lab")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--inventory", "-i", default=DEFAULT_INVENTORY, help="inventory directory")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "engine":
            cmd_engine()
        elif args.cmd == "tools":
            ensure_tools(VERIFY_TOOLS)
        elif args.cmd == "image":
            cmd_image(force=args.force)
        elif args.cmd == "up":
            cmd_up(args.inventory)
        elif args.cmd == "down":
            cmd_down(args.inventory)
        else:
            cmd_status(args.inventory)
    except LabError as exc:
        print(f"lab {args.cmd}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
