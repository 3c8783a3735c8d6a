#include "AssociationGate.h"

#include <dcmtk/dcmnet/dcmlayer.h>
#include <dcmtk/dcmnet/dcmtrans.h>
#include <dcmtk/dcmnet/dul.h>

#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Tls.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

using Clock = std::chrono::steady_clock;

/// PS3.8 9.3.4: an A-ASSOCIATE-RJ of the service provider (presentation
/// related function), rejected-transient, local-limit-exceeded: what
/// DCMTK's pool answers when its threads are taken.
constexpr std::uint8_t kLimitExceeded[] = {0x03, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x02, 0x03, 0x02};
/// The largest A-ASSOCIATE-RQ read (DCMTK's own limit is 1 MiB): DCMTK
/// accepts 128 presentation contexts, whose request is ~60 KiB even with
/// every transfer syntax; a connection holds at most this much until its
/// deadline.
constexpr std::uint64_t kMaxRequest = 256 * 1024;
/// Connections being refused at once (each answered with kLimitExceeded and
/// read until the peer closes, 2 s at most); beyond, they are closed.
constexpr int kMaxRefusing = 32;
/// Pending connections closed at most, out of descriptors, before a pause.
constexpr int kShedBurst = 64;
constexpr auto kRefusalDrain = std::chrono::seconds(2);
/// How long an association that this side has rejected, released or
/// aborted waits for the peer to close its connection.
constexpr auto kClosingGrace = std::chrono::seconds(1);
/// Refusals logged one by one per window; the rest are counted.
constexpr unsigned kRefusalLogLines = 20;
constexpr auto kRefusalLogWindow = std::chrono::seconds(10);

/// A connection's slot: at most --max-associations in all and
/// --max-associations-per-peer from one address, from the accept until the
/// association (or the attempt) has ended.
class Slots {
public:
    Slots(unsigned total, unsigned per_peer) : total_(total), per_peer_(per_peer) {}

    /// "" when admitted (release() it later), or why not.
    std::string admit(const std::string& peer)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (busy_ >= total_)
            return "all " + std::to_string(total_) + " association slots are in use (--max-associations)";
        unsigned& mine = peers_[peer];
        if (mine >= per_peer_) {
            return std::to_string(mine) + " associations of " + peer +
                   " are open already (--max-associations-per-peer " + std::to_string(per_peer_) + ")";
        }
        ++mine;
        ++busy_;
        return {};
    }

    void release(const std::string& peer)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        --busy_;
        auto it = peers_.find(peer);
        if (it != peers_.end() && --it->second == 0) peers_.erase(it);
    }

private:
    std::mutex mutex_;
    const unsigned total_;
    const unsigned per_peer_;
    unsigned busy_ = 0;
    std::map<std::string, unsigned> peers_;
};

/// Waits until `fd` is readable or `deadline` passes; false at the deadline.
bool readable_by(int fd, Clock::time_point deadline)
{
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, std::min<long long>(left, 60000))));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return true;  // the read that follows reports it
        if (n == 0 && left <= 0) return false;
    }
}

/// Waits until `fd` is writable or `deadline` passes; false at the deadline.
bool writable_by(int fd, Clock::time_point deadline)
{
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd, POLLOUT, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, std::min<long long>(left, 60000))));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return true;
        if (n == 0 && left <= 0) return false;
    }
}

/// Waits until a TLS call that returned EAGAIN can go on (the socket
/// readable or writable, as `channel` wants) or `deadline` passes.
bool ready_by(const Channel& channel, Clock::time_point deadline)
{
    return channel.wants_write() ? writable_by(channel.fd(), deadline) : readable_by(channel.fd(), deadline);
}

