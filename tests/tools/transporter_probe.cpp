/// transporter_probe: drives BlobTransporter objects of a blobstored directly
/// on the control plane, the way a careless or hostile client could.
///
///   transporter_probe notices --naming URL --store NAME --blob NAME --count N
///                     --semantics send|queue [--observer IOR]
///   transporter_probe open    --naming URL --store NAME --count N
///   transporter_probe hold    --naming URL --store NAME
///   (each mode also: [--tls-cert FILE --tls-key FILE --tls-ca FILE])
///
/// notices: opens a transporter, registers --observer (a stringified object
/// reference, e.g. one nobody answers) with observe(), then pulls --blob N
/// times, one ticket per pull with the given NotificationSemantics, on one
/// data connection. Prints {"pulled": i, "seconds": s} after each pull and
/// then a summary {"done": true, "pulls", "seconds"}; with `queue` also the
/// notices poll() returned (waiting up to 20 s for all N) and how many a
/// second poll() returned (each notice is returned once):
/// {"notices": [{"ticket", "succeeded", "bytes", "reason"}...], "second_poll": n}.
///
/// open: calls openTransporter() N times and never closes what it got.
/// Prints {"opened", "refused", "first_refusal", "opened_before_refusal",
/// "other_errors", "first_other_error", "seconds"}.
///
/// hold: opens one transporter, prints {"opened": true}, then for every line
/// `poll` on stdin calls poll() on it and prints {"raised": "returned" or
/// "CORBA::<system exception>"}; exits at the end of stdin without closing.
///
/// Exit 0 when the mode ran, 1 on usage errors, 2 when the probe could not run.

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include "ProbeTickets.h"
#include "ProtocolPeer.h"

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace blobstreaming {
namespace {

constexpr int kIoTimeoutSeconds = 60;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
    std::string mode;
    std::map<std::string, std::string> flags;

    const std::string& need(const std::string& flag) const
    {
        auto it = flags.find(flag);
        if (it == flags.end()) throw Error(Errc::invalid_argument, mode + ": " + flag + " is required");
        return it->second;
    }
    unsigned long count() const { return std::stoul(need("--count")); }
};

BlobStreaming::BlobStore_ptr open_store(CORBA::ORB_ptr orb, const Options& options)
{
    CosNaming::NamingContext_var root = corba::naming_context(orb, options.need("--naming"));
    return corba::resolve_store(root, options.need("--store"), options.need("--naming"));
}

int notices(CORBA::ORB_ptr orb, const Options& options)
{
    const std::string& blob = options.need("--blob");
    const std::string& semantics_name = options.need("--semantics");
    BlobStreaming::NotificationSemantics semantics;
    if (semantics_name == "send") semantics = BlobStreaming::SEND_NOTIFICATIONS;
    else if (semantics_name == "queue") semantics = BlobStreaming::QUEUE_NOTIFICATIONS;
    else throw Error(Errc::invalid_argument, "--semantics: \"" + semantics_name + "\" is not send or queue");
    const unsigned long count = options.count();

    BlobStreaming::BlobStore_var store = open_store(orb, options);
    BlobStreaming::BlobTransporter_var transporter = store->openTransporter();
    BlobStreaming::DataEndpoint_var endpoint = store->dataAddress();
    if (auto it = options.flags.find("--observer"); it != options.flags.end()) {
        CORBA::Object_var object = orb->string_to_object(it->second.c_str());
        BlobStreaming::TransferObserver_var observer = BlobStreaming::TransferObserver::_unchecked_narrow(object);
        transporter->observe(observer);
    }

    auto data =
        test::ProtocolPeer::connect(endpoint->host.in(), endpoint->port, std::chrono::seconds(kIoTimeoutSeconds));
    const BlobStreaming::TimeValue no_timeout{0, 0};
    std::vector<std::string> issued;
    const auto t0 = Clock::now();
    for (unsigned long i = 1; i <= count; ++i) {
        BlobStreaming::TransferTicket_var ticket = transporter->send(blob.c_str(), 0, 0, false, no_timeout, semantics);
        issued.push_back(hex_of(ticket_of(ticket->id)));
        const protocol::Response response = data.pull(ticket_of(ticket->id), ticket->offset, ticket->length);
        if (response.status != Errc::ok)
            throw Error(response.status, "pull refused by the data port: " + response.message);
        std::cout << json{{"pulled", i}, {"seconds", seconds_since(t0)}}.dump() << std::endl;
    }
    json summary{{"done", true}, {"pulls", count}, {"seconds", seconds_since(t0)}, {"tickets", issued}};
    if (semantics == BlobStreaming::QUEUE_NOTIFICATIONS) {
        // A notice is queued when the daemon has ended the transfer, which
        // may come a moment after the last byte arrived here.
        json got = json::array();
        const auto deadline = Clock::now() + std::chrono::seconds(20);
        while (got.size() < count && Clock::now() < deadline) {
            BlobStreaming::TransferNoticeSeq_var seq = transporter->poll();
            for (CORBA::ULong k = 0; k < seq->length(); ++k)
                got.push_back(json{{"ticket", hex_of(ticket_of(seq[k].id))},
                                   {"succeeded", static_cast<bool>(seq[k].succeeded)},
                                   {"bytes", seq[k].bytes},
                                   {"reason", seq[k].reason.in()}});
            if (got.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        BlobStreaming::TransferNoticeSeq_var again = transporter->poll();
        summary["notices"] = got;
        summary["second_poll"] = again->length();
    }
    std::cout << summary.dump() << std::endl;
    transporter->close();
    return 0;
}

int open_many(CORBA::ORB_ptr orb, const Options& options)
{
    const unsigned long count = options.count();
    BlobStreaming::BlobStore_var store = open_store(orb, options);
    unsigned long opened = 0, refused = 0, other = 0, opened_before_refusal = 0;
    std::string first_refusal, first_other;
    const auto t0 = Clock::now();
    // References are released at once: the daemon's transporters stay open
    // (never closed), this process keeps nothing.
    for (unsigned long i = 0; i < count; ++i) {
        try {
            BlobStreaming::BlobTransporter_var t = store->openTransporter();
            ++opened;
        } catch (const BlobStreaming::LimitReached& e) {
            if (refused++ == 0) {
                first_refusal = e.message.in();
                opened_before_refusal = opened;
            }
        } catch (const CORBA::Exception& e) {
            if (other++ == 0) first_other = std::string("CORBA::") + e._name();
        }
    }
    std::cout << json{{"opened", opened},
                      {"refused", refused},
                      {"first_refusal", first_refusal},
                      {"opened_before_refusal", opened_before_refusal},
                      {"other_errors", other},
                      {"first_other_error", first_other},
                      {"seconds", seconds_since(t0)}}
                     .dump()
              << std::endl;
    return 0;
}

int hold(CORBA::ORB_ptr orb, const Options& options)
{
    BlobStreaming::BlobStore_var store = open_store(orb, options);
    BlobStreaming::BlobTransporter_var transporter = store->openTransporter();
    std::cout << json{{"opened", true}}.dump() << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
        if (line != "poll") {
            std::cout << json{{"error", "unknown command \"" + line + "\" (allowed: poll)"}}.dump() << std::endl;
            continue;
        }
        std::string raised = "returned";
        try {
            BlobStreaming::TransferNoticeSeq_var seq = transporter->poll();
        } catch (const CORBA::Exception& e) {
            raised = std::string("CORBA::") + e._name();
        }
        std::cout << json{{"raised", raised}}.dump() << std::endl;
    }
    return 0;
}

}  // namespace
}  // namespace blobstreaming

