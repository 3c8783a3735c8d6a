/// idl_probe: calls blobstored's CORBA interface directly with malformed
/// arguments — empty and hostile names, lengths and offsets near 2^64,
/// unknown reservation ids — the way a buggy or hostile client could, and
/// reports what each call raised.
///
///   idl_probe --naming URL --store NAME --blob EXISTING
///   idl_probe --naming URL --store NAME --leave-reservation SIZE
///   idl_probe --naming URL --store NAME --flood N [--size S] [--prefix P]
///   idl_probe --naming URL --store NAME --each-op EXISTING
///   [--tls-cert FILE --tls-key FILE --tls-ca FILE]
///
/// EXISTING must name a committed Blob of that store. Prints one JSON line
/// per case: {"case", "raised" (the IDL exception's name, "returned" when
/// the call returned, "CORBA::<system exception>" when the daemon failed),
/// "message", "code" and "detail" (the Errc and the message the store sent
/// along in the reply's error context; 0 and "" when it sent none)}. Exit 0
/// when every case ran, 1 on usage errors, 2 when the probe itself could not
/// run.
///
/// --leave-reservation: reserves SIZE bytes as "probe.left", obtains the
/// push ticket and exits without connecting to the data port, like a client
/// killed between the control plane and the data plane. Prints
/// {"reservation": ID, "size": SIZE}.
///
/// --flood: reserves N Blobs of S bytes (default 1) named P.0 ... P.N-1
/// (default prefix "probe.flood") and never fills them, like a client
/// flooding the store with reservations; one case line per reserve
/// ("reserve-I"), then {"reserved": K, "refused": M}.
///
/// --each-op: calls every operation of BlobStore, BlobTransporter and
/// BlobLocator once with valid arguments on EXISTING (a reserve of
/// "EXISTING.new", its commit and abort, a remove of EXISTING last), so that
/// a test can check what each raises when the store cannot serve it.

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

namespace blobstreaming {
namespace {

constexpr std::uint64_t kMax = ~std::uint64_t{0};
constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;

std::string json_string(const std::string& text) { return nlohmann::json(text).dump(); }

/// Runs `call` and prints what it raised; returns whether it returned.
bool probe(const std::string& name, const std::function<void()>& call)
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
    } catch (const BlobStreaming::LimitReached& e) {
        raised = "LimitReached", message = e.message.in();
    } catch (const CORBA::SystemException& e) {
        raised = std::string("CORBA::") + e._name();
        message = "minor " + std::to_string(e.minor());
    } catch (const CORBA::Exception& e) {
        raised = std::string("CORBA::") + e._name();
    }
    const auto sent = raised == "returned" ? std::nullopt : corba::reply_error();
    std::cout << "{\"case\":" << json_string(name) << ",\"raised\":" << json_string(raised)
              << ",\"message\":" << json_string(message) << ",\"code\":" << (sent ? static_cast<int>(sent->code) : 0)
              << ",\"detail\":" << json_string(sent ? sent->message : std::string()) << "}" << std::endl;
    return raised == "returned";
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

int flood(const std::string& naming, const std::string& store_name, std::uint64_t count, std::uint64_t size,
          const std::string& prefix)
{
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
    CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
    BlobStreaming::BlobStore_var store = corba::resolve_store(root, store_name, naming);
    std::uint64_t reserved = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string name = prefix + "." + std::to_string(i);
        if (probe("reserve-" + std::to_string(i),
                  [&] { BlobStreaming::Reservation_var r = store->reserve(name.c_str(), size, false); }))
            ++reserved;
    }
    std::cout << "{\"reserved\":" << reserved << ",\"refused\":" << count - reserved << "}" << std::endl;
    orb->destroy();
    return 0;
}