/// Reads exactly `size` bytes by `deadline`, through `tls` when not null
/// (its socket non-blocking); "" or why not.
std::string read_by(int fd, Channel* tls, std::uint8_t* out, std::size_t size, Clock::time_point deadline)
{
    std::size_t got = 0;
    while (got < size) {
        if (tls) {
            const long n = tls->read(out + got, size - got);
            if (n == 0) return "the peer closed the connection";
            if (n > 0) {
                got += static_cast<std::size_t>(n);
                continue;
            }
            if (errno != EAGAIN) return tls->error_text(errno);
            if (!ready_by(*tls, deadline)) return "not received within the deadline";
            continue;
        }
        if (!readable_by(fd, deadline)) return "not received within the deadline";
        const ssize_t n = ::recv(fd, out + got, size - got, 0);
        if (n == 0) return "the peer closed the connection";
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return std::strerror(errno);
        }
        got += static_cast<std::size_t>(n);
    }
    return {};
}

std::string seconds_text(std::chrono::milliseconds d)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g s", std::chrono::duration<double>(d).count());
    return text;
}

/// What the connection thread hands to the transport layer DCMTK calls
/// (on that thread) inside ASC_receiveAssociation.
thread_local std::vector<std::uint8_t>* t_request = nullptr;
thread_local const std::string* t_peer = nullptr;
thread_local std::unique_ptr<Channel>* t_channel = nullptr;
thread_local bool t_taken = false;

/// Follows a stream of PDUs (6-byte headers: type, reserved, length).
class PduStream {
public:
    bool in_pdu() const { return header_got_ > 0 || body_left_ > 0; }
    /// The type of the PDU under way or last begun.
    std::uint8_t type() const { return header_[0]; }

    /// Accounts `n` bytes: begun() at each PDU's first byte, headed(type)
    /// once its header is whole, body(type, bytes, count) for its body.
    template <class Begun, class Headed, class Body>
    void account(const std::uint8_t* p, std::size_t n, Begun begun, Headed headed, Body body)
    {
        while (n > 0) {
            if (body_left_ > 0) {
                const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, n));
                body(header_[0], p, take);
                body_left_ -= take;
                p += take;
                n -= take;
                continue;
            }
            if (header_got_ == 0) begun();
            header_[header_got_++] = *p++;
            --n;
            if (header_got_ == sizeof header_) {
                body_left_ = std::uint64_t{header_[2]} << 24 | std::uint64_t{header_[3]} << 16 |
                             std::uint64_t{header_[4]} << 8 | header_[5];
                header_got_ = 0;
                headed(header_[0]);
            }
        }
    }

private:
    std::uint8_t header_[6] = {};
    std::size_t header_got_ = 0;
    std::uint64_t body_left_ = 0;
};

/// Follows the PDV items of one P-DATA-TF body (PS3.8 9.3.5.1: length (4),
/// presentation context id, message control header, fragment).
class PdvStream {
public:
    void reset() { header_got_ = 0, item_left_ = 0; }

    /// Accounts `n` body bytes: fragment(control) at each item's header.
    template <class Fragment>
    void account(const std::uint8_t* p, std::size_t n, Fragment fragment)
    {
        while (n > 0) {
            if (item_left_ > 0) {
                const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(item_left_, n));
                item_left_ -= take;
                p += take;
                n -= take;
                continue;
            }
            header_[header_got_++] = *p++;
            --n;
            if (header_got_ == sizeof header_) {
                const std::uint64_t length = std::uint64_t{header_[0]} << 24 | std::uint64_t{header_[1]} << 16 |
                                             std::uint64_t{header_[2]} << 8 | header_[3];
                item_left_ = length >= 2 ? length - 2 : 0;
                header_got_ = 0;
                fragment(header_[5]);
            }
        }
    }

private:
    std::uint8_t header_[6] = {};
    std::size_t header_got_ = 0;
    std::uint64_t item_left_ = 0;
};

/// DCMTK's TCP connection with deadlines, plain or TLS (a Channel whose
/// handshake is done, on the socket made non-blocking; a TLS record begun
/// must arrive whole within the deadline): the bytes read before DCMTK took
/// the socket (the association request) come first, then the socket's. A
/// PDU whose first byte has come must be complete within the deadline, and
/// so must a DIMSE command (all its fragments, over any number of PDUs)
/// from its first fragment: otherwise the socket is shut down and the
/// association ends. A data set's PDUs each have the deadline, and between
/// them DCMTK's DIMSE timeout applies. Once this side has sent
/// A-ASSOCIATE-RJ, A-RELEASE-RP or A-ABORT, DCMTK waits for the peer to
/// close for kClosingGrace at most (not its timeout).
class DeadlineConnection : public DcmTCPConnection {
public:
    DeadlineConnection(DcmNativeSocketType fd, std::vector<std::uint8_t> request, std::string peer,
                       std::chrono::milliseconds limit, std::unique_ptr<Channel> tls)
        : DcmTCPConnection(fd), pending_(std::move(request)), peer_(std::move(peer)), limit_(limit),
          tls_(std::move(tls))
    {}

