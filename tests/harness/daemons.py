"""blobstored: its command line on ephemeral ports, and the daemon as a
Service whose ready line (`blobstored ready name=… data=HOST:PORT …`) gives
its data address."""

from .processes import Service

READY = "blobstored ready "


def blobstored_argv(blobstored, name, store, naming, host="127.0.0.1", tier=None, extra=()):
    """blobstored --name NAME --store STORE with both planes on `host`, port 0."""
    argv = [blobstored, "--name", name, "--store", store, "--naming", naming,
            "--control-address", f"{host}:0", "--data-address", f"{host}:0"]
    if tier:
        argv += ["--tier", tier]
    return argv + list(extra)


class Daemon(Service):
    """A blobstored started by a Cluster; `spec` restarts it (restart_daemon)."""

    def __init__(self, name, popen, log_paths, out_path, argv, store_dir):
        super().__init__(name, popen, log_paths, out_path)
        self.argv = argv
        self.store_dir = store_dir
        self.spec = {}

    @property
    def data(self):
        host, _, port = self.ready["data"].rpartition(":")
        return host, int(port)