int each_op(const std::string& naming, const std::string& store_name, const std::string& blob)
{
    CORBA::ORB_var orb = corba::init_orb({{"clientCallTimeOutPeriod", "30000"}});
    CosNaming::NamingContext_var root = corba::naming_context(orb, naming);
    BlobStreaming::BlobStore_var store = corba::resolve_store(root, store_name, naming);
    const BlobStreaming::TimeValue no_timeout{0, 0};
    const auto none = BlobStreaming::IGNORE_NOTIFICATIONS;
    const std::string fresh = blob + ".new";
    BlobStreaming::BlobChecksum zero_digest;
    corba::to_idl(Checksum::crc32c(0), zero_digest);
    BlobStreaming::BlobTransporter_var transporter;
    BlobStreaming::ReservationId id = 0;

    probe("name", [&] { CORBA::String_var n = store->name(); });
    probe("status", [&] { BlobStreaming::StoreStatus_var s = store->status(); });
    probe("contains", [&] { store->contains(blob.c_str()); });
    probe("stat", [&] { BlobStreaming::BlobInfo_var i = store->stat(blob.c_str()); });
    probe("list", [&] { BlobStreaming::BlobInfoSeq_var l = store->list(); });
    probe("findLocalFile", [&] {
        BlobStreaming::LocalFile_var file;
        store->findLocalFile(blob.c_str(), file.out());
    });
    probe("shareImage", [&] {
        BlobStreaming::SharedImage_var image;
        store->shareImage(blob.c_str(), image.out());
    });
    probe("findLocalFiles", [&] {
        BlobStreaming::NameSeq names;
        names.length(2);
        names[0] = blob.c_str();
        names[1] = "probe.missing";
        BlobStreaming::LocalFileSeq_var files = store->findLocalFiles(names);
    });
    probe("verify", [&] { BlobStreaming::BlobInfo_var i = store->verify(blob.c_str()); });
    probe("resumable", [&] { BlobStreaming::Reservation_var r = store->resumable(fresh.c_str()); });
    probe("dataAddress", [&] { BlobStreaming::DataEndpoint_var e = store->dataAddress(); });
    probe("openTransporter", [&] { transporter = store->openTransporter(); });
    probe("reserve", [&] {
        BlobStreaming::Reservation_var r = store->reserve(fresh.c_str(), 10, false);
        id = r->id;
    });
    if (!CORBA::is_nil(transporter)) {
        probe("send", [&] {
            BlobStreaming::TransferTicket_var t = transporter->send(blob.c_str(), 0, 0, false, no_timeout, none);
        });
        probe("recv",
              [&] { BlobStreaming::TransferTicket_var t = transporter->recv(id, 10, 0, false, no_timeout, none); });
        probe("poll", [&] { BlobStreaming::TransferNoticeSeq_var n = transporter->poll(); });
        probe("observe", [&] { transporter->observe(BlobStreaming::TransferObserver::_nil()); });
        probe("cancel", [&] {
            BlobStreaming::TicketId t = {};
            transporter->cancel(t);
        });
    }
    probe("commit", [&] { BlobStreaming::BlobInfo_var i = store->commit(id, zero_digest); });
    probe("abort", [&] { store->abort(id); });
    probe("remove", [&] { store->remove(blob.c_str()); });
    if (!CORBA::is_nil(transporter)) probe("close", [&] { transporter->close(); });
    probe("locate", [&] {
        CORBA::Object_var obj = root->resolve(corba::locator_path());
        BlobStreaming::BlobLocator_var locator = BlobStreaming::BlobLocator::_narrow(obj);
        BlobStreaming::LocationSeq_var l = locator->locate(blob.c_str());
        BlobStreaming::NameSeq_var s = locator->stores();
    });
    probe("place", [&] {
        CORBA::Object_var obj = root->resolve(corba::locator_path());
        BlobStreaming::BlobLocator_var locator = BlobStreaming::BlobLocator::_narrow(obj);
        BlobStreaming::Placement_var p = locator->place(1, BlobStreaming::StoreTierSeq());
    });
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
    BlobStreaming::BlobChecksum zero_digest;
    corba::to_idl(Checksum::crc32c(0), zero_digest);

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
    // Malformed checksums are refused before the reservation is touched.
    BlobStreaming::BlobChecksum too_long = zero_digest;
    too_long.value.length(32);  // a CRC32C has 4 bytes
    probe("commit-checksum-too-long", [&] { store->commit(id, too_long); });
    BlobStreaming::BlobChecksum no_algorithm = zero_digest;
    no_algorithm.algorithm = BlobStreaming::CHECKSUM_STORE_DEFAULT;
    probe("commit-checksum-no-algorithm", [&] { store->commit(id, no_algorithm); });
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
    std::string naming, store, blob, leave, flood, size = "1", prefix = "probe.flood", each;
    blobstreaming::TlsFiles tls;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--naming") naming = argv[i + 1];
        else if (key == "--store") store = argv[i + 1];
        else if (key == "--blob") blob = argv[i + 1];
        else if (key == "--leave-reservation") leave = argv[i + 1];
        else if (key == "--flood") flood = argv[i + 1];
        else if (key == "--size") size = argv[i + 1];
        else if (key == "--prefix") prefix = argv[i + 1];
        else if (key == "--each-op") each = argv[i + 1];
        else if (key == "--tls-cert") tls.cert = argv[i + 1];
        else if (key == "--tls-key") tls.key = argv[i + 1];
        else if (key == "--tls-ca") tls.ca = argv[i + 1];
    }
    const int modes = !blob.empty() + !leave.empty() + !flood.empty() + !each.empty();
    if (naming.empty() || store.empty() || modes != 1 || argc % 2 == 0) {
        std::cerr << "usage: idl_probe --naming URL --store NAME --blob EXISTING|--leave-reservation SIZE|"
                     "--flood N [--size S] [--prefix P]|--each-op EXISTING "
                     "[--tls-cert FILE --tls-key FILE --tls-ca FILE]\n";
        return 1;
    }
    try {
        if (tls.enabled()) blobstreaming::corba::configure_ssl(tls);
        if (!leave.empty()) return blobstreaming::leave_reservation(naming, store, std::stoull(leave));
        if (!flood.empty()) return blobstreaming::flood(naming, store, std::stoull(flood), std::stoull(size), prefix);
        if (!each.empty()) return blobstreaming::each_op(naming, store, each);
        return blobstreaming::run(naming, store, blob);
    } catch (const std::exception& e) {
        std::cout << "{\"error\":" << blobstreaming::json_string(e.what()) << "}" << std::endl;
        return 2;
    } catch (const CORBA::Exception& e) {
        std::cout << "{\"error\":" << blobstreaming::json_string(std::string("CORBA ") + e._name()) << "}" << std::endl;
        return 2;
    }
}