    /// DCMTK selects on the socket itself only for a transparent connection.
    OFBool isTransparentConnection() override { return tls_ ? OFFalse : OFTrue; }

    void close() override
    {
        // Once: a second close must not write to a descriptor number that
        // another connection may hold by then.
        if (tls_ && getSocket() != DCMNET_INVALID_SOCKET) tls_->close_notify();
        DcmTCPConnection::close();
    }

    ssize_t read(void* buf, size_t nbyte) override
    {
        auto* out = static_cast<std::uint8_t*>(buf);
        if (next_ < pending_.size()) {
            const std::size_t n = std::min(nbyte, pending_.size() - next_);
            std::memcpy(out, pending_.data() + next_, n);
            next_ += n;
            if (next_ == pending_.size()) std::vector<std::uint8_t>().swap(pending_), next_ = 0;
            account(out, n);
            return static_cast<ssize_t>(n);
        }
        bool late = expired_;
        if (!late && closing_ && !data_by(closing_deadline_)) {
            late = true;
            ::shutdown(getSocket(), SHUT_RDWR);
        } else if (!late) {
            const auto due = this->due();
            if (due && !data_by(*due)) {
                late = true;
                expire();
            }
        }
        if (late) {
            errno = ETIMEDOUT;
            return -1;
        }
        const ssize_t n = tls_ ? tls_read(out, nbyte) : DcmTCPConnection::read(buf, nbyte);
        if (n > 0) account(out, static_cast<std::size_t>(n));
        return n;
    }

    ssize_t write(void* buf, size_t nbyte) override
    {
        const ssize_t n = tls_ ? tls_write(static_cast<const std::uint8_t*>(buf), nbyte)
                               : DcmTCPConnection::write(buf, nbyte);
        if (n > 0) {
            out_.account(
                static_cast<const std::uint8_t*>(buf), static_cast<std::size_t>(n), [] {},
                [this](std::uint8_t type) {
                    if (type == 0x03 || type == 0x06 || type == 0x07) {
                        closing_ = true;
                        closing_deadline_ = Clock::now() + kClosingGrace;
                    }
                },
                [](std::uint8_t, const std::uint8_t*, std::size_t) {});
        }
        return n;
    }

    OFBool networkDataAvailable(int timeout) override
    {
        if (next_ < pending_.size() || expired_) return OFTrue;
        const auto asked = Clock::now() + std::chrono::seconds(std::max(0, timeout));
        if (closing_) return data_by(std::min(asked, closing_deadline_)) ? OFTrue : OFFalse;
        const auto due = this->due();
        if (!due) return tls_ ? (data_by(asked) ? OFTrue : OFFalse) : DcmTCPConnection::networkDataAvailable(timeout);
        if (data_by(std::min(*due, asked))) return OFTrue;
        if (Clock::now() < *due) return OFFalse;
        expire();
        return OFTrue;  // the read that follows fails
    }

private:
    /// Whether bytes can be read by `deadline`: decrypted ones buffered in
    /// the TLS layer at once, else the socket's.
    bool data_by(Clock::time_point deadline)
    {
        if (tls_ && tls_->pending() > 0) return true;
        return readable_by(getSocket(), deadline);
    }

