"""scripts/lib.sh's port check, as `make run` meets it: a port whose last
pipeline just stopped (its sockets in TIME_WAIT) is free; a port another
process listens on is refused, naming that process.

    python3 scripts/test_lib.py
"""

import socket
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def need_free_port(port: int) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'source scripts/lib.sh; need_free_port {port} WEBHOOK_PORT'],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)


def listener() -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


class NeedFreePort(unittest.TestCase):
    def test_a_port_just_released_is_free_at_once(self):
        server = listener()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        # The server's side closes first, as a stopped pipeline's does: its
        # socket stays in TIME_WAIT for a while.
        accepted.close()
        server.close()
        client.close()
        checked = need_free_port(port)
        self.assertEqual(checked.returncode, 0, checked.stderr)

    def test_a_port_another_process_holds_is_refused_naming_it(self):
        server = listener()
        self.addCleanup(server.close)
        checked = need_free_port(server.getsockname()[1])
        self.assertNotEqual(checked.returncode, 0)
        self.assertIn("is in use", checked.stderr)
        self.assertIn("WEBHOOK_PORT", checked.stderr)
        if subprocess.run(["bash", "-c", "command -v ss"], capture_output=True).returncode == 0:
            self.assertIn("python", checked.stderr, "the process that holds it")


if __name__ == "__main__":
    unittest.main()
