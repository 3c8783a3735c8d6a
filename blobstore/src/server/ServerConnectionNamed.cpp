/// ServerConnection's named requests (docs/PROTOCOL.md, "Named requests"):
/// on a connection that presented a valid ticket, a push or pull may name
/// its Blob instead. The admission issues a ticket by the
/// control plane's own rules (NamedAdmission); the connection consumes it
/// at once and runs the transfer as for a presented ticket. The admission
/// runs off the reactor for a store whose reads may wait on another host
/// (Store::read_waits(): read-through, RADOS), in place otherwise.
#include "ServerConnection.h"

#include "NamedAdmission.h"
#include "ReservationTable.h"

#include <blobstreaming/blobstore/Store.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <memory>

namespace blobstreaming::server {

struct ServerConnection::NamedJob {
    protocol::NamedRequest request;
    std::string subject;
    std::string client;
    NamedAdmission::Issued issued;
    Errc code = Errc::ok;
    std::string message;

    void run(NamedAdmission& admission) noexcept
    {
        try {
            issued = admission.admit(subject, client, request);
        } catch (const Error& e) {
            code = e.code();
            message = e.what();
        } catch (const std::exception& e) {
            code = Errc::transfer_failed;
            message = std::string(request.type == protocol::FrameType::push ? "push " : "pull ") +
                      quote_name(request.name) + ": " + e.what();
        }
    }
};

int ServerConnection::on_named_request()
{
    if (!named_header_in_) {
        std::size_t name_size = 0;
        std::string why;
        if (protocol::decode_named(request_frame_.first<protocol::kRequestSize>(), named_, name_size, why)) {
            request_frame_.expect(protocol::kRequestSize);
            spdlog::warn("data connection {}: protocol error: {}", peer_, why);
            return act(refuse(Errc::protocol_error, why));
        }
        named_header_in_ = true;
        request_frame_.extend(name_size);
        return read_request();  // the name
    }
    named_header_in_ = false;
    named_.name.assign(reinterpret_cast<const char*>(request_frame_.data()) + protocol::kRequestSize,
                       request_frame_.size() - protocol::kRequestSize);
    request_frame_.expect(protocol::kRequestSize);
    const char* verb = named_.type == protocol::FrameType::push ? "push" : "pull";
    NamedAdmission* admission = server_->named.load();
    if (!admission) {
        // As a store that does not know them (it advertised nothing).
        const std::string why = "unknown request type " + std::to_string(named_.type == protocol::FrameType::push
                                                                              ? protocol::kNamedPush
                                                                              : protocol::kNamedPull) +
                                " (allowed: 1 push, 2 pull)";
        spdlog::warn("data connection {}: protocol error: {}", peer_, why);
        return act(refuse(Errc::protocol_error, why));
    }
    if (!authenticated_) {
        const std::string why = std::string("named ") + verb + " of " + quote_name(named_.name) +
                                ": this connection has not presented a valid ticket; a Blob can be named only on a "
                                "connection that has (ask the control plane for a ticket first)";
        if (server_->refused_log.allow()) spdlog::warn("data connection {}: refused: {}", peer_, why);
        return act(refuse(Errc::refused, why));
    }
    drop_transfer();
    auto job = std::make_shared<NamedJob>();
    job->request = named_;
    job->subject = subject_;
    job->client = subject_.empty() ? peer_ip_ : subject_;
    // Off the reactor only for a store that may wait on another host (as a
    // pull's open: PullTransfer); memory and local files answer in place.
    if (server_->commits && server_->store.read_waits() &&
        run_off_reactor({"the admission of a named request for", "start a named request for"},
                        [job, admission] { job->run(*admission); },
                        [this, job](bool connected) { return on_admitted(*job, connected); }))
        return 0;
    job->run(*admission);
    return act(on_admitted(*job, true));
}

Step ServerConnection::on_admitted(NamedJob& job, bool connected)
{
    const protocol::NamedRequest& named = job.request;
    if (job.code == Errc::ok && !connected) {
        // Closed meanwhile: nobody will present the ticket; nothing stays held.
        server_->tickets.withdraw(job.issued.ticket);
        if (named.type == protocol::FrameType::push) {
            try {
                server_->reservations.abort(job.issued.binding.reservation);
            } catch (const Error& e) {
                spdlog::debug("data connection {}: {}", peer_, e.what());
            }
        }
        return Step::close;
    }
    if (!connected) return Step::close;
    if (job.code != Errc::ok) {
        spdlog::warn("data connection {}: named {} refused: {}", peer_,
                     named.type == protocol::FrameType::push ? "push" : "pull", job.message);
        if (named.type == protocol::FrameType::push) return refuse(job.code, job.message);  // its bytes follow: drain
        // A pull has sent everything: the connection stays for the next transfer.
        server_->metrics.request_refused();
        protocol::Response response;
        response.status = job.code;
        response.message = job.message;
        return respond(protocol::encode(response), AfterResponse::next_request);
    }
    protocol::Request request;
    request.type = named.type;
    request.ticket = job.issued.ticket;
    request.offset = job.issued.binding.offset;
    request.length = job.issued.binding.length;
    TicketBinding binding;
    try {
        binding = server_->tickets.consume_named(request);
    } catch (const Error& e) {  // expired while it waited for the pool: as any refused ticket
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        return refuse(e.code(), e.what());
    }
    binding.named = true;
    const int rc = start_transfer(request, std::move(binding));
    return rc == -1 ? Step::close : Step::away;
}

}  // namespace blobstreaming::server
