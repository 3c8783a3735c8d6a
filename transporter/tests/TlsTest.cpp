#include <blobstreaming/transporter/Tls.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE TlsTest
#include <boost/test/unit_test.hpp>

#include "SocketPair.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace blobstreaming;
namespace fs = std::filesystem;

namespace {

/// Certificates made with the openssl command in a temporary directory:
/// ca, store (SAN IP:127.0.0.1), client (CN=client,O=Radiology), and
/// rogue (a client of another CA).
struct Certificates {
    fs::path dir;
    bool ok = false;

    Certificates()
    {
        char tmpl[] = "/tmp/tls-test-XXXXXX";
        if (!::mkdtemp(tmpl)) return;
        dir = tmpl;
        const std::string d = dir.string();
        const std::string q = " >/dev/null 2>&1";
        auto ca = [&](const std::string& name) {
            return "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name + " -keyout " + d + "/" +
                   name + ".key -out " + d + "/" + name + ".pem" + q;
        };
        auto cert = [&](const std::string& ca_name, const std::string& name, const std::string& subject,
                        const std::string& ext) {
            return "printf '" + ext + "' > " + d + "/" + name +
                   ".ext && openssl req -new -newkey rsa:2048 -nodes -subj " + subject + " -keyout " + d + "/" + name +
                   ".key -out " + d + "/" + name + ".csr" + q + " && openssl x509 -req -in " + d + "/" + name +
                   ".csr -CA " + d + "/" + ca_name + ".pem -CAkey " + d + "/" + ca_name +
                   ".key -CAcreateserial -days 1 -extfile " + d + "/" + name + ".ext -out " + d + "/" + name + ".pem" +
                   q;
        };
        ok =
            std::system(ca("ca").c_str()) == 0 && std::system(ca("rogue-ca").c_str()) == 0 &&
            std::system(cert("ca", "store", "/CN=store", "extendedKeyUsage=serverAuth\\nsubjectAltName=IP:127.0.0.1\\n")
                            .c_str()) == 0 &&
            std::system(cert("ca", "client", "/CN=client/O=Radiology", "extendedKeyUsage=clientAuth\\n").c_str()) ==
                0 &&
            std::system(cert("rogue-ca", "rogue", "/CN=rogue", "extendedKeyUsage=clientAuth\\n").c_str()) == 0;
    }
    ~Certificates()
    {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
    }
    TlsFiles files(const std::string& name, const std::string& ca = "ca") const
    {
        return TlsFiles{(dir / (name + ".pem")).string(), (dir / (name + ".key")).string(),
                        (dir / (ca + ".pem")).string()};
    }
};

const Certificates& certificates()
{
    static const Certificates c;
    return c;
}

#define REQUIRE_CERTIFICATES()                                                                                         \
    if (!certificates().ok) {                                                                                          \
        BOOST_TEST_MESSAGE("openssl could not make test certificates: test skipped");                                  \
        return;                                                                                                        \
    }

using Pair = test::SocketPair;

/// Drives both handshakes until neither wants more (bounded).
void handshake(Channel& client, Channel& server, Channel::Handshake& c, Channel::Handshake& s)
{
    c = s = Channel::Handshake::want_read;
    for (int i = 0; i < 1000; ++i) {
        if (c != Channel::Handshake::done && c != Channel::Handshake::failed) c = client.handshake();
        if (s != Channel::Handshake::done && s != Channel::Handshake::failed) s = server.handshake();
        const bool c_end = c == Channel::Handshake::done || c == Channel::Handshake::failed;
        const bool s_end = s == Channel::Handshake::done || s == Channel::Handshake::failed;
        if (c_end && s_end) return;
        if (c == Channel::Handshake::failed || s == Channel::Handshake::failed) {
            // One side gave up: let the other read the alert or the close.
            if (!c_end) c = client.handshake();
            if (!s_end) s = server.handshake();
            return;
        }
        pollfd p[2] = {{client.fd(), POLLIN, 0}, {server.fd(), POLLIN, 0}};
        ::poll(p, 2, 10);
    }
    BOOST_FAIL("the handshake did not finish in 1000 rounds");
}

}  // namespace

