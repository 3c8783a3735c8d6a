/// corba_call: makes one call of the control plane — any operation of a
/// store, of a transporter or of a locator — as one client (with the given
/// TLS certificate, or plaintext without one) and prints the outcome, so
/// that a test can check each operation against the access list.
///
///   corba_call --naming URL [--cert FILE --key FILE --ca FILE] [--store NAME]
///              [--transporter IOR] [--locator IOR] OP [ARG...]
///
/// OP and ARGs:
///   BlobStore (--store):  name | status | contains B | stat B | list | reserve B SIZE |
///                         commit ID [CHECKSUM] | abort ID | resumable B | verify B | remove B |
///                         findLocalFile B | shareImage B | dataAddress | openTransporter |
///                         unsubscribe ID | identity | findGrantedFile TICKET | awaitFetch B |
///                         fetchGrant B FROM PORT (a grant of store FROM for --store, its data
///                         port replaced by PORT, "-": kept, handed to --store's fetch)
///   BlobTransporter (--transporter IOR, else a new one of --store):
///                         send B | recv ID | poll | observe | cancel [TICKET] | close |
///                         pushParts B FILE PARTS | grantRead B READER
///   BlobLocator (--locator IOR, else BlobStreaming/Locator): locate B | stores | place SIZE [TIER...]
///   StudyEvents (BlobStreaming/Gateways/AE): studyUnsubscribe AE ID
///   the data port only: pull TICKET PORT OFFSET LENGTH
/// commit's CHECKSUM (crc32c:HEX or sha256:HEX) defaults to the CRC32C of 0
/// bytes; recv asks for the rest of the reservation; observe sets a nil
/// observer; cancel names TICKET (32 hex digits, as send prints it) or an
/// all-zero ticket.
///
/// pushParts: what `blob push --streams PARTS` does, without its commit:
/// reserveParts B (the size of FILE, CRC32C), then for each of PARTS
/// contiguous parts recvPart and one data connection (TLS with the client's
/// certificate when given) that sends the part and waits for the store's
/// acknowledgement. Prints {"id", "size", "parts", "checksum"} (the CRC32C
/// of the whole file, for commit); the reservation stays open.
///
/// pull: presents a pull TICKET (as send printed it) on the data port PORT
/// of 127.0.0.1 (TLS as above) and receives the range. Prints {"bytes",
/// "checksum"} (CRC32C of what came), or the store's refusal.
///
/// Like a TLS client should, it refuses a store, transporter or locator
/// reference that does not require TLS, and references a locator returns,
/// before calling them (Errc::refused).
///
/// Prints one JSON line, {"op", "ok": true, "result"} with exit 0, or
/// {"op", "ok": false, "code", "message"} with the Errc as exit code (as
/// `blob` does: 53 permission denied, 25 no such reservation, ...). Usage
/// errors exit 1.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace blobstreaming {
namespace {

using nlohmann::json;

constexpr const char* kEmptyCrc32c = "crc32c:00000000";

/// The client's certificate (empty: plaintext), for pushParts' data connections.
TlsFiles g_tls;

std::string hex(const CORBA::Octet* bytes, std::size_t n)
{
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += kHex[bytes[i] >> 4];
        out += kHex[bytes[i] & 0xf];
    }
    return out;
}

json info_json(const BlobStreaming::BlobInfo& info)
{
    return {{"name", info.name.in()},
            {"size", info.size},
            {"checksum", corba::checksum_of(info.checksum, "the store's answer").text()}};
}

protocol::TicketId ticket_from_hex(const std::string& text);

json ticket_json(const BlobStreaming::TransferTicket& t)
{
    return {{"ticket", hex(t.id, 16)},
            {"host", t.endpoint.host.in()},
            {"port", t.endpoint.port},
            {"offset", t.offset},
            {"length", t.length}};
}

json reservation_json(const BlobStreaming::Reservation& r)
{
    return {{"id", r.id}, {"name", r.name.in()}, {"size", r.size}, {"received", r.received}};
}

struct Call {
    std::string naming, store, transporter_ior, locator_ior, op;
    std::vector<std::string> args;
};

