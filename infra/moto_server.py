"""moto's server as `moto_server` runs it, except for one thing: it never sends the interim
"100 Continue" response.

The AWS SDK v2's asynchronous (Netty) client, which Hadoop's S3A uses to upload files (RocksDB's
state snapshots among them), sends `Expect: 100-continue` with the body at once and then takes
the interim response for the final one (status 100): the upload failed, S3A retried it forever,
and a stream on local-s3 never exited. S3 itself answers such requests correctly.

    python -m infra.moto_server <port>
"""

from __future__ import annotations

import sys

from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app, run_simple


class NoInterimContinue(MotoRequestHandler):
    def handle_expect_100(self) -> bool:
        return True  # read the body without an interim response


def main(argv: list[str] | None = None) -> int:
    port = int((sys.argv[1:] if argv is None else argv)[0])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, app, threaded=True, request_handler=NoInterimContinue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
