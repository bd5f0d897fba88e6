"""The entry point the SDK script-mode tests run in the sagemaker-training toolkit image: what it
saw (its host, its hyperparameter, the address of every host) goes into the model directory."""
import argparse
import json
import os
import socket
import time

PEER_PORT = 7777
PATIENCE_SECONDS = 120


def wait_until_algo_1_has_ended() -> None:
    """algo-1 serves until algo-2 has reached it once, then ends; algo-2 waits for both, so it
    looks algo-1 up only once algo-1 is gone (no timing luck: each step is observed)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    reached = False
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("algo-1", PEER_PORT), timeout=2).close()
            reached = True
        except ConnectionRefusedError:
            pass  # algo-1's address still answers: its container has not ended yet
        except OSError:  # unreachable or silent: algo-1's container is gone
            if reached:
                return
        time.sleep(0.2)
    raise SystemExit("algo-1 never served, or never ended")


def serve_algo_2_once() -> None:
    with socket.create_server(("", PEER_PORT)) as server:
        server.settimeout(PATIENCE_SECONDS)
        server.accept()[0].close()


def cluster() -> tuple[str, list[str]]:
    """This host and all of them: the toolkit's variables, else the resourceconfig.json every
    SageMaker container gets (the script also runs as a plain entrypoint, without the toolkit)."""
    if "SM_CURRENT_HOST" in os.environ:
        return os.environ["SM_CURRENT_HOST"], json.loads(os.environ["SM_HOSTS"])
    with open("/opt/ml/input/config/resourceconfig.json") as file:
        config = json.load(file)
    return config["current_host"], config["hosts"]


parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.0)
arguments, _ = parser.parse_known_args()
host, hosts = cluster()
print(f"training on {host} with lr={arguments.lr}")
if os.environ.get("ALGO_1_ENDS_FIRST") and len(hosts) > 1:
    if host == "algo-1":
        serve_algo_2_once()
    else:
        wait_until_algo_1_has_ended()
report = {"host": host, "lr": arguments.lr, "addresses": {peer: socket.gethostbyname(peer) for peer in hosts}}
print(f"loss={arguments.lr / 2}")
with open(os.path.join(os.environ.get("SM_MODEL_DIR", "/opt/ml/model"), f"{host}.json"), "w") as file:
    json.dump(report, file)
