/* plain_pair: the plain C client/server pair that `blob push` and `blob pull`
 * are compared with as whole processes (benchmarks/bench_cli.py). It does the
 * least a file transfer with a durable push can do: no control plane, no
 * hashing, no temporary file.
 *
 *   plain_pair server [--bind HOST] --dir DIR
 *       prints "plain_pair ready port=N" once listening (port 0: ephemeral),
 *       then serves one connection at a time until killed:
 *         push: reads the bytes into DIR/blob (a read loop of 1 MiB), fdatasync,
 *               then one Ack byte;
 *         pull: sendfile of DIR/blob (the last file pushed).
 *   plain_pair server [--bind HOST] --memory
 *       the same, the bytes kept in memory instead (what a MemoryStore is
 *       compared with): a push frees the last one's buffer, reads into a
 *       fresh malloc() of its size (glibc maps large ones anew: every page is
 *       first touched as the bytes arrive), then the Ack; a pull sends that
 *       buffer.
 *   plain_pair push HOST PORT FILE   sendfile of FILE, then waits for the Ack
 *   plain_pair pull HOST PORT FILE   a read loop of 1 MiB into FILE (created or truncated)
 *
 * Wire: the client sends 'P' or 'G' and a 64-bit little-endian size (push:
 * the bytes that follow; pull: 0); a pull's answer starts with the 64-bit
 * size. Exit status 0, 1 on any error (with a message naming what failed). */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kChunk = 1 << 20, kHeader = 9 };
static const char kAck = 'A';

/* Prints "plain_pair: WHAT: DETAIL" (default: errno's text; errno 0: an
 * early end of stream) and returns the exit status 1. */
static int fail(const char* what, const char* detail)
{
    if (!detail) detail = errno ? strerror(errno) : "the peer closed the connection";
    fprintf(stderr, "plain_pair: %s: %s\n", what, detail);
    return 1;
}

static void put_u64(unsigned char* p, uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char* p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads exactly n bytes; 0, or -1 with errno (0 at an early end of stream). */
static int read_full(int fd, void* buf, size_t n)
{
    char* p = buf;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0) errno = 0;
            return -1;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int write_full(int fd, const void* buf, size_t n)
{
    const char* p = buf;
    while (n > 0) {
        ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
        if (put < 0 && errno == ENOTSOCK) put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) return -1;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/* Sends n bytes of file `in` from offset 0 to socket `out` with sendfile. */
static int send_file(int out, int in, uint64_t n)
{
    off_t offset = 0;
    while ((uint64_t)offset < n) {
        uint64_t left = n - (uint64_t)offset;
        ssize_t put = sendfile(out, in, &offset, left > 0x40000000u ? 0x40000000u : (size_t)left);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) {
            if (put == 0) errno = EPIPE; /* the file shrank */
            return -1;
        }
    }
    return 0;
}

/* Copies n bytes from socket `in` to file `out` in chunks of kChunk. */
static int receive_file(int out, int in, uint64_t n, char* buf)
{
    while (n > 0) {
        ssize_t got = read(in, buf, n > kChunk ? kChunk : n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0) errno = 0;
            return -1;
        }
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(out, buf + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put < 0) return -1;
            done += put;
        }
        n -= (uint64_t)got;
    }
    return 0;
}

static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* The last push of a --memory server. */
static char* kept = NULL;
static uint64_t kept_size = 0;

static int serve_one_in_memory(int conn, const unsigned char* header)
{
    uint64_t size = get_u64(header + 1);
    if (header[0] == 'P') {
        free(kept);
        kept_size = 0;
        kept = malloc(size ? size : 1);
        if (!kept) return fail("server: push into memory", "out of memory");
        if (read_full(conn, kept, size) != 0) return fail("server: push into memory", NULL);
        kept_size = size;
        return write_full(conn, &kAck, 1) == 0 ? 0 : fail("server: send Ack", NULL);
    }
    if (header[0] == 'G') {
        unsigned char answer[8];
        put_u64(answer, kept_size);
        if (write_full(conn, answer, sizeof answer) != 0 || (kept_size && write_full(conn, kept, kept_size) != 0))
            return fail("server: send from memory", NULL);
        return 0;
    }
    return fail("server", "unknown request (expected 'P' or 'G')");
}

