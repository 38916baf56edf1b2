"""A bridge into a sandbox with a private network namespace: a listener on ``127.0.0.1:PORT``
inside that forwards every connection to a unix socket of aeval's bound into that sandbox
alone. The key proxy's grants (`aeval.adapters.runtimes.keyproxy.bridged`) and the
provisioning phase's registry proxy (`aeval.adapters.sandbox.provision`) are reached this way:
nothing of the host's network is shared.

Run as ``python -I -c BRIDGE SOCKET PORT COMMAND...``: it listens, then becomes the command.
"""

BRIDGE = '''\
# aeval's bridge: listen on 127.0.0.1:PORT (inside the sandbox: in its network namespace, its
# own when the case has no network), forward every connection to the grant's unix socket, and
# exec the command. Arguments: SOCKET PORT COMMAND...
import ctypes, os, signal, socket, sys, threading

sock_path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    listener.bind(("127.0.0.1", port))
except OSError as exc:
    sys.exit(f"aeval key proxy bridge: cannot listen on 127.0.0.1:{port}: {exc}")
listener.listen(64)


def pump(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve():
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(sock_path)
        except OSError:
            client.close()
            continue
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


parent = os.getpid()
if os.fork() == 0:  # the child serves until the command ends; the parent becomes the command
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)
    serve()
    os._exit(0)
listener.close()
os.execvp(argv[0], argv)
'''
