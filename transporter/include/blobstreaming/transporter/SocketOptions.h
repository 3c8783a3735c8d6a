#pragma once
/// Per-session / per-transfer socket options for data connections.

#include <string>

namespace blobstreaming {

struct SocketOptions {
    /// SO_SNDBUF / SO_RCVBUF in bytes; 0 leaves them unset so that Linux
    /// autotuning stays on (setting either turns autotuning off for it).
    int send_buffer = 0;
    int receive_buffer = 0;
    bool no_delay = true;  ///< TCP_NODELAY
};

/// What the kernel granted (Linux doubles the request and caps it at
/// net.core.[rw]mem_max).
struct GrantedSocketOptions {
    int send_buffer = 0;
    int receive_buffer = 0;
};

/// Applies `options` to a connected or listening TCP socket, logs at INFO
/// the buffer sizes the kernel actually granted when any was requested, and
/// returns them. Failures of individual options are logged, not thrown.
GrantedSocketOptions apply_socket_options(int fd, const SocketOptions& options, const std::string& peer);

/// Makes SIGPIPE harmless for the whole process (idempotent). Data-plane
/// sends also use MSG_NOSIGNAL; this covers ACE paths and sendfile.
void ignore_sigpipe();

}  // namespace blobstreaming