int main(int argc, char** argv)
{
    using blobstreaming::Error;
    blobstreaming::Options options;
    if (argc < 2 || (argc % 2) != 0) {
        std::cerr << "usage: transporter_probe notices|open|hold --naming URL --store NAME [--blob NAME] "
                     "[--count N] [--semantics send|queue] [--observer IOR] "
                     "[--tls-cert FILE --tls-key FILE --tls-ca FILE]\n";
        return 1;
    }
    options.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) options.flags[argv[i]] = argv[i + 1];
    CORBA::ORB_var orb;
    try {
        blobstreaming::TlsFiles tls;
        if (auto it = options.flags.find("--tls-cert"); it != options.flags.end()) tls.cert = it->second;
        if (auto it = options.flags.find("--tls-key"); it != options.flags.end()) tls.key = it->second;
        if (auto it = options.flags.find("--tls-ca"); it != options.flags.end()) tls.ca = it->second;
        if (tls.enabled()) blobstreaming::corba::configure_ssl(tls);
        orb = blobstreaming::corba::init_orb({{"clientCallTimeOutPeriod", "60000"}});
        int rc = 1;
        if (options.mode == "notices") rc = blobstreaming::notices(orb, options);
        else if (options.mode == "open") rc = blobstreaming::open_many(orb, options);
        else if (options.mode == "hold") rc = blobstreaming::hold(orb, options);
        else std::cerr << "transporter_probe: unknown mode \"" << options.mode << "\" (allowed: notices, open, hold)\n";
        orb->destroy();
        return rc;
    } catch (const Error& e) {
        std::cout << nlohmann::json{{"error", e.what()}, {"code", static_cast<int>(e.code())}}.dump() << std::endl;
        return e.code() == blobstreaming::Errc::invalid_argument ? 1 : 2;
    } catch (const CORBA::Exception& e) {
        std::cout << nlohmann::json{{"error", std::string("CORBA::") + e._name()}}.dump() << std::endl;
        return 2;
    } catch (const std::exception& e) {
        std::cout << nlohmann::json{{"error", e.what()}}.dump() << std::endl;
        return 2;
    }
}