BOOST_AUTO_TEST_CASE(incomplete_files_name_the_missing_option)
{
    try {
        TlsFiles{"c.pem", "", ""}.check("--tls-");
        BOOST_FAIL("no error");
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == Errc::invalid_argument);
        BOOST_CHECK_EQUAL(std::string(e.what()),
                          "--tls-key is required with --tls-cert (TLS needs --tls-cert, --tls-key and --tls-ca)");
    }
    BOOST_CHECK_NO_THROW(TlsFiles{}.check("--tls-"));
    BOOST_CHECK(!TlsFiles{}.enabled());
}

BOOST_AUTO_TEST_CASE(unusable_files_are_named)
{
    REQUIRE_CERTIFICATES();
    const auto& c = certificates();
    TlsFiles missing = c.files("store");
    missing.ca = (c.dir / "nope.pem").string();
    try {
        TlsContext ctx(TlsContext::Role::server, missing);
        BOOST_FAIL("no error");
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == Errc::invalid_argument);
        BOOST_CHECK_MESSAGE(std::string(e.what()).rfind("TLS CA file \"" + missing.ca + "\": ", 0) == 0, e.what());
    }
    TlsFiles mismatch = c.files("store");
    mismatch.key = c.files("client").key;
    try {
        TlsContext ctx(TlsContext::Role::server, mismatch);
        BOOST_FAIL("no error");
    } catch (const Error& e) {
        BOOST_CHECK_EQUAL(std::string(e.what()),
                          "TLS key \"" + mismatch.key + "\" does not match the certificate \"" + mismatch.cert + "\"");
    }
}

/// A store and a client channel over a socket pair, handshaken (the
/// certificates must exist: REQUIRE_CERTIFICATES() first).
struct Connected {
    const TlsContext server_ctx{TlsContext::Role::server, certificates().files("store")};
    const TlsContext client_ctx{TlsContext::Role::client, certificates().files("client")};
    Pair pair;
    Channel client{pair.a.get(), client_ctx, "127.0.0.1"};
    Channel server{pair.b.get(), server_ctx};
    explicit Connected(int buffer) : pair(buffer)
    {
        Channel::Handshake c, s;
        handshake(client, server, c, s);
        BOOST_REQUIRE(c == Channel::Handshake::done && s == Channel::Handshake::done);
    }
};

BOOST_AUTO_TEST_CASE(mutual_handshake_and_subjects)
{
    REQUIRE_CERTIFICATES();
    const TlsContext server_ctx(TlsContext::Role::server, certificates().files("store"));
    const TlsContext client_ctx(TlsContext::Role::client, certificates().files("client"));
    Pair pair;
    Channel client(pair.a.get(), client_ctx, "127.0.0.1");
    Channel server(pair.b.get(), server_ctx);
    BOOST_CHECK(client.tls() && !client.handshake_done());
    Channel::Handshake c, s;
    handshake(client, server, c, s);
    BOOST_REQUIRE(c == Channel::Handshake::done);
    BOOST_REQUIRE_MESSAGE(s == Channel::Handshake::done, server.handshake_error());
    BOOST_CHECK_EQUAL(server.peer_subject(), "O=Radiology,CN=client");
    BOOST_CHECK_EQUAL(client.peer_subject(), "CN=store");

    // Nothing to read yet: EAGAIN, not an error.
    char byte;
    BOOST_CHECK_EQUAL(server.read(&byte, 1), -1);
    BOOST_CHECK_EQUAL(errno, EAGAIN);
    BOOST_CHECK_EQUAL(server.probe(), -1);
    BOOST_CHECK_EQUAL(errno, EAGAIN);

    // Decrypted bytes stay inside the TLS layer: pending() says so.
    const std::string text = "0123456789";
    BOOST_REQUIRE_EQUAL(client.write(text.data(), text.size()), static_cast<long>(text.size()));
    pollfd p{server.fd(), POLLIN, 0};
    BOOST_REQUIRE_EQUAL(::poll(&p, 1, 5000), 1);
    BOOST_CHECK_GT(server.probe(), 0);
    BOOST_REQUIRE_EQUAL(server.read(&byte, 1), 1);
    BOOST_CHECK_EQUAL(byte, '0');
    BOOST_CHECK_EQUAL(server.pending(), text.size() - 1);
    char rest[16];
    BOOST_CHECK_EQUAL(server.read(rest, sizeof rest), static_cast<long>(text.size() - 1));

    // close_notify: the peer reads the end of the stream.
    client.close_notify();
    BOOST_REQUIRE_EQUAL(::poll(&p, 1, 5000), 1);
    BOOST_CHECK_EQUAL(server.read(rest, sizeof rest), 0);
}

