"""`python -m tier --listen ADDR:9200 --peer-listen ADDR:PORT --root DIR --config FILE
--token-file FILE --network NAME --node NAME`: one node's checkpoint tier (started and supervised
by the node agent). SIGTERM (or SIGINT): stop accepting, finish the requests in flight (bounded),
exit 0."""

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from tier.identity import DockerIdentity
from tier.node import NodeSettings, TierNode

STOP_TIMEOUT_SECONDS = 30.0


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not ADDR:PORT")
    return host.strip("[]"), int(port)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tier", description="Sageport's checkpoint tier")
    parser.add_argument("--listen", type=_address, required=True, help="ADDR:PORT containers reach (9200)")
    parser.add_argument("--peer-listen", type=_address, required=True, help="ADDR:PORT the other nodes reach")
    parser.add_argument("--root", type=Path, required=True, help="memory-backed directory for shards")
    parser.add_argument("--config", type=Path, required=True, help="JSON: budget_bytes, grace_seconds, peers")
    parser.add_argument("--token-file", type=Path, required=True, help="the installation's peer secret")
    parser.add_argument("--network", required=True, help="the node's tier network (callers' identity)")
    parser.add_argument("--node", required=True, help="this node's name, as in the config's peers")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    arguments = parse_arguments(argv)
    identity = DockerIdentity(arguments.network)
    node = TierNode(NodeSettings(
        node=arguments.node, listen=arguments.listen, peer_listen=arguments.peer_listen, root=arguments.root,
        config_path=arguments.config, token=arguments.token_file.read_text().strip(),
        job_of=identity.job_of, job_running=identity.job_running,
    ))
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    node.start()
    stopping.wait()
    logging.getLogger("sageport.tier").info("tier node %s stopping", arguments.node)
    node.stop(STOP_TIMEOUT_SECONDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
