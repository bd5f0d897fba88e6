"""`python -m s3gateway --listen 127.0.0.1:8333 --upstream http://127.0.0.1:<store port>`: the S3
gateway (run by the devstack supervisor, `devstack.stack.s3_gateway_spec`)."""

import argparse
import logging
import os


def main() -> None:
    parser = argparse.ArgumentParser(description="Sageport's S3 gateway")
    parser.add_argument("--listen", required=True, help="host:port the S3 clients use")
    parser.add_argument("--upstream", required=True, help="URL of the bundled store (loopback)")
    arguments = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django

    django.setup()
    from s3gateway.server import build_server

    host, _, port = arguments.listen.rpartition(":")
    server = build_server((host, int(port)), arguments.upstream)
    logging.getLogger("sageport.s3gateway").info(
        "serving S3 on %s for %s", arguments.listen, arguments.upstream
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