    /// One TLS read: what is buffered, else waits for the socket (with no
    /// deadline between PDUs, as a plain read blocks); once bytes come, the
    /// record they begin must be whole within the limit.
    ssize_t tls_read(std::uint8_t* out, std::size_t size)
    {
        std::optional<Clock::time_point> record;
        for (;;) {
            const long n = tls_->read(out, size);
            if (n >= 0) return n;
            if (errno != EAGAIN) {
                const int err = errno;
                spdlog::debug("association from {}: {}", peer_, tls_->error_text(err));
                errno = err == EPROTO ? ECONNRESET : err;
                return -1;
            }
            if (!record) {
                if (!ready_by(*tls_, Clock::now() + std::chrono::hours(24))) continue;
                record = Clock::now() + limit_;
                continue;
            }
            if (!ready_by(*tls_, *record)) {
                spdlog::warn("association from {}: a TLS record not received whole within {} of its first byte "
                             "(--timeout): connection closed, its slot freed",
                             peer_, seconds_text(limit_));
                expired_ = true;
                ::shutdown(getSocket(), SHUT_RDWR);
                errno = ETIMEDOUT;
                return -1;
            }
        }
    }

    /// Writes all of `size` bytes through TLS within the limit (a peer that
    /// does not read loses its connection, as DCMTK's blocking send would
    /// wait for it: the same --timeout).
    ssize_t tls_write(const std::uint8_t* data, std::size_t size)
    {
        const auto deadline = Clock::now() + limit_;
        std::size_t sent = 0;
        while (sent < size) {
            const long n = tls_->write(data + sent, size - sent);
            if (n > 0) {
                sent += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno != EAGAIN) {
                const int err = errno;
                spdlog::debug("association from {}: {}", peer_, tls_->error_text(err));
                errno = err == EPROTO ? ECONNRESET : err;
                return -1;
            }
            if (!ready_by(*tls_, deadline)) {
                spdlog::warn("association from {}: {} bytes not taken within {} (--timeout): connection closed",
                             peer_, size - sent, seconds_text(limit_));
                ::shutdown(getSocket(), SHUT_RDWR);
                errno = ETIMEDOUT;
                return -1;
            }
        }
        return static_cast<ssize_t>(size);
    }

    /// When what is under way (a PDU, a command) must be complete; none between them.
    std::optional<Clock::time_point> due() const
    {
        std::optional<Clock::time_point> due;
        if (in_.in_pdu()) due = pdu_deadline_;
        if (command_open_) due = due ? std::min(*due, command_deadline_) : command_deadline_;
        return due;
    }

    void account(const std::uint8_t* p, std::size_t n)
    {
        in_.account(
            p, n, [this] { pdu_deadline_ = Clock::now() + limit_; },
            [this](std::uint8_t type) {
                if (type == 0x04) pdvs_.reset();
            },
            [this](std::uint8_t type, const std::uint8_t* body, std::size_t size) {
                if (type != 0x04) return;
                pdvs_.account(body, size, [this](std::uint8_t control) {
                    if (!(control & 0x01)) return;  // a data set's fragment
                    if (!command_open_) command_deadline_ = Clock::now() + limit_;
                    command_open_ = !(control & 0x02);  // open until its last fragment
                });
            });
    }

    void expire()
    {
        if (expired_) return;
        expired_ = true;
        if (in_.in_pdu() && (!command_open_ || pdu_deadline_ <= command_deadline_))
            spdlog::warn("association from {}: a PDU (type {:02X}) not received whole within {} of its first byte "
                         "(--timeout): connection closed, its slot freed",
                         peer_, in_.type(), seconds_text(limit_));
        else
            spdlog::warn("association from {}: a DIMSE command not received whole within {} of its first fragment "
                         "(--timeout): connection closed, its slot freed",
                         peer_, seconds_text(limit_));
        ::shutdown(getSocket(), SHUT_RDWR);
    }

    std::vector<std::uint8_t> pending_;
    std::size_t next_ = 0;
    const std::string peer_;
    const std::chrono::milliseconds limit_;
    PduStream in_, out_;
    PdvStream pdvs_;
    Clock::time_point pdu_deadline_{};
    bool command_open_ = false;
    Clock::time_point command_deadline_{};
    bool expired_ = false;
    bool closing_ = false;
    Clock::time_point closing_deadline_{};
    std::unique_ptr<Channel> tls_;  ///< null: plain TCP
};

class DeadlineLayer : public DcmTransportLayer {
public:
    explicit DeadlineLayer(std::chrono::milliseconds limit) : limit_(limit) {}