static int serve_one(int conn, const char* path, char* buf)
{
    unsigned char header[kHeader];
    if (read_full(conn, header, sizeof header) != 0) return fail("server: read request", NULL);
    if (!path) return serve_one_in_memory(conn, header);
    uint64_t size = get_u64(header + 1);
    if (header[0] == 'P') {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return fail(path, NULL);
        int bad = receive_file(fd, conn, size, buf) != 0 || fdatasync(fd) != 0;
        int saved = errno;
        close(fd);
        errno = saved;
        if (bad) return fail("server: push into file", NULL);
        return write_full(conn, &kAck, 1) == 0 ? 0 : fail("server: send Ack", NULL);
    }
    if (header[0] == 'G') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) return fail(path, NULL);
        unsigned char answer[8];
        put_u64(answer, (uint64_t)st.st_size);
        int bad = write_full(conn, answer, sizeof answer) != 0 || send_file(conn, fd, (uint64_t)st.st_size) != 0;
        int saved = errno;
        close(fd);
        errno = saved;
        return bad ? fail("server: sendfile", NULL) : 0;
    }
    return fail("server", "unknown request (expected 'P' or 'G')");
}

/* dir NULL: the bytes are kept in memory (--memory). */
static int server(const char* bind_host, const char* dir)
{
    char path[4096];
    if (dir && snprintf(path, sizeof path, "%s/blob", dir) >= (int)sizeof path) return fail("--dir", "too long");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    if (inet_pton(AF_INET, bind_host, &addr.sin_addr) != 1) return fail("--bind: not an IPv4 address", bind_host);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 8) != 0 ||
        getsockname(listener, (struct sockaddr*)&addr, &len) != 0)
        return fail("server: listen", NULL);
    printf("plain_pair ready port=%u\n", (unsigned)ntohs(addr.sin_port));
    fflush(stdout);
    char* buf = malloc(kChunk);
    if (!buf) return fail("server", "out of memory");
    for (;;) {
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR) continue;
            return fail("server: accept", NULL);
        }
        no_delay(conn);
        serve_one(conn, dir ? path : NULL, buf); /* an error ends this connection only */
        close(conn);
    }
}

static int connect_to(const char* host, const char* port)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo* found = NULL;
    int rc = getaddrinfo(host, port, &hints, &found);
    if (rc != 0) {
        fail(host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int connected = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    freeaddrinfo(found);
    if (!connected) {
        fail("connect", NULL);
        return -1;
    }
    no_delay(fd);
    return fd;
}

static int push(const char* host, const char* port, const char* file)
{
    int in = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) return fail(file, NULL);
    int sock = connect_to(host, port);
    if (sock < 0) return 1;
    unsigned char header[kHeader] = {'P'};
    put_u64(header + 1, (uint64_t)st.st_size);
    if (write_full(sock, header, sizeof header) != 0 || send_file(sock, in, (uint64_t)st.st_size) != 0)
        return fail("push: send", NULL);
    char ack = 0;
    if (read_full(sock, &ack, 1) != 0 || ack != kAck) return fail("push", "no Ack from the server");
    return 0;
}

static int pull(const char* host, const char* port, const char* file)
{
    int sock = connect_to(host, port);
    if (sock < 0) return 1;
    unsigned char header[kHeader] = {'G'};
    unsigned char answer[8];
    if (write_full(sock, header, sizeof header) != 0 || read_full(sock, answer, sizeof answer) != 0)
        return fail("pull: request", NULL);
    int out = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return fail(file, NULL);
    char* buf = malloc(kChunk);
    if (!buf) return fail("pull", "out of memory");
    if (receive_file(out, sock, get_u64(answer), buf) != 0) return fail("pull: receive into file", NULL);
    return close(out) == 0 ? 0 : fail(file, NULL);
}

int main(int argc, char** argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "server") == 0) {
        const char* bind_host = "127.0.0.1";
        const char* dir = NULL;
        int memory = 0;
        for (int i = 2; i < argc; ++i) {
            if (strcmp(argv[i], "--memory") == 0) memory = 1;
            else if (i + 1 < argc && strcmp(argv[i], "--bind") == 0) bind_host = argv[++i];
            else if (i + 1 < argc && strcmp(argv[i], "--dir") == 0) dir = argv[++i];
            else return fail(argv[i], "unknown option (allowed: --bind HOST, --dir DIR, --memory)");
        }
        if (!dir == !memory)
            return fail("server", "usage: plain_pair server [--bind HOST] --dir DIR | --memory (one of the two)");
        return server(bind_host, dir);
    }
    if (argc == 5 && strcmp(argv[1], "push") == 0) return push(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "pull") == 0) return pull(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: plain_pair server [--bind HOST] --dir DIR | --memory\n"
                    "       plain_pair push|pull HOST PORT FILE\n");
    return 1;
}