/// Errc::refused unless `ref` requires TLS (only when this process uses TLS).
void refuse_plaintext(CORBA::Object_ptr ref, const std::string& what, const std::string& whose)
{
    if (!corba::ssl_configured() || corba::requires_tls(ref)) return;
    throw Error(Errc::refused, what + ": " + whose + " at " + corba::endpoint_of(ref) +
                                   " does not require TLS; this client uses TLS and refuses it (an impostor or a "
                                   "misconfigured store)");
}

const std::string& arg(const Call& call, std::size_t i)
{
    if (call.args.size() <= i) throw std::invalid_argument(call.op + ": missing argument " + std::to_string(i + 1));
    return call.args[i];
}

json store_call(BlobStreaming::BlobStore_ptr s, const Call& call)
{
    const std::string& op = call.op;
    if (op == "name") return CORBA::String_var(s->name()).in();
    if (op == "status") {
        BlobStreaming::StoreStatus_var st = s->status();
        return {{"name", st->name.in()}, {"blobs", st->blobCount}, {"used", st->used}, {"reserved", st->reserved}};
    }
    if (op == "contains") return static_cast<bool>(s->contains(arg(call, 0).c_str()));
    if (op == "stat") return info_json(BlobStreaming::BlobInfo_var(s->stat(arg(call, 0).c_str())).in());
    if (op == "verify") return info_json(BlobStreaming::BlobInfo_var(s->verify(arg(call, 0).c_str())).in());
    if (op == "list") {
        BlobStreaming::BlobInfoSeq_var seq = s->list();
        json out = json::array();
        for (CORBA::ULong i = 0; i < seq->length(); ++i) out.push_back(seq[i].name.in());
        return out;
    }
    if (op == "reserve") {
        BlobStreaming::Reservation_var r = s->reserve(arg(call, 0).c_str(), std::stoull(arg(call, 1)), false);
        return reservation_json(r.in());
    }
    if (op == "commit") {
        const std::string text = call.args.size() > 1 ? call.args[1] : kEmptyCrc32c;
        const auto checksum = Checksum::parse(text);
        if (!checksum) throw std::invalid_argument("commit: CHECKSUM is crc32c:HEX or sha256:HEX");
        BlobStreaming::BlobChecksum expected;
        corba::to_idl(*checksum, expected);
        return info_json(BlobStreaming::BlobInfo_var(s->commit(std::stoull(arg(call, 0)), expected)).in());
    }
    if (op == "abort") {
        s->abort(std::stoull(arg(call, 0)));
        return nullptr;
    }
    if (op == "resumable")
        return reservation_json(BlobStreaming::Reservation_var(s->resumable(arg(call, 0).c_str())).in());
    if (op == "remove") {
        s->remove(arg(call, 0).c_str());
        return nullptr;
    }
    if (op == "findLocalFile") {
        BlobStreaming::LocalFile_var file;
        return {{"found", static_cast<bool>(s->findLocalFile(arg(call, 0).c_str(), file.out()))}};
    }
    if (op == "identity") return CORBA::String_var(s->identity()).in();
    if (op == "awaitFetch") return info_json(BlobStreaming::BlobInfo_var(s->awaitFetch(arg(call, 0).c_str())).in());
    if (op == "findGrantedFile") {
        BlobStreaming::TicketId id = {};
        const protocol::TicketId ticket = ticket_from_hex(arg(call, 0));
        std::copy(ticket.begin(), ticket.end(), id);
        BlobStreaming::LocalFile_var file;
        return {{"found", static_cast<bool>(s->findGrantedFile(id, file.out()))}};
    }
    if (op == "shareImage") {
        BlobStreaming::SharedImage_var image;
        return {{"shared", static_cast<bool>(s->shareImage(arg(call, 0).c_str(), image.out()))}};
    }
    if (op == "unsubscribe") {
        s->unsubscribe(std::stoull(arg(call, 0)));
        return nullptr;
    }
    if (op == "dataAddress") {
        BlobStreaming::DataEndpoint_var d = s->dataAddress();
        return {{"host", d->host.in()}, {"port", d->port}};
    }
    throw std::invalid_argument("unknown operation " + op);
}

