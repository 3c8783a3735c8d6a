// StoreService: the tickets of pulls, read grants, pushes and parts.

#include "StoreService.h"

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::service {
namespace {

std::string range_text(std::uint64_t offset, std::uint64_t length)
{
    const std::string end =
        length > ~std::uint64_t{0} - offset ? std::string("beyond 2^64") : std::to_string(offset + length);
    return "[" + std::to_string(offset) + ", " + end + ")";
}

/// A ticket's binding to `blob`, [offset, offset + length), in `direction`.
server::TicketBinding binding_for(protocol::FrameType direction, const std::string& blob, std::uint64_t offset,
                                  std::uint64_t length)
{
    server::TicketBinding binding;
    binding.direction = direction;
    binding.blob = blob;
    binding.offset = offset;
    binding.length = length;
    return binding;
}

}  // namespace

StoreService::Issued StoreService::issue(server::TicketBinding binding, TransferOptions options,
                                         const std::string& client)
{
    binding.inactivity_timeout = options.inactivity_timeout;
    binding.control = std::move(options.control);
    // The data connection must come from the same client (or, for a read
    // grant, from the store it names).
    binding.client = client;
    Issued out;
    out.id = tickets_.issue(binding);
    out.binding = std::move(binding);
    spdlog::debug("ticket {} issued: {} {} {}", protocol::ticket_tag(out.id),
                  out.binding.direction == protocol::FrameType::push ? "push" : "pull", quote_name(out.binding.blob),
                  range_text(out.binding.offset, out.binding.length));
    return out;
}

server::TicketBinding StoreService::pull_binding(const char* operation, const std::string& name, std::uint64_t offset,
                                                 std::uint64_t length) const
{
    if (auto problem = blob_name_problem(name))
        throw Error(Errc::invalid_name, std::string(operation) + " " + quote_name(name) + ": " + *problem);
    const BlobInfo info = held_version(name);
    std::uint64_t resolved = length;
    if (length == 0 && offset <= info.size) resolved = info.size - offset;
    if (resolved > ~std::uint64_t{0} - offset || offset + resolved > info.size) {
        // Same wording as the store's own range errors.
        throw Error(Errc::invalid_range, std::string(operation) + " " + quote_name(name) + ": range " +
                                             range_text(offset, length) + " is outside the blob of " +
                                             std::to_string(info.size) + " bytes");
    }
    server::TicketBinding binding = binding_for(protocol::FrameType::pull, name, offset, resolved);
    binding.version = info;
    binding.checksum = info.checksum.algorithm;
    return binding;
}

StoreService::Issued StoreService::send(const Caller& caller, const std::string& name, std::uint64_t offset,
                                        std::uint64_t length, TransferOptions options)
{
    require(caller, server::Permission::read, "send");
    return issue(pull_binding("send", name, offset, length), std::move(options), caller.subject);
}

StoreService::Issued StoreService::grant(const Caller& caller, const std::string& name, const std::string& reader,
                                         TransferOptions options)
{
    server::TicketBinding binding = pull_binding("grantRead", name, 0, 0);
    // Without TLS nobody has a subject: the ticket itself is the capability.
    if (!caller.subject.empty() && reader.empty())
        throw Error(Errc::invalid_argument, "grantRead " + quote_name(name) +
                                                ": no reader named (the certificate subject of the store that "
                                                "copies, its BlobStore::identity)");
    const std::string bound = caller.subject.empty() ? std::string() : reader;
    spdlog::info("read grant of {} ({} bytes) issued to client \"{}\" for store \"{}\"", quote_name(name),
                 binding.length, caller.subject, bound);
    return issue(std::move(binding), std::move(options), bound);
}

StoreService::Issued StoreService::grant_read(const Caller& caller, const std::string& name, const std::string& reader,
                                              TransferOptions options)
{
    require(caller, server::Permission::read, "grantRead");
    return grant(caller, name, reader, std::move(options));
}

std::vector<StoreService::GrantOutcome> StoreService::grant_reads(const Caller& caller,
                                                                  const std::vector<std::string>& names,
                                                                  const std::string& reader,
                                                                  const std::function<TransferOptions()>& options)
{
    require(caller, server::Permission::read, "grantReads");
    check_batch(names.size(), "grantReads", "names");
    std::vector<GrantOutcome> out(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        try {
            out[i].issued = grant(caller, names[i], reader, options());
        } catch (const Error& e) {
            out[i].code = e.code();
            out[i].message = e.what();
        } catch (const std::exception& e) {
            out[i].code = Errc::transfer_failed;
            out[i].message = "grantRead " + quote_name(names[i]) + ": internal error: " + e.what();
        }
    }
    return out;
}

StoreService::Issued StoreService::recv(const Caller& caller, std::uint64_t id, std::uint64_t offset,
                                        std::uint64_t length, TransferOptions options, std::string& name)
{
    require(caller, server::Permission::write, "recv");
    require_owner(caller, id, "recv into");
    const server::ReservationTable::Summary summary = reservations_.find(id);
    name = summary.name;
    // A push runs from what the reservation holds (0, or more when resumed)
    // to the end of the Blob.
    const std::uint64_t rest = summary.size - summary.received;
    const std::uint64_t resolved = (length == 0 && offset == 0) ? summary.size : length;
    if (offset != summary.received || resolved != rest)
        throw Error(Errc::invalid_range, "recv into reservation " + std::to_string(id) + " (" +
                                             quote_name(summary.name) + ", " + std::to_string(summary.size) +
                                             " bytes, " + std::to_string(summary.received) +
                                             " received): a push continues at offset " +
                                             std::to_string(summary.received) + " to the end of the Blob (length " +
                                             std::to_string(rest) + "), not " + range_text(offset, length));
    server::TicketBinding binding = binding_for(protocol::FrameType::push, summary.name, summary.received, rest);
    binding.reservation = id;
    binding.checksum = summary.checksum;
    reservations_.attach(id, options.control);
    return issue(std::move(binding), std::move(options), caller.subject);
}

StoreService::Pushed StoreService::push(const Caller& caller, const std::string& name, std::uint64_t size,
                                        bool overwrite, std::optional<ChecksumAlgorithm> checksum,
                                        TransferOptions options)
{
    // reserve + recv in one call: the checks of both, nothing of its own.
    require(caller, server::Permission::write, "push");
    const ChecksumAlgorithm algorithm = checksum.value_or(options_.default_checksum);
    return push_ticket(caller, name, open_reservation(caller, name, size, overwrite, algorithm), size, algorithm,
                       false, std::move(options));
}

StoreService::Pushed StoreService::push_stream(const Caller& caller, const std::string& name, std::uint64_t max_size,
                                               bool overwrite, std::optional<ChecksumAlgorithm> checksum,
                                               TransferOptions options)
{
    require(caller, server::Permission::write, "pushStream");
    const ChecksumAlgorithm algorithm = checksum.value_or(options_.default_checksum);
    const std::uint64_t max = max_size == 0 ? kMaxStream : std::min(max_size, kMaxStream);
    // The first step only: the store accounts what it holds as it grows.
    Opened reservation =
        open_reservation(caller, name, std::min(Reservation::kGrowStep, max), overwrite, algorithm, max);
    return push_ticket(caller, name, std::move(reservation), max, algorithm, true, std::move(options));
}

StoreService::Pushed StoreService::push_ticket(const Caller& caller, const std::string& name, Opened reservation,
                                               std::uint64_t length, ChecksumAlgorithm algorithm, bool streamed,
                                               TransferOptions options)
{
    Pushed out;
    out.reservation = std::move(reservation);
    const std::uint64_t id = out.reservation.id;
    try {
        server::TicketBinding binding = binding_for(protocol::FrameType::push, name, 0, length);
        binding.reservation = id;
        binding.checksum = algorithm;
        binding.streamed = streamed;
        reservations_.attach(id, options.control);
        out.ticket = issue(std::move(binding), std::move(options), caller.subject);
        return out;
    } catch (...) {
        // Nothing half-done stays behind: the client never learns this id.
        try {
            reservations_.abort(id);
        } catch (const std::exception& e) {
            spdlog::warn("push {}: cannot abort reservation {} after the ticket failed: {}", quote_name(name), id,
                         e.what());
        }
        throw;
    }
}

StoreService::Opened StoreService::reserve_parts(const Caller& caller, const std::string& name, std::uint64_t size,
                                                 bool overwrite, std::optional<ChecksumAlgorithm> checksum)
{
    require(caller, server::Permission::write, "reserveParts");
    const ChecksumAlgorithm algorithm = checksum.value_or(options_.default_checksum);
    if (algorithm != ChecksumAlgorithm::crc32c)
        throw Error(Errc::invalid_argument, "reserveParts " + quote_name(name) +
                                                ": a Blob filled in parts is checked with CRC32C, which "
                                                "combines from the parts; " +
                                                std::string(to_string(algorithm)) +
                                                " does not (push it over one stream)");
    return open_reservation(caller, name, size, overwrite, algorithm);
}

StoreService::Issued StoreService::recv_part(const Caller& caller, std::uint64_t id, std::uint64_t offset,
                                             std::uint64_t length, TransferOptions options, std::string& name)
{
    require(caller, server::Permission::write, "recvPart");
    require_owner(caller, id, "recvPart into");
    const auto start = reservations_.part_start(id, offset, length);
    name = start.name;
    const std::uint64_t end = offset + length;
    server::TicketBinding binding =
        binding_for(protocol::FrameType::push, start.name, start.offset, end - start.offset);
    binding.reservation = id;
    binding.part = true;
    binding.checksum = ChecksumAlgorithm::crc32c;
    return issue(std::move(binding), std::move(options), caller.subject);
}

server::TicketBinding StoreService::granted(const Caller& caller, const protocol::TicketId& grant,
                                            const char* operation) const
{
    const std::string tag = protocol::ticket_tag(grant);
    server::TicketBinding binding;
    try {
        binding = tickets_.inspect(grant);
    } catch (const Error& e) {
        throw Error(Errc::refused, std::string(operation) + ": " + e.what());
    }
    if (binding.direction != protocol::FrameType::pull || binding.offset != 0 || !binding.version ||
        binding.length != binding.version->size)
        throw Error(Errc::refused, std::string(operation) + ": ticket " + tag + " is not a read grant of a whole Blob");
    if (binding.client != caller.subject) {
        spdlog::warn("store \"{}\": {} refused: ticket {} was issued to \"{}\", not to \"{}\"", options_.store_name,
                     operation, tag, binding.client, caller.subject);
        throw Error(Errc::refused, std::string(operation) + ": ticket " + tag + " was issued to another client");
    }
    return binding;
}

}  // namespace blobstreaming::service
