/// ticket_probe: obtains a real transfer ticket through the control plane and
/// then misuses it on the data port, to check that blobstored refuses every
/// Request it must refuse (docs/PROTOCOL.md, "Tickets") and keeps serving.
///
///   ticket_probe --naming URL --store NAME --blob NAME --mode MODE
///
/// Modes: reuse, expire, wrong-direction, wrong-range, random, garbage,
/// bad-digest (a push of 1000 bytes to a new Blob named --blob whose checksum
/// trailer is wrong: the store must answer digest_mismatch and keep nothing),
/// named-first (a named pull of --blob as the first Request of a connection:
/// the store must refuse it), corrupt-frame (a compressed push of 300000
/// bytes to a new Blob named --blob whose second frame is not zstd:
/// protocol_error, nothing kept), and stale / stale-range (a whole-Blob / [1, 11) pull ticket, presented
/// only after a line arrives on stdin, so that the test can replace or remove
/// the Blob in between: the store must answer blob_changed).
/// Prints one JSON line: the mode, the status (Errc value) and message of the
/// daemon's Response to the misuse, and whether the daemon closed the
/// connection afterwards. Exit 0 when a Response (of any status) was read,
/// 1 on usage errors, 2 when the probe itself could not run.

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/WireCompression.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>

#include "ProbeTickets.h"
#include "ProtocolPeer.h"

