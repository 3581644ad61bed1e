#!/usr/bin/env python3
"""A minimal Alertmanager webhook receiver: prints one JSON line per alert it is sent.

The compose stack's default receiver (docker/alertmanager/alertmanager.yml), so alerts reach
at least the logs (``docker-compose logs -f alert-receiver``) before you point Alertmanager at
your own endpoint. ``alert_receiver.py [PORT] [HOST]``; standard library only.
"""

import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20  # Alertmanager's groups are small; refuse anything that is not
_out = threading.Lock()  # requests are served on threads; one alert, one whole line


def emit(record: dict) -> None:
    with _out:
        sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
        sys.stdout.flush()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            self.send_response(413 if length else 400)
            self.end_headers()
            return
        try:
            payload = json.loads(self.rfile.read(length))
            alerts = payload["alerts"]
        except (ValueError, KeyError, TypeError):
            self.send_response(400)
            self.end_headers()
            return
        for alert in alerts:
            line = {"status": alert.get("status"), **alert.get("labels", {}),
                    "summary": alert.get("annotations", {}).get("summary"), "starts_at": alert.get("startsAt")}
            emit(line)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main(argv: list[str]) -> None:
    port = int(argv[1]) if len(argv) > 1 else 9095
    host = argv[2] if len(argv) > 2 else "0.0.0.0"
    server = ThreadingHTTPServer((host, port), Receiver)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # as PID 1 in a container, SIGTERM has no default
    emit({"listening": f"{host}:{port}"})
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv)