/// One data connection (TLS with the client's certificate when given),
/// blocking, with 30 s timeouts. Throws Error.
class DataConnection {
public:
    DataConnection(const std::string& host, std::uint16_t port, std::string what) : what_(std::move(what))
    {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) throw Error(Errc::io_error, what_ + ": socket: " + std::strerror(errno));
        const timeval timeout{30, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
            ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
            throw Error(Errc::unreachable, what_ + ": cannot connect to " + host + ":" + std::to_string(port));
        if (g_tls.enabled()) {
            context_ = std::make_unique<TlsContext>(TlsContext::Role::client, g_tls);
            channel_ = std::make_unique<Channel>(fd_, *context_, host);
        } else {
            channel_ = std::make_unique<Channel>(fd_);
        }
        for (int i = 0; i < 100 && !channel_->handshake_done(); ++i)
            if (channel_->handshake() == Channel::Handshake::failed)
                throw Error(Errc::refused, what_ + ": TLS handshake: " + channel_->handshake_error());
        if (!channel_->handshake_done()) throw Error(Errc::timeout, what_ + ": the TLS handshake did not end");
    }
    ~DataConnection()
    {
        if (channel_) channel_->close_notify();
        channel_.reset();
        ::close(fd_);
    }
    DataConnection(const DataConnection&) = delete;
    DataConnection& operator=(const DataConnection&) = delete;