#include <BlobStreaming.hh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace blobstreaming {
namespace {

constexpr int kIoTimeoutSeconds = 20;

struct Options {
    std::string naming;
    std::string store;
    std::string blob;
    std::string mode;
};

std::string json_string(const std::string& text)
{
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

BlobStreaming::TransferTicket_var pull_ticket(BlobStreaming::BlobTransporter_ptr transporter, const Options& options,
                                              std::uint64_t offset, std::uint64_t length)
{
    try {
        BlobStreaming::TimeValue no_timeout{0, 0};
        return transporter->send(options.blob.c_str(), length, offset, false, no_timeout,
                                 BlobStreaming::IGNORE_NOTIFICATIONS);
    } catch (...) {
        corba::rethrow_as_error("ticket for pull " + quote_name(options.blob), options.store, "");
    }
}

std::string response_fields(const protocol::Response& response)
{
    const int status = static_cast<int>(response.status);
    return "\"status\":" + std::to_string(status) +
           ",\"status_name\":" + json_string(error_category().message(status)) +
           ",\"message\":" + json_string(response.message) + ",\"length\":" + std::to_string(response.length) +
           ",\"blob_size\":" + std::to_string(response.blob_size);
}

/// A well-formed pull with a valid ticket: the bytes are read and hashed, so
/// that the first use of a ticket is known to have worked.
std::string first_use(test::ProtocolPeer& connection, const BlobStreaming::TransferTicket& ticket)
{
    ChecksumState hash(corba::algorithm_of(ticket.checksum).value_or(kDefaultChecksum));
    const protocol::Response response = connection.pull(ticket_of(ticket.id), ticket.offset, ticket.length, &hash);
    std::string out = "{" + response_fields(response);
    if (response.status == Errc::ok)
        out += ",\"checksum\":" + json_string(response.checksum ? response.checksum->text() : std::string()) +
               ",\"received_checksum\":" + json_string(hash.finish().text());
    return out + "}";
}

int run(const Options& options)
{
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", std::to_string(kIoTimeoutSeconds * 1000)}});
    CosNaming::NamingContext_var root = corba::naming_context(orb, options.naming);
    BlobStreaming::BlobStore_var store = corba::resolve_store(root, options.store, options.naming);
    BlobStreaming::BlobTransporter_var transporter;
    BlobStreaming::DataEndpoint_var endpoint;
    try {
        transporter = store->openTransporter();
        endpoint = store->dataAddress();
    } catch (...) {
        corba::rethrow_as_error("open a transporter", options.store, corba::endpoint_of(store));
    }

    std::string extra;
    protocol::Response refusal;
    protocol::TicketId presented{};
    const auto connect = [&] {
        return std::make_unique<test::ProtocolPeer>(
            test::ProtocolPeer::connect(endpoint->host.in(), endpoint->port, std::chrono::seconds(kIoTimeoutSeconds)));
    };
    std::unique_ptr<test::ProtocolPeer> connection;
    // A push ticket for `size` bytes of a new Blob named --blob.
    const auto push_ticket = [&](std::uint64_t size) {
        try {
            BlobStreaming::Reservation_var reservation = store->reserve(options.blob.c_str(), size, false);
            BlobStreaming::TimeValue no_timeout{0, 0};
            return BlobStreaming::TransferTicket_var(
                transporter->recv(reservation->id, size, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS));
        } catch (...) {
            corba::rethrow_as_error("reserve and ticket for push " + quote_name(options.blob), options.store,
                                    corba::endpoint_of(store));
        }
    };
    const std::string& mode = options.mode;
    if (mode == "reuse") {
        BlobStreaming::TransferTicket_var ticket = pull_ticket(transporter, options, 0, 0);
        {
            const auto first = connect();
            extra = ",\"first\":" + first_use(*first, ticket.in());
        }
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::pull, presented, ticket->offset, ticket->length);
    } else if (mode == "expire") {
        BlobStreaming::TransferTicket_var ticket = pull_ticket(transporter, options, 0, 0);
        const auto received = std::chrono::steady_clock::now();
        const auto lifetime =
            std::chrono::seconds(ticket->lifetime.seconds) + std::chrono::microseconds(ticket->lifetime.microseconds);
        // The daemon issued the ticket before the call returned and checks
        // expiry on the same CLOCK_MONOTONIC (steady_clock), so from
        // `received + lifetime` on it is expired: wait for exactly that point.
        std::this_thread::sleep_until(received + lifetime);
        extra = ",\"lifetime_seconds\":" + std::to_string(ticket->lifetime.seconds);
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::pull, presented, ticket->offset, ticket->length);
    } else if (mode == "wrong-direction") {
        BlobStreaming::TransferTicket_var ticket = pull_ticket(transporter, options, 0, 0);
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::push, presented, ticket->offset, ticket->length);
    } else if (mode == "wrong-range") {
        BlobStreaming::TransferTicket_var ticket = pull_ticket(transporter, options, 0, 10);
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::pull, presented, 0, 20);
    } else if (mode == "bad-digest") {
        constexpr std::uint64_t kSize = 1000;
        BlobStreaming::TransferTicket_var ticket = push_ticket(kSize);
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::push, presented, 0, kSize);
        std::vector<std::uint8_t> body(kSize);
        for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<std::uint8_t>(i * 7 + 1);
        Checksum wrong = ChecksumState::of(kDefaultChecksum, body.data(), body.size());
        wrong.value[0] = static_cast<std::uint8_t>(wrong.value[0] ^ 0xff);
        connection->send(body.data(), body.size());
        connection->send_trailer(wrong);
    } else if (mode == "corrupt-frame") {
        // Compression on the wire: a valid raw frame of 100000 bytes, then
        // a zstd frame whose bytes are not zstd. The store must answer
        // protocol_error and keep nothing.
        constexpr std::uint64_t kSize = 300000;
        constexpr std::uint32_t kFrame = 100000;
        BlobStreaming::TransferTicket_var ticket = push_ticket(kSize);
        connection = connect();
        presented = ticket_of(ticket->id);
        protocol::Request request{protocol::FrameType::push, presented, 0, kSize};
        request.compress = true;
        std::uint8_t frame[protocol::kRequestSize];
        protocol::encode(request, frame);
        connection->send(frame, sizeof frame);
        std::uint8_t header[wire::kFrameHeaderSize];
        wire::encode(wire::FrameHeader{wire::FrameKind::raw, kFrame, kFrame}, header);
        connection->send(header, sizeof header);
        const std::vector<std::uint8_t> raw(kFrame, 7);
        connection->send(raw.data(), raw.size());
        const std::vector<std::uint8_t> junk(64, 0x5a);
        wire::encode(wire::FrameHeader{wire::FrameKind::zstd, static_cast<std::uint32_t>(junk.size()), kFrame}, header);
        connection->send(header, sizeof header);
        connection->send(junk.data(), junk.size());
    } else if (mode == "stale" || mode == "stale-range") {
        // A ticket for the version committed now, presented after the test
        // replaced or removed the Blob: the probe says "issued" on stdout and
        // waits for a line on stdin before it connects.
        const bool range = mode == "stale-range";
        BlobStreaming::TransferTicket_var ticket = pull_ticket(transporter, options, range ? 1 : 0, range ? 10 : 0);
        std::cout << "{\"issued\":true,\"version_size\":" << ticket->version.size << "}" << std::endl;
        std::string go;
        std::getline(std::cin, go);
        connection = connect();
        presented = ticket_of(ticket->id);
        connection->send_request(protocol::FrameType::pull, presented, ticket->offset, ticket->length);
    } else if (mode == "named-first") {
        // A named request (docs/PROTOCOL.md, "Named requests") as the first
        // Request of a connection: it has presented no ticket, so the store
        // must refuse it and close.
        connection = connect();
        protocol::NamedRequest named;
        named.type = protocol::FrameType::pull;
        named.name = options.blob;
        const std::string frame = protocol::encode(named);
        connection->send(frame.data(), frame.size());
    } else if (mode == "random") {
        connection = connect();
        presented = protocol::random_ticket();
        connection->send_request(protocol::FrameType::pull, presented, 0, 0);
    } else if (mode == "garbage") {
        connection = connect();
        std::uint8_t junk[protocol::kRequestSize] = {};
        const char http[] = "GET / HTTP/1.1\r\nHost: blobstored\r\n\r\n";
        std::memcpy(junk, http, std::min(sizeof junk, sizeof http - 1));
        connection->send(junk, sizeof junk);
    } else {
        throw Error(
            Errc::invalid_argument,
            "unknown --mode \"" + mode +
                "\" (allowed: reuse, expire, wrong-direction, wrong-range, random, garbage, bad-digest, named-first, "
                "corrupt-frame, stale, stale-range)");
    }
    refusal = connection->receive_response();
    // A refused or garbled Request must close the connection; after other
    // outcomes the daemon may keep it for the next transfer.
    const bool must_close = refusal.status == Errc::refused || refusal.status == Errc::protocol_error;
    const std::string closed = must_close ? (connection->closed_by_peer() ? "true" : "false") : "null";
    std::cout << "{\"mode\":" << json_string(mode) << "," << response_fields(refusal)
              << ",\"connection_closed\":" << closed
              << ",\"ticket\":" << json_string(mode == "garbage" || mode == "named-first" ? std::string() : hex_of(presented)) << extra << "}"
              << std::endl;
    try {
        transporter->close();
    } catch (const CORBA::Exception&) {
        // The probe's result is already printed; a failing close changes nothing in it.
    }
    orb->destroy();
    return 0;
}