    DcmTransportConnection* createConnection(DcmNativeSocketType fd, OFBool) override
    {
        t_taken = true;
        std::vector<std::uint8_t> request;
        if (t_request) request.swap(*t_request);
        std::unique_ptr<Channel> tls;
        if (t_channel) tls = std::move(*t_channel);
        return new DeadlineConnection(fd, std::move(request), t_peer ? *t_peer : std::string("?"), limit_,
                                      std::move(tls));
    }

private:
    const std::chrono::milliseconds limit_;
};

/// The A-ASSOCIATE-RJ, then the peer's bytes read until it closes (a close
/// with unread bytes would reset the connection, the answer maybe lost).
/// On a TLS port the connection is closed at once: a rejection would cost
/// a handshake first.
void refuse(UniqueFd fd, const std::string& peer, const std::string& why, bool tls)
{
    static std::atomic<int> refusing{0};
    // A flood is logged by its first lines and a count (the accept thread alone calls this).
    static Clock::time_point window{};
    static unsigned logged = 0, unlogged = 0;
    const auto now = Clock::now();
    if (now - window >= kRefusalLogWindow) {
        if (unlogged > 0)
            spdlog::warn("{} more associations rejected in the last {} s, not logged one by one", unlogged,
                         std::chrono::duration_cast<std::chrono::seconds>(now - window).count());
        window = now;
        logged = unlogged = 0;
    }
    if (logged < kRefusalLogLines) {
        ++logged;
        if (tls)
            spdlog::warn("connection from {} closed before its TLS handshake (a limit is reached): {}", peer, why);
        else
            spdlog::warn("association from {} rejected (transient, local limit exceeded): {}", peer, why);
    } else {
        ++unlogged;
    }
    if (tls) return;  // closed
    if (refusing.fetch_add(1) >= kMaxRefusing) {
        refusing.fetch_sub(1);
        return;  // closed
    }
    auto drain = [fd = std::move(fd)] {
        ::send(fd.get(), kLimitExceeded, sizeof kLimitExceeded, MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(fd.get(), SHUT_WR);
        const auto deadline = Clock::now() + kRefusalDrain;
        std::uint8_t sink[4096];
        for (int reads = 0; reads < 256 && readable_by(fd.get(), deadline); ++reads) {
            const ssize_t n = ::recv(fd.get(), sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
        }
        refusing.fetch_sub(1);
    };
    try {
        std::thread(std::move(drain)).detach();
    } catch (const std::system_error&) {
        refusing.fetch_sub(1);  // the connection closed with the lambda
    }
}

/// PS3.8 9.3.4: rejected-permanent by the service user with `reason`.
void reject(T_ASC_Association* association, T_ASC_RejectParametersReason reason)
{
    T_ASC_RejectParameters rejection{ASC_RESULT_REJECTEDPERMANENT, ASC_SOURCE_SERVICEUSER, reason};
    const OFCondition sent = ASC_rejectAssociation(association, &rejection);
    if (sent.bad()) spdlog::debug("sending the A-ASSOCIATE-RJ failed: {}", sent.text());
}

std::string trimmed_ae(const char* ae)
{
    std::string s = ae;
    const auto first = s.find_first_not_of(' ');
    if (first == std::string::npos) return {};
    return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

/// An AE title for a log line: control characters escaped.
std::string printable_ae(const std::string& ae)
{
    std::string out;
    for (char c : ae) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7F) {
            out += c;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", u);
            out += buf;
        }
    }
    return out;
}

struct Gate {
    const GatewayOptions& options;
    const DicomSecurity& security;
    const std::function<void(T_ASC_Association*, const AssociationPeer&)> serve;
    T_ASC_Network* network = nullptr;
    Slots slots;
    /// DCMTK takes an accepted socket from one process-wide value
    /// (dcmExternalSocketHandle): set and taken under this lock, held only
    /// while DCMTK parses a request already read whole.
    std::mutex external_socket;

    /// One connection, on its own thread: its request read by the deadline,
    /// then the association served. Returns why the connection was closed
    /// before DCMTK took it, or "".
    std::string connection(UniqueFd fd, const std::string& peer)
    {
        const auto deadline = Clock::now() + options.timeout;
        // DICOM TLS: the handshake first, by the same deadline as the request.
        std::unique_ptr<Channel> tls;
        std::string subject;
        if (const TlsContext* context = security.tls()) {
            const int flags = ::fcntl(fd.get(), F_GETFL);
            if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
                return std::string("making the socket non-blocking: ") + std::strerror(errno);
            try {
                tls = std::make_unique<Channel>(fd.get(), *context);
            } catch (const std::exception& e) {
                return e.what();
            }
            for (;;) {
                const Channel::Handshake h = tls->handshake();
                if (h == Channel::Handshake::done) break;
                if (h == Channel::Handshake::failed) return "TLS handshake failed: " + tls->handshake_error();
                if (!ready_by(*tls, deadline))
                    return "no TLS handshake within " + seconds_text(options.timeout) +
                           " of the connection (--timeout)";
            }
            subject = tls->peer_subject();
            spdlog::debug("association from {}: TLS client certificate \"{}\"", peer, subject);
        }
        std::vector<std::uint8_t> request(6);
        std::string why = read_by(fd.get(), tls.get(), request.data(), 6, deadline);
        std::uint64_t length = 0;
        if (why.empty()) {
            length = std::uint64_t{request[2]} << 24 | std::uint64_t{request[3]} << 16 |
                     std::uint64_t{request[4]} << 8 | request[5];
            if (request[0] != 0x01)
                why = "the first PDU is of type " + std::to_string(request[0]) + ", not an A-ASSOCIATE-RQ (1)";
            else if (length > kMaxRequest)
                why = "its A-ASSOCIATE-RQ declares " + std::to_string(length) + " bytes, more than the " +
                      std::to_string(kMaxRequest) + " accepted";
        }
        if (why.empty()) {
            request.resize(6 + length);
            why = read_by(fd.get(), tls.get(), request.data() + 6, length, deadline);
            if (!why.empty()) why = "its A-ASSOCIATE-RQ (" + std::to_string(6 + length) + " bytes): " + why;
        } else if (why == "not received within the deadline") {
            why = "no A-ASSOCIATE-RQ within " + seconds_text(options.timeout) + " of the connection (--timeout)";
        }
        if (!why.empty()) return why;
        T_ASC_Association* association = nullptr;
        OFCondition received;
        {
            std::lock_guard<std::mutex> lock(external_socket);
            t_request = &request;
            t_peer = &peer;
            t_channel = &tls;
            t_taken = false;
            dcmExternalSocketHandle.set(fd.get());
            received = ASC_receiveAssociation(network, &association, static_cast<long>(options.max_pdu), nullptr,
                                              nullptr, OFFalse, DUL_BLOCK, 0);
            dcmExternalSocketHandle.set(DCMNET_INVALID_SOCKET);
            t_request = nullptr;
            t_peer = nullptr;
            t_channel = nullptr;
            if (t_taken) fd.release();  // the association's connection closes it
        }
        if (received.bad()) {
            spdlog::warn("association request from {} not understood: {}", peer, received.text());
            if (association) {
                ASC_dropAssociation(association);
                ASC_destroyAssociation(&association);
            }
            return {};
        }
        // Who it is and what it may do.
        const std::string calling = trimmed_ae(association->params->DULparams.callingAPTitle);
        const std::string called = trimmed_ae(association->params->DULparams.calledAPTitle);
        std::string refused;
        std::optional<Rights> rights;
        T_ASC_RejectParametersReason reason = ASC_REASON_SU_CALLINGAETITLENOTRECOGNIZED;
        if (security.checks_called_ae() && called != trimmed_ae(options.aetitle.c_str())) {
            refused = "called AE title \"" + printable_ae(called) + "\" is not this gateway's (--aetitle " +
                      options.aetitle + ")";
            reason = ASC_REASON_SU_CALLEDAETITLENOTRECOGNIZED;
        } else {
            rights = security.rights_of(calling, peer, subject, &refused);
        }
        if (!rights) {
            spdlog::warn("association from {}@{}{} rejected (permanent, {} AE title not recognized): {}",
                         printable_ae(calling), peer, subject.empty() ? "" : " (certificate \"" + subject + "\")",
                         reason == ASC_REASON_SU_CALLEDAETITLENOTRECOGNIZED ? "called" : "calling", printable_ae(refused));
            reject(association, reason);
            ASC_dropAssociation(association);
            ASC_destroyAssociation(&association);
            return {};
        }
        spdlog::debug("association from {}@{}: rights {}", printable_ae(calling), peer, rights->text());
        try {
            serve(association, AssociationPeer{peer, subject, *rights});
        } catch (const std::exception& e) {
            spdlog::error("association from {}: {}", peer, e.what());
        }
        return {};
    }
};

}  // namespace

