/// idl_probe: calls blobstored's CORBA interface directly with malformed
/// arguments — empty and hostile names, lengths and offsets near 2^64,
/// unknown reservation ids — the way a buggy or hostile client could, and
/// reports what each call raised.
///
///   idl_probe --naming URL --store NAME --blob EXISTING
///   idl_probe --naming URL --store NAME --leave-reservation SIZE
///
/// EXISTING must name a committed Blob of that store. Prints one JSON line
/// per case: {"case", "raised" (the IDL exception's name, "returned" when
/// the call returned, "CORBA::<system exception>" when the daemon failed),
/// "message"}. Exit 0 when every case ran, 1 on usage errors, 2 when the
/// probe itself could not run.
///
/// --leave-reservation: reserves SIZE bytes as "probe.left", obtains the
/// push ticket and exits without connecting to the data port, like a client
/// killed between the control plane and the data plane. Prints
/// {"reservation": ID, "size": SIZE}.

#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/transporter/corba/Orb.h>

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>

namespace blobstreaming {
namespace {

constexpr std::uint64_t kMax = ~std::uint64_t{0};
constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;

std::string json_string(const std::string& text)
{
    return nlohmann::json(text).dump();
}

/// Runs `call` and prints what it raised.
void probe(const std::string& name, const std::function<void()>& call)
{
    std::string raised = "returned";
    std::string message;
    try {
        call();
    } catch (const BlobStreaming::NoSuchBlob& e) {
        raised = "NoSuchBlob", message = e.message.in();
    } catch (const BlobStreaming::InvalidName& e) {
        raised = "InvalidName", message = e.message.in();
    } catch (const BlobStreaming::InvalidRange& e) {
        raised = "InvalidRange", message = e.message.in();
    } catch (const BlobStreaming::OutOfSpace& e) {
        raised = "OutOfSpace", message = e.message.in();
    } catch (const BlobStreaming::AlreadyExists& e) {
        raised = "AlreadyExists", message = e.message.in();
    } catch (const BlobStreaming::NoSuchReservation& e) {
        raised = "NoSuchReservation", message = e.message.in();
    } catch (const BlobStreaming::TransferFailed& e) {
        raised = "TransferFailed", message = e.message.in();
    } catch (const BlobStreaming::Timeout& e) {
        raised = "Timeout", message = e.message.in();
    } catch (const BlobStreaming::Corrupt& e) {
        raised = "Corrupt", message = e.message.in();
    } catch (const CORBA::SystemException& e) {
        raised = std::string("CORBA::") + e._name();
        message = "minor " + std::to_string(e.minor());
    } catch (const CORBA::Exception& e) {
        raised = std::string("CORBA::") + e._name();
    }
    std::cout << "{\"case\":" << json_string(name) << ",\"raised\":" << json_string(raised)
              << ",\"message\":" << json_string(message) << "}" << std::endl;
}

int leave_reservation(const std::string& naming, const std::string& store_name, std::uint64_t size)
{
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
    CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
    BlobStreaming::BlobStore_var store = corba::resolve_store(root, store_name, naming);
    BlobStreaming::BlobTransporter_var transporter = store->openTransporter();
    BlobStreaming::Reservation_var reservation = store->reserve("probe.left", size, false);
    const BlobStreaming::TimeValue no_timeout{0, 0};
    BlobStreaming::TransferTicket_var ticket =
        transporter->recv(reservation->id, size, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
    std::cout << "{\"reservation\":" << reservation->id << ",\"size\":" << size << "}" << std::endl;
    orb->destroy();
    return 0;
}

int run(const std::string& naming, const std::string& store_name, const std::string& blob)
{
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
    CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
    BlobStreaming::BlobStore_var store = corba::resolve_store(root, store_name, naming);
    BlobStreaming::BlobTransporter_var transporter = store->openTransporter();
    const BlobStreaming::TimeValue no_timeout{0, 0};
    const auto none = BlobStreaming::IGNORE_NOTIFICATIONS;
    const std::string long_name(100000, 'a');
    BlobStreaming::Sha256 zero_digest = {};

    probe("stat-empty", [&] { store->stat(""); });
    probe("stat-traversal", [&] { store->stat("../../etc/passwd"); });
    probe("contains-empty", [&] { store->contains(""); });
    probe("remove-empty", [&] { store->remove(""); });
    probe("remove-absolute", [&] { store->remove("/etc/passwd"); });
    probe("find-local-empty", [&] {
        BlobStreaming::LocalFile_var file;
        store->findLocalFile("", file.out());
    });
    probe("resumable-empty", [&] { store->resumable(""); });
    probe("resumable-none", [&] { store->resumable("probe.never"); });
    probe("verify-traversal", [&] { store->verify("../../etc/passwd"); });
    probe("verify-missing", [&] { store->verify("probe.missing"); });
    probe("reserve-empty-name", [&] { store->reserve("", 10, false); });
    probe("reserve-long-name", [&] { store->reserve(long_name.c_str(), 10, false); });
    probe("reserve-2^64-1", [&] { store->reserve("probe.huge", kMax, false); });
    probe("reserve-2^63", [&] { store->reserve("probe.huge", kHalf, false); });
    probe("send-empty-name", [&] { transporter->send("", 0, 0, false, no_timeout, none); });
    probe("send-missing", [&] { transporter->send("probe.missing", 0, 0, false, no_timeout, none); });
    probe("send-length-2^64-1", [&] { transporter->send(blob.c_str(), kMax, 1, false, no_timeout, none); });
    probe("send-offset-2^63", [&] { transporter->send(blob.c_str(), 1, kHalf + 5, false, no_timeout, none); });
    probe("send-offset-2^64-1", [&] { transporter->send(blob.c_str(), 0, kMax, false, no_timeout, none); });
    probe("send-timeout-2^64-1", [&] {
        const BlobStreaming::TimeValue forever{kMax, 4294967295u};
        BlobStreaming::TransferTicket_var t = transporter->send(blob.c_str(), 0, 0, true, forever, none);
        transporter->cancel(t->id);
    });
    probe("recv-unknown-reservation", [&] { transporter->recv(kMax, 10, 0, false, no_timeout, none); });
    probe("commit-unknown-reservation", [&] { store->commit(kMax, zero_digest); });
    probe("abort-unknown-reservation", [&] { store->abort(123456789); });
    probe("cancel-unknown-ticket", [&] {
        BlobStreaming::TicketId id = {};
        transporter->cancel(id);
    });

    // A real reservation misused: ranges past 2^63, commit before any byte.
    BlobStreaming::Reservation_var reservation = store->reserve("probe.reserved", 1000, true);
    const auto id = reservation->id;
    probe("recv-offset-2^63", [&] { transporter->recv(id, kMax, kHalf, false, no_timeout, none); });
    probe("recv-length-2^64-1", [&] { transporter->recv(id, kMax, 0, false, no_timeout, none); });
    probe("commit-incomplete", [&] { store->commit(id, zero_digest); });
    probe("abort-after-failed-commit", [&] { store->abort(id); });
    probe("stat-after-probe", [&] { store->stat("probe.reserved"); });
    transporter->close();
    orb->destroy();
    return 0;
}

}  // namespace
}  // namespace blobstreaming

int main(int argc, char** argv)
{
    std::string naming, store, blob, leave;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--naming") naming = argv[i + 1];
        else if (key == "--store") store = argv[i + 1];
        else if (key == "--blob") blob = argv[i + 1];
        else if (key == "--leave-reservation") leave = argv[i + 1];
    }
    if (naming.empty() || store.empty() || blob.empty() == leave.empty() || argc % 2 == 0) {
        std::cerr << "usage: idl_probe --naming URL --store NAME --blob EXISTING|--leave-reservation SIZE\n";
        return 1;
    }
    try {
        if (!leave.empty()) return blobstreaming::leave_reservation(naming, store, std::stoull(leave));
        return blobstreaming::run(naming, store, blob);
    } catch (const std::exception& e) {
        std::cout << "{\"error\":" << blobstreaming::json_string(e.what()) << "}" << std::endl;
        return 2;
    } catch (const CORBA::Exception& e) {
        std::cout << "{\"error\":" << blobstreaming::json_string(std::string("CORBA ") + e._name()) << "}"
                  << std::endl;
        return 2;
    }
}