bool parse(int argc, char** argv, Options& options)
{
    std::map<std::string, std::string*> fields{{"--naming", &options.naming},
                                               {"--store", &options.store},
                                               {"--blob", &options.blob},
                                               {"--mode", &options.mode}};
    for (int i = 1; i < argc; ++i) {
        const auto field = fields.find(argv[i]);
        if (field == fields.end() || i + 1 >= argc) {
            std::cerr << "ticket_probe: unknown option or missing value: " << argv[i] << "\n";
            return false;
        }
        *field->second = argv[++i];
    }
    for (const auto& [flag, value] : fields) {
        if (value->empty()) {
            std::cerr << "ticket_probe: " << flag << " is required\n";
            return false;
        }
    }
    return true;
}

}  // namespace
}  // namespace blobstreaming

int main(int argc, char** argv)
{
    blobstreaming::Options options;
    if (!blobstreaming::parse(argc, argv, options)) {
        std::cerr << "usage: ticket_probe --naming URL --store NAME --blob NAME --mode "
                     "reuse|expire|wrong-direction|wrong-range|random|garbage|bad-digest|named-first|corrupt-frame|stale|stale-range\n";
        return 1;
    }
    try {
        return blobstreaming::run(options);
    } catch (const blobstreaming::Error& e) {
        std::cout << "{\"mode\":" << blobstreaming::json_string(options.mode)
                  << ",\"error\":" << blobstreaming::json_string(e.what()) << ",\"code\":" << static_cast<int>(e.code())
                  << "}" << std::endl;
        return 2;
    } catch (const std::exception& e) {
        std::cout << "{\"mode\":" << blobstreaming::json_string(options.mode)
                  << ",\"error\":" << blobstreaming::json_string(e.what()) << "}" << std::endl;
        return 2;
    }
}