std::string accept_associations(const GatewayOptions& options, const DicomSecurity& security,
                                const std::function<void(T_ASC_Association*, const AssociationPeer&)>& serve)
{
    const std::string where = "listening on port " + std::to_string(options.port) + " failed: ";
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!listener) return where + "socket: " + std::strerror(errno);
    const int one = 1;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(options.port));
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    if (!options.address.empty()) ::inet_pton(AF_INET, options.address.c_str(), &address.sin_addr);  // checked
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener.get(), SOMAXCONN) != 0)
        return where + std::strerror(errno);

    // Never freed: the connections' detached threads use it until the process ends.
    Gate& gate = *new Gate{options, security, serve, nullptr,
                           Slots(options.max_associations, options.max_associations_per_peer), {}};
    // DCMTK opens no listening socket of its own while an external socket
    // is set; each association's socket is set as it comes.
    dcmDisableGethostbyaddr.set(OFTrue);
    dcmExternalSocketHandle.set(listener.get());
    const auto acse = static_cast<int>(std::max<long long>(1, options.timeout.count() / 1000));
    OFCondition initialized = ASC_initializeNetwork(NET_ACCEPTOR, static_cast<int>(options.port), acse, &gate.network);
    dcmExternalSocketHandle.set(DCMNET_INVALID_SOCKET);
    if (initialized.good())
        initialized = ASC_setTransportLayer(gate.network, new DeadlineLayer(options.timeout), 1);
    if (initialized.bad()) return where + "DCMTK's network: " + initialized.text();

    unsigned exhausted = 0;
    DescriptorReserve reserve;
    for (;;) {
        sockaddr_in peer_address{};
        socklen_t length = sizeof peer_address;
        UniqueFd fd(::accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer_address), &length, SOCK_CLOEXEC));
        if (!fd) {
            const int err = errno;
            if (out_of_descriptors(err)) {
                // The pending peers would wait in the backlog until their own
                // timeout: close them (a modality sends again later), then
                // pause until an association ends.
                const int closed = reserve.shed_pending(listener.get(), kShedBurst);
                if (exhausted++ % 100 == 0)
                    spdlog::error("accepting an association: {}: {} pending connection(s) closed unanswered",
                                  std::strerror(err), closed);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                reserve.refill();
                continue;
            }
            if (err == EBADF || err == EINVAL || err == ENOTSOCK || err == EOPNOTSUPP || err == EFAULT)
                return where + "accept: " + std::strerror(err);
            continue;  // EINTR, ECONNABORTED, EPROTO and the network errors of one connection
        }
        exhausted = 0;
        char text[INET_ADDRSTRLEN] = "?";
        ::inet_ntop(AF_INET, &peer_address.sin_addr, text, sizeof text);
        std::string peer = text;
        const std::string refused = gate.slots.admit(peer);
        if (!refused.empty()) {
            refuse(std::move(fd), peer, refused, security.tls() != nullptr);
            continue;
        }
        try {
            std::thread([&gate, fd = std::move(fd), peer]() mutable {
                const std::string closed = gate.connection(std::move(fd), peer);
                gate.slots.release(peer);
                // Logged once the slot is free again.
                if (!closed.empty()) spdlog::warn("connection from {} closed: {}", peer, closed);
            }).detach();
        } catch (const std::system_error& e) {
            gate.slots.release(peer);
            spdlog::error("association from {}: no thread for it: {}", peer, e.what());  // closed with the lambda
        }
    }
}

}  // namespace blobstreaming::dicom
