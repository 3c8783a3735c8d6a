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
///                         commit ID [SHA256] | abort ID | resumable B | verify B | remove B |
///                         findLocalFile B | shareImage B | dataAddress | openTransporter
///   BlobTransporter (--transporter IOR, else a new one of --store):
///                         send B | recv ID | poll | observe | cancel | close
///   BlobLocator (--locator IOR, else BlobStreaming/Locator): locate B | stores
/// commit's SHA256 (hex) defaults to that of 0 bytes; recv asks for the
/// rest of the reservation; observe sets a nil observer; cancel names an
/// all-zero ticket.
///
/// Like a TLS client should, it refuses a store, transporter or locator
/// reference that does not require TLS, and references a locator returns,
/// before calling them (Errc::refused).
///
/// Prints one JSON line, {"op", "ok": true, "result"} with exit 0, or
/// {"op", "ok": false, "code", "message"} with the Errc as exit code (as
/// `blob` does: 53 permission denied, 25 no such reservation, ...). Usage
/// errors exit 1.

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <BlobStreaming.hh>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace blobstreaming {
namespace {

using nlohmann::json;

constexpr const char* kEmptyCrc32c = "crc32c:00000000";

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
    if (op == "shareImage") {
        BlobStreaming::SharedImage_var image;
        return {{"shared", static_cast<bool>(s->shareImage(arg(call, 0).c_str(), image.out()))}};
    }
    if (op == "dataAddress") {
        BlobStreaming::DataEndpoint_var d = s->dataAddress();
        return {{"host", d->host.in()}, {"port", d->port}};
    }
    throw std::invalid_argument("unknown operation " + op);
}

json transporter_call(BlobStreaming::BlobTransporter_ptr t, const Call& call)
{
    const std::string& op = call.op;
    const BlobStreaming::TimeValue no_timeout{0, 0};
    const auto none = BlobStreaming::IGNORE_NOTIFICATIONS;
    if (op == "send")
        return ticket_json(
            BlobStreaming::TransferTicket_var(t->send(arg(call, 0).c_str(), 0, 0, false, no_timeout, none)).in());
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
        t->cancel(id);
        return nullptr;
    }
    if (op == "close") {
        t->close();
        return nullptr;
    }
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
    static const std::vector<std::string> kTransporterOps = {"send", "recv", "poll", "observe", "cancel", "close"};
    const bool on_transporter =
        std::find(kTransporterOps.begin(), kTransporterOps.end(), call.op) != kTransporterOps.end();
    const bool on_locator = call.op == "locate" || call.op == "stores";
    const std::string what = call.op + (call.args.empty() ? "" : " \"" + call.args[0] + "\"");
    std::string label = on_locator ? "locator" : call.store;
    std::string endpoint = "an unknown endpoint";

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
        if (on_locator) {
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
        return run(call);
    } catch (const std::exception& e) {
        std::cerr << "corba_call: " << e.what() << std::endl;
        return 2;
    }
}
