"""The ports the stack hands to its children (`--fd`: each subgraph replica and the web process)
are never free between the stack binding them and the child serving them: no other process can
bind one, and a request sent the moment the child is started waits in the socket's queue and is
answered by that child. (A port picked free and bound later by the child was refused meanwhile,
and could be taken by anyone.) Run through the installed entry point, as the stack runs it."""

from __future__ import annotations

import errno
import os
import socket
import subprocess

import httpx
import pytest

from gateway.stack import listening_socket
from store.embedded import free_port
from tests.command import KERNELINDEX

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("part", ["web", "subgraph"])
def test_a_handed_port_cannot_be_taken_and_answers_from_the_start(part, db, mongo_uri):
    sock = listening_socket("127.0.0.1", 0, reuse_port=False)
    port = sock.getsockname()[1]
    if part == "web":
        # The pages' API is not needed for the stylesheet.
        argv = ["web", "--graphql", f"http://127.0.0.1:{free_port()}/graphql"]
        request = {"method": "GET", "url": f"http://127.0.0.1:{port}/static/site.css"}
    else:
        argv = ["serve", "--subgraph", "registry", "--no-data"]
        request = {"method": "POST", "url": f"http://127.0.0.1:{port}/graphql", "json": {"query": "{ _service { sdl } }"}}
    env = {**os.environ, "MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    process = subprocess.Popen(
        [KERNELINDEX, *argv, "--host", "127.0.0.1", "--port", str(port), "--fd", str(sock.fileno())],
        pass_fds=(sock.fileno(),),
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    sock.close()  # only the child holds the port now
    try:
        intruder = socket.socket()
        with pytest.raises(OSError) as taken:
            intruder.bind(("127.0.0.1", port))
        intruder.close()
        assert taken.value.errno == errno.EADDRINUSE
        answer = httpx.request(**request, timeout=120)  # sent before the child can have started serving
        assert answer.status_code == 200, answer.text
        if part == "subgraph":
            assert "type Run" in answer.json()["data"]["_service"]["sdl"]
    finally:
        process.terminate()
        code = process.wait(timeout=60)
    assert code == 0, process.stderr.read()