BOOST_AUTO_TEST_CASE(partial_writes_through_small_buffers_keep_every_byte)
{
    REQUIRE_CERTIFICATES();
    Connected link(16384);
    Channel& client = link.client;
    Channel& server = link.server;

    std::vector<std::uint8_t> sent(3 * 1024 * 1024 + 7);
    for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<std::uint8_t>(i * 31 + (i >> 12));
    std::vector<std::uint8_t> got;
    got.reserve(sent.size());
    std::size_t off = 0;
    int would_block = 0;
    for (int round = 0; round < 100000 && got.size() < sent.size(); ++round) {
        while (off < sent.size()) {  // until the socket is full
            const long n = client.write(sent.data() + off, sent.size() - off);
            if (n <= 0) {
                BOOST_REQUIRE_EQUAL(errno, EAGAIN);
                ++would_block;
                break;
            }
            off += static_cast<std::size_t>(n);
        }
        std::uint8_t buf[5000];  // smaller than a record: leaves bytes pending
        for (;;) {
            const long n = server.read(buf, sizeof buf);
            if (n <= 0) {
                BOOST_REQUIRE(n < 0 && errno == EAGAIN);
                break;
            }
            got.insert(got.end(), buf, buf + n);
        }
    }
    BOOST_CHECK_GT(would_block, 0);
    BOOST_REQUIRE_EQUAL(got.size(), sent.size());
    BOOST_CHECK(got == sent);
}

// The data-plane I/O layer over TLS: a frame whose record also carried the
// next bytes leaves them decrypted inside TLS (the socket will not become
// readable for them), and an OutputBuffer keeps the retry rule through
// small socket buffers while more is appended.
BOOST_AUTO_TEST_CASE(the_io_layer_takes_pending_bytes_and_retries_writes_under_tls)
{
    REQUIRE_CERTIFICATES();
    Connected link(16384);
    Channel& client = link.client;
    Channel& server = link.server;

    std::uint8_t request[protocol::kRequestSize];
    protocol::encode(protocol::Request{protocol::FrameType::push, {}, 0, 5}, request);
    std::string record(reinterpret_cast<const char*>(request), sizeof request);
    record += "12345";
    BOOST_REQUIRE_EQUAL(write_some(client, record.data(), record.size()).bytes(), record.size());  // one record
    pollfd p{server.fd(), POLLIN, 0};
    BOOST_REQUIRE_EQUAL(::poll(&p, 1, 5000), 1);
    FrameReader frame(protocol::kRequestSize);
    frame.expect(protocol::kRequestSize);
    BOOST_REQUIRE(frame.fill(server).done());
    BOOST_CHECK_EQUAL(server.pending(), 5u);
    char body[8];
    const IoResult r = read_some(server, body, sizeof body);
    BOOST_REQUIRE(r.done());
    BOOST_CHECK_EQUAL(std::string(body, r.bytes()), "12345");

    std::vector<std::uint8_t> sent(2 * 1024 * 1024 + 3);
    for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<std::uint8_t>(i * 17 + (i >> 11));
    OutputBuffer out;
    const std::size_t half = sent.size() / 2;
    out.append(sent.data(), half);
    std::vector<std::uint8_t> got;
    std::uint8_t buf[5000];  // smaller than a record: leaves bytes pending
    int stopped = 0;
    bool appended = false;
    for (int round = 0; round < 100000 && got.size() < sent.size(); ++round) {
        const IoResult w = out.drain(client);
        BOOST_REQUIRE_MESSAGE(w.done() || w.blocked(), w.text());
        if (w.blocked()) ++stopped;
        if (!appended) {  // the second half while (most of) the first waits
            out.append(sent.data() + half, sent.size() - half);
            appended = true;
        }
        for (;;) {
            const IoResult in = read_some(server, buf, sizeof buf);
            if (!in.done()) {
                BOOST_REQUIRE(in.blocked());
                break;
            }
            got.insert(got.end(), buf, buf + in.bytes());
        }
    }
    BOOST_CHECK_GT(stopped, 0);
    BOOST_CHECK(out.empty());
    BOOST_REQUIRE_EQUAL(got.size(), sent.size());
    BOOST_CHECK(got == sent);
}