    void write_all(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const std::uint8_t*>(data);
        while (size > 0) {
            const long n = channel_->write(p, size);
            if (n <= 0) throw Error(Errc::transfer_failed, what_ + ": send: " + channel_->error_text(errno));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }
    void read_all(void* data, std::size_t size)
    {
        auto* p = static_cast<std::uint8_t*>(data);
        while (size > 0) {
            const long n = channel_->read(p, size);
            if (n <= 0) throw Error(Errc::transfer_failed, what_ + ": receive: " + channel_->error_text(errno));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }
    void request(protocol::FrameType type, const protocol::TicketId& ticket, std::uint64_t offset,
                 std::uint64_t length)
    {
        protocol::Request r;
        r.type = type;
        r.ticket = ticket;
        r.offset = offset;
        r.length = length;
        std::uint8_t head[protocol::kRequestSize];
        protocol::encode(r, head);
        write_all(head, sizeof head);
    }
    /// The store's Response; Error(its status, its message) unless ok.
    protocol::Response response()
    {
        std::uint8_t frame[protocol::kResponseHeaderSize];
        read_all(frame, sizeof frame);
        protocol::Response r;
        std::size_t message_size = 0;
        std::string why;
        if (protocol::decode(frame, r, message_size, why))
            throw Error(Errc::protocol_error, what_ + ": the store's response: " + why);
        std::string message(message_size, '\0');
        if (message_size > 0) read_all(message.data(), message_size);
        if (r.status != Errc::ok) throw Error(r.status, what_ + ": " + message);
        return r;
    }

private:
    const std::string what_;
    int fd_ = -1;
    std::unique_ptr<TlsContext> context_;
    std::unique_ptr<Channel> channel_;
};

/// Sends one part on a data connection of its own and waits for the
/// store's acknowledgement. Throws Error with the store's answer.
void send_part(const BlobStreaming::TransferTicket& ticket, const std::string& bytes)
{
    DataConnection c(ticket.endpoint.host.in(), ticket.endpoint.port,
                     "part [" + std::to_string(ticket.offset) + ", +" + std::to_string(ticket.length) + ")");
    protocol::TicketId id{};
    std::memcpy(id.data(), ticket.id, id.size());
    c.request(protocol::FrameType::push, id, ticket.offset, ticket.length);
    c.write_all(bytes.data() + ticket.offset, ticket.length);
    const protocol::Trailer trailer{Checksum::crc32c(crc32c(bytes.data() + ticket.offset, ticket.length))};
    std::uint8_t tail[protocol::kTrailerSize];
    protocol::encode(trailer, tail);
    c.write_all(tail, sizeof tail);
    c.response();
}

/// A ticket id from its 32 hex digits.
protocol::TicketId ticket_from_hex(const std::string& text)
{
    if (text.size() != 32 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw std::invalid_argument("TICKET is 32 lower-case hex digits, not \"" + text + "\"");
    protocol::TicketId id{};
    for (std::size_t i = 0; i < id.size(); ++i)
        id[i] = static_cast<std::uint8_t>(std::stoul(text.substr(2 * i, 2), nullptr, 16));
    return id;
}

/// pull TICKET PORT OFFSET LENGTH: presents a pull ticket on the data port
/// of 127.0.0.1 and receives its bytes.
json pull_with_ticket(const Call& call)
{
    const protocol::TicketId id = ticket_from_hex(arg(call, 0));
    const auto port = static_cast<std::uint16_t>(std::stoul(arg(call, 1)));
    const std::uint64_t offset = std::stoull(arg(call, 2));
    const std::uint64_t length = std::stoull(arg(call, 3));
    DataConnection c("127.0.0.1", port, "pull with ticket " + arg(call, 0).substr(0, 8));
    c.request(protocol::FrameType::pull, id, offset, length);
    const protocol::Response r = c.response();
    std::string bytes(r.length, '\0');
    c.read_all(bytes.data(), bytes.size());
    return {{"bytes", bytes.size()}, {"checksum", Checksum::crc32c(crc32c(bytes.data(), bytes.size())).text()}};
}

json push_parts(BlobStreaming::BlobTransporter_ptr t, const Call& call)
{
    std::ifstream in(arg(call, 1), std::ios::binary | std::ios::ate);
    if (!in) throw std::invalid_argument("pushParts: cannot read " + arg(call, 1));
    std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
        throw std::invalid_argument("pushParts: cannot read " + arg(call, 1));
    const std::uint64_t parts = std::stoull(arg(call, 2));
    if (parts == 0 || parts > bytes.size()) throw std::invalid_argument("pushParts: PARTS is 1 to the file's size");
    BlobStreaming::Reservation_var r =
        t->reserveParts(arg(call, 0).c_str(), bytes.size(), false, BlobStreaming::CHECKSUM_CRC32C);
    const BlobStreaming::TimeValue timeout{30, 0};
    const std::uint64_t each = bytes.size() / parts;
    for (std::uint64_t i = 0; i < parts; ++i) {
        const std::uint64_t offset = i * each;
        const std::uint64_t length = i + 1 == parts ? bytes.size() - offset : each;
        BlobStreaming::TransferTicket_var ticket = t->recvPart(r->id, length, offset, true, timeout);
        send_part(ticket.in(), bytes);
    }
    t->close();
    return {{"id", r->id},
            {"size", bytes.size()},
            {"parts", parts},
            {"checksum", Checksum::crc32c(crc32c(bytes.data(), bytes.size())).text()}};
}

json transporter_call(BlobStreaming::BlobTransporter_ptr t, const Call& call)
{
    const std::string& op = call.op;
    const BlobStreaming::TimeValue no_timeout{0, 0};
    const auto none = BlobStreaming::IGNORE_NOTIFICATIONS;
    if (op == "send")
        return ticket_json(
            BlobStreaming::TransferTicket_var(t->send(arg(call, 0).c_str(), 0, 0, false, no_timeout, none)).in());
    if (op == "grantRead")
        return ticket_json(
            BlobStreaming::TransferTicket_var(t->grantRead(arg(call, 0).c_str(), arg(call, 1).c_str())).in());
    if (op == "recv")
        return ticket_json(
            BlobStreaming::TransferTicket_var(t->recv(std::stoull(arg(call, 0)), 0, 0, false, no_timeout, none)).in());
    if (op == "poll") return {{"notices", BlobStreaming::TransferNoticeSeq_var(t->poll())->length()}};
    if (op == "observe") {
        t->observe(BlobStreaming::TransferObserver::_nil());
        return nullptr;
    }
    if (op == "cancel") {
        BlobStreaming::TicketId id = {};
        if (!call.args.empty()) {
            const protocol::TicketId ticket = ticket_from_hex(call.args[0]);
            std::copy(ticket.begin(), ticket.end(), id);
        }
        t->cancel(id);
        return nullptr;
    }
    if (op == "close") {
        t->close();
        return nullptr;
    }
    if (op == "pushParts") return push_parts(t, call);
    throw std::invalid_argument("unknown operation " + op);
}

json locator_call(BlobStreaming::BlobLocator_ptr l, const Call& call, const std::string& what)
{
    if (call.op == "stores") {
        BlobStreaming::NameSeq_var names = l->stores();
        json out = json::array();
        for (CORBA::ULong i = 0; i < names->length(); ++i) out.push_back(names[i].in());
        return out;
    }
    if (call.op == "place") {
        BlobStreaming::StoreTierSeq tiers;
        for (std::size_t i = 1; i < call.args.size(); ++i) {
            tiers.length(tiers.length() + 1);
            tiers[tiers.length() - 1] = static_cast<BlobStreaming::StoreTier>(std::stoi(call.args[i]));
        }
        BlobStreaming::Placement_var p = l->place(std::stoull(arg(call, 0)), tiers);
        return {{"store", p->store.in()}, {"tier", static_cast<int>(p->tier)}, {"byDefault", bool(p->byDefault)}};
    }
    BlobStreaming::LocationSeq_var found = l->locate(arg(call, 0).c_str());
    json out = json::array();
    for (CORBA::ULong i = 0; i < found->length(); ++i) {
        refuse_plaintext(found[i].ref.in(), what,
                         "the reference the locator returned for store \"" + std::string(found[i].store.in()) + "\"");
        out.push_back({{"store", found[i].store.in()},
                       {"tier", static_cast<int>(found[i].tier)},
                       {"endpoint", corba::endpoint_of(found[i].ref.in())}});
    }
    return out;
}

void print(const json& line) { std::cout << line.dump() << std::endl; }

int run(const Call& call)
{
    static const std::vector<std::string> kTransporterOps = {"send", "recv", "poll", "observe", "cancel", "close",
                                                                   "pushParts", "grantRead"};
    const bool on_transporter =
        std::find(kTransporterOps.begin(), kTransporterOps.end(), call.op) != kTransporterOps.end();
    const bool on_locator = call.op == "locate" || call.op == "stores" || call.op == "place";
    const std::string what = call.op + (call.args.empty() ? "" : " \"" + call.args[0] + "\"");
    std::string label = on_locator ? "locator" : call.store;
    std::string endpoint = "an unknown endpoint";

    if (call.op == "pull") {  // the data plane only
        try {
            print({{"op", call.op}, {"ok", true}, {"result", pull_with_ticket(call)}});
            return 0;
        } catch (const Error& e) {
            print({{"op", call.op}, {"ok", false}, {"code", static_cast<int>(e.code())}, {"message", e.what()}});
            return static_cast<int>(e.code());
        }
    }
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
    json result;
    try {
        CosNaming::NamingContext_var root = corba::naming_context(orb, call.naming);
        auto store = [&] {
            BlobStreaming::BlobStore_var ref = corba::resolve_store(root, call.store, call.naming);
            endpoint = corba::endpoint_of(ref);
            refuse_plaintext(ref, what + ": store \"" + call.store + "\"", "its reference");
            return ref;
        };
        if (call.op == "fetchGrant") {
            // A copy as a client makes it, with the grant's data port
            // replaced by PORT ("-": kept): a forged grant.
            BlobStreaming::BlobStore_var dest = store();
            BlobStreaming::BlobStore_var source = corba::resolve_store(root, arg(call, 1), call.naming);
            BlobStreaming::BlobTransporter_var t = source->openTransporter();
            CORBA::String_var reader = dest->identity();
            BlobStreaming::ReadGrant grant;
            grant.source = BlobStreaming::BlobStore::_duplicate(source.in());
            grant.ticket = BlobStreaming::TransferTicket_var(t->grantRead(arg(call, 0).c_str(), reader.in())).in();
            if (arg(call, 2) != "-") grant.ticket.endpoint.port = static_cast<CORBA::UShort>(std::stoul(arg(call, 2)));
            result = info_json(BlobStreaming::BlobInfo_var(dest->fetch(grant, true)).in());
        } else if (call.op == "studyUnsubscribe") {
            CORBA::Object_var obj = root->resolve(corba::gateway_path(arg(call, 0)));
            endpoint = corba::endpoint_of(obj);
            label = "gateway " + arg(call, 0);
            BlobStreaming::StudyEvents_var events = BlobStreaming::StudyEvents::_narrow(obj);
            events->unsubscribe(std::stoull(arg(call, 1)));
            result = nullptr;
        } else if (on_locator) {
            CORBA::Object_var obj = call.locator_ior.empty() ? root->resolve(corba::locator_path())
                                                             : orb->string_to_object(call.locator_ior.c_str());
            endpoint = corba::endpoint_of(obj);
            refuse_plaintext(obj, what + ": locator", "its reference");
            BlobStreaming::BlobLocator_var locator = BlobStreaming::BlobLocator::_unchecked_narrow(obj);
            result = locator_call(locator, call, what);
        } else if (on_transporter || call.op == "openTransporter") {
            BlobStreaming::BlobTransporter_var t;
            if (!call.transporter_ior.empty() && call.op != "openTransporter") {
                CORBA::Object_var obj = orb->string_to_object(call.transporter_ior.c_str());
                t = BlobStreaming::BlobTransporter::_unchecked_narrow(obj);
                endpoint = corba::endpoint_of(t);
            } else {
                BlobStreaming::BlobStore_var s = store();
                t = s->openTransporter();
            }
            refuse_plaintext(t, what + ": store \"" + call.store + "\"", "the transporter reference");
            if (call.op == "openTransporter") {
                CORBA::String_var ior = orb->object_to_string(t);
                result = {{"ior", ior.in()}, {"endpoint", corba::endpoint_of(t)}};
            } else {
                result = transporter_call(t, call);
            }
        } else {
            BlobStreaming::BlobStore_var s = store();
            result = store_call(s, call);
        }
    } catch (const std::invalid_argument& e) {
        orb->destroy();
        std::cerr << "corba_call: " << e.what() << std::endl;
        return 1;
    } catch (...) {
        int code = 2;
        try {
            corba::rethrow_as_error(what, label, endpoint);
        } catch (const Error& e) {
            code = static_cast<int>(e.code());
            print({{"op", call.op}, {"ok", false}, {"code", code}, {"message", e.what()}});
        }
        orb->destroy();
        return code;
    }
    print({{"op", call.op}, {"ok", true}, {"result", result}});
    orb->destroy();
    return 0;
}

}  // namespace
}  // namespace blobstreaming

int main(int argc, char** argv)
{
    using namespace blobstreaming;
    Call call;
    std::string cert, key, ca;
    const std::map<std::string, std::string*> options = {{"--naming", &call.naming},
                                                         {"--cert", &cert},
                                                         {"--key", &key},
                                                         {"--ca", &ca},
                                                         {"--store", &call.store},
                                                         {"--transporter", &call.transporter_ior},
                                                         {"--locator", &call.locator_ior}};
    int i = 1;
    for (; i < argc; ++i) {
        auto it = options.find(argv[i]);
        if (it == options.end()) break;
        if (i + 1 >= argc) {
            std::cerr << "corba_call: " << argv[i] << " needs a value" << std::endl;
            return 1;
        }
        *it->second = argv[++i];
    }
    if (i >= argc || call.naming.empty()) {
        std::cerr << "usage: corba_call --naming URL [--cert FILE --key FILE --ca FILE] [--store NAME] "
                     "[--transporter IOR] [--locator IOR] OP [ARG...]"
                  << std::endl;
        return 1;
    }
    call.op = argv[i++];
    for (; i < argc; ++i) call.args.emplace_back(argv[i]);
    try {
        const TlsFiles tls{cert, key, ca};
        tls.check("--tls-");
        if (tls.enabled()) corba::configure_ssl(tls);
        g_tls = tls;
        return run(call);
    } catch (const std::exception& e) {
        std::cerr << "corba_call: " << e.what() << std::endl;
        return 2;
    }
}