BOOST_AUTO_TEST_CASE(a_client_of_another_ca_is_refused)
{
    REQUIRE_CERTIFICATES();
    const TlsContext server_ctx(TlsContext::Role::server, certificates().files("store"));
    const TlsContext rogue_ctx(TlsContext::Role::client, certificates().files("rogue"));
    Pair pair;
    Channel client(pair.a.get(), rogue_ctx, "127.0.0.1");
    Channel server(pair.b.get(), server_ctx);
    Channel::Handshake c, s;
    handshake(client, server, c, s);
    BOOST_REQUIRE(s == Channel::Handshake::failed);
    BOOST_CHECK_EQUAL(server.handshake_error(), "certificate verify failed (unable to get local issuer certificate)");
    if (c == Channel::Handshake::done) {  // TLS 1.3: the client learns it on its next read
        char byte;
        pollfd p{client.fd(), POLLIN, 0};
        ::poll(&p, 1, 5000);
        BOOST_CHECK_EQUAL(client.read(&byte, 1), -1);
        BOOST_CHECK_EQUAL(errno, EPROTO);
        BOOST_CHECK_EQUAL(client.error_text(errno), "TLS: tlsv1 alert unknown ca");
    }
}

BOOST_AUTO_TEST_CASE(a_store_certificate_for_another_host_is_refused)
{
    REQUIRE_CERTIFICATES();
    const TlsContext server_ctx(TlsContext::Role::server, certificates().files("store"));
    const TlsContext client_ctx(TlsContext::Role::client, certificates().files("client"));
    Pair pair;
    Channel client(pair.a.get(), client_ctx, "10.1.2.3");
    Channel server(pair.b.get(), server_ctx);
    Channel::Handshake c, s;
    handshake(client, server, c, s);
    BOOST_REQUIRE(c == Channel::Handshake::failed);
    BOOST_CHECK_EQUAL(client.handshake_error(), "certificate verify failed (IP address mismatch)");
    BOOST_CHECK(s != Channel::Handshake::done);
}

BOOST_AUTO_TEST_CASE(plain_channel_is_the_socket)
{
    Pair pair;
    Channel a(pair.a.get());
    Channel b(pair.b.get());
    BOOST_CHECK(!a.tls() && a.handshake_done());
    BOOST_CHECK(a.handshake() == Channel::Handshake::done);
    BOOST_CHECK_EQUAL(a.write("xy", 2), 2);
    char buf[4];
    BOOST_CHECK_EQUAL(b.probe(), 1);
    BOOST_CHECK_EQUAL(b.read(buf, sizeof buf), 2);
    BOOST_CHECK_EQUAL(b.read(buf, sizeof buf), -1);
    BOOST_CHECK_EQUAL(errno, EAGAIN);
    BOOST_CHECK_EQUAL(b.peer_subject(), "");
    pair.a.reset();
    BOOST_CHECK_EQUAL(b.read(buf, sizeof buf), 0);
}
