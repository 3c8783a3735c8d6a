// The control-plane operations and their retry policy (ControlPlane.h).
#include "ControlPlane.h"

#include "IdlConversion.h"
#include "NoticeBoard.h"
#include "OrbHandle.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Host.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/NameSeqIdl.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/Nearest.h>
#include <blobstreaming/transporter/Placement.h>
#include <omniORB4/omniORB.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

namespace blobstreaming::client {

/// The cached references. Calls come from the workers (several at once) and,
/// while a Session closes, from the loop thread. `mutex` guards the caches
/// only and is never held across a CORBA call: the calls of concurrent
/// operations overlap. A caller works on its own duplicate of a reference.
class ControlPlane::Refs {
public:
    explicit Refs(const SessionOptions& options)
        : handle(options), orb(handle.orb()), notices(handle.orb(), options.on_notice)
    {}
    OrbHandle handle;
    CORBA::ORB_ptr orb;   ///< handle's
    NoticeBoard notices;  ///< destroyed before the ORB handle
    std::mutex mutex;
    /// Serialises opening transporters, so that concurrent first calls open
    /// one per store (the daemon caps the transporters of a client).
    std::mutex opening;
    CosNaming::NamingContext_var root;
    std::map<std::string, BlobStreaming::BlobStore_var> stores;
    std::map<std::string, BlobStreaming::BlobTransporter_var> transporters;
    /// Per store, the transporter told where to send notices (observe):
    /// another one in `transporters` (reopened) has to be told again.
    std::map<std::string, BlobStreaming::BlobTransporter_var> observing;
    /// Per store, its BlobStore::identity (the reader of the grants this
    /// client asks sources for on its behalf).
    std::map<std::string, std::string> identities;

    CosNaming::NamingContext_var naming_root()
    {
        std::lock_guard<std::mutex> lock(mutex);
        return root;  // duplicates
    }
    /// Drops `store`'s reference and transporter when the cached reference
    /// still is `ref` (another call may have replaced it meanwhile).
    void forget(const std::string& store, BlobStreaming::BlobStore_ptr ref)
    {
        std::lock_guard<std::mutex> lock(mutex);
        const auto it = stores.find(store);
        if (it == stores.end() || it->second.in() != ref) return;
        stores.erase(it);
        transporters.erase(store);
    }
};

ControlPlane::ControlPlane(const SessionOptions& options) : options_(options), refs_(std::make_unique<Refs>(options_))
{
    refs_->root = corba::naming_context(refs_->orb, options_.naming_url);
}

void ControlPlane::stop() { calls_.stop(); }

ControlPlane::~ControlPlane()
{
    stop();
    for (auto& [store, transporter] : refs_->transporters) {
        try {
            transporter->close();
        } catch (const CORBA::Exception&) {
            // The store is gone: its transporter went with it.
        }
    }
    // The stores forgot the observer with the transporters: no notice comes now.
    refs_->notices.close();
}

void ControlPlane::submit(std::function<void()> call, std::string key)
{
    calls_.submit(std::move(call), std::move(key));
}

namespace {

std::string seconds_text(std::chrono::milliseconds ms)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms.count()) / 1000.0);
    return buf;
}

/// Runs `call(root)` on the Naming Service. Its calls are reads, so when the
/// Naming Service was restarted and the connection to the old process fails
/// (COMM_FAILURE, TRANSIENT: Error(unreachable) from the helpers), the root
/// context is obtained again and the call made once more.
template <class Call>
auto with_naming(ControlPlane::Refs& refs, const SessionOptions& options, Call call)
{
    try {
        const CosNaming::NamingContext_var root = refs.naming_root();
        return call(root.in());
    } catch (const CORBA::COMM_FAILURE&) {
    } catch (const CORBA::TRANSIENT&) {
    } catch (const CORBA::OBJECT_NOT_EXIST&) {
    } catch (const Error& e) {
        if (e.code() != Errc::unreachable) throw;
    }
    const CosNaming::NamingContext_var root = corba::naming_context(refs.orb, options.naming_url);
    {
        std::lock_guard<std::mutex> lock(refs.mutex);
        refs.root = root;
    }
    return call(root.in());
}

/// A store reference that a TLS client refuses before sending anything to it:
/// it does not require TLS (corba::requires_tls). Errc::refused.
class InsecureReference : public Error {
public:
    using Error::Error;
};

/// Throws InsecureReference when this process uses TLS and `ref` (of
/// `store`, or an object `store` returned: `whose`) does not require it.
void refuse_plaintext(CORBA::Object_ptr ref, const std::string& what, const std::string& store,
                      const std::string& whose)
{
    if (!corba::ssl_configured() || corba::requires_tls(ref)) return;
    throw InsecureReference(Errc::refused, what + ": store \"" + store + "\": " + whose + " at " +
                                               corba::endpoint_of(ref) +
                                               " does not require TLS; this client uses TLS and refuses it (an "
                                               "impostor or a misconfigured store)");
}

/// `store`'s reference as the Naming Service names it now, with the call timeout set.
BlobStreaming::BlobStore_var fresh_reference(ControlPlane::Refs& refs, const SessionOptions& options,
                                             const std::string& store)
{
    BlobStreaming::BlobStore_var ref = with_naming(refs, options, [&](CosNaming::NamingContext_ptr root) {
        return corba::resolve_store(root, store, options.naming_url);
    });
    omniORB::setClientCallTimeout(ref, static_cast<CORBA::ULong>(options.timeout.count()));
    return ref;
}

/// `store`'s reference: the cached one (`cached`), or resolved now and
/// cached. Either way checked against this client's TLS policy before the
/// first byte goes to it.
BlobStreaming::BlobStore_var store_reference(ControlPlane::Refs& refs, const SessionOptions& options,
                                             const std::string& store, const std::string& what, bool& cached)
{
    BlobStreaming::BlobStore_var ref;
    {
        std::lock_guard<std::mutex> lock(refs.mutex);
        const auto it = refs.stores.find(store);
        cached = it != refs.stores.end();
        if (cached) ref = it->second;  // duplicates
    }
    if (!cached) {
        try {
            ref = fresh_reference(refs, options, store);
            std::lock_guard<std::mutex> lock(refs.mutex);
            refs.stores[store] = ref;
        } catch (const Error& e) {
            throw Error(e.code(), what + ": " + e.what());
        } catch (const CORBA::Exception& e) {
            throw Error(Errc::unreachable, what + ": cannot resolve store \"" + store + "\" in the naming service at " +
                                               options.naming_url + " (" + e._name() + ")");
        }
    }
    try {
        // Whatever the Naming Service (plaintext, unauthenticated) names.
        refuse_plaintext(ref, what, store, "its reference");
    } catch (const InsecureReference&) {
        refs.forget(store, ref.in());
        throw;
    }
    if (!corba::ssl_configured() && corba::ssl_only(ref))
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" at " + corba::endpoint_of(ref) +
                                           " accepts TLS connections only: give this client a certificate, key "
                                           "and CA (--tls-cert, --tls-key, --tls-ca)");
    return ref;
}

/// The retry policy after the system exception `e` from a call on `store`'s
/// reference `ref`; called only from the handler of `e`. Drops the cached
/// references, then returns when the call may be made once more: on the
/// first attempt (`first_on_cached`) with a cached reference that turned out
/// stale (TRANSIENT, OBJECT_NOT_EXIST: the call did not run), or whose
/// connection broke (COMM_FAILURE: the daemon restarted) when the call did
/// not run, the Naming Service now names another daemon, or the call is
/// `repeatable` (it only reads or issues a ticket: run twice, it changes
/// nothing; the daemon closes a control connection idle for its
/// --control-idle-timeout, and a call sent as it does so is lost with it).
/// Otherwise throws `e` as Error.
void recover_or_rethrow(ControlPlane::Refs& refs, const SessionOptions& options, const std::string& store,
                        const std::string& what, const std::string& endpoint, const CORBA::SystemException& e,
                        BlobStreaming::BlobStore_ptr ref, bool first_on_cached, bool repeatable)
{
    const bool stale = dynamic_cast<const CORBA::TRANSIENT*>(&e) != nullptr ||
                       dynamic_cast<const CORBA::OBJECT_NOT_EXIST*>(&e) != nullptr;
    const bool lost = dynamic_cast<const CORBA::COMM_FAILURE*>(&e) != nullptr;
    const BlobStreaming::BlobStore_var old = BlobStreaming::BlobStore::_duplicate(ref);
    refs.forget(store, ref);
    if (!(first_on_cached && (stale || lost))) corba::rethrow_as_error(what, store, endpoint);
    if (!lost || e.completed() == CORBA::COMPLETED_NO || repeatable) return;
    // The call may have run on the old daemon: repeated only on another one.
    const Error failure = [&] {
        try {
            corba::rethrow_as_error(what, store, endpoint);
        } catch (const Error& error) {
            return error;
        }
    }();
    BlobStreaming::BlobStore_var fresh;
    try {
        fresh = fresh_reference(refs, options, store);
    } catch (const Error&) {
        throw failure;
    }
    if (fresh->_is_equivalent(old.in())) throw failure;
    std::lock_guard<std::mutex> lock(refs.mutex);
    refs.stores[store] = fresh;
}

/// Runs `body(store_ref)`; CORBA exceptions become Error. A cached reference
/// that turned out stale (daemon restarted) is resolved again once
/// (recover_or_rethrow; `repeatable`: `body` only reads or issues tickets).
template <class Body>
auto with_store(ControlPlane::Refs& refs, const SessionOptions& options, const std::string& store,
                const std::string& what, Body body, bool repeatable = false)
{
    for (int attempt = 0;; ++attempt) {
        bool cached = false;
        const BlobStreaming::BlobStore_var ref = store_reference(refs, options, store, what, cached);
        const std::string endpoint = corba::endpoint_of(ref);
        try {
            return body(ref.in());
        } catch (const CORBA::TIMEOUT&) {
            throw Error(Errc::timeout, what + ": store \"" + store + "\" at " + endpoint + " did not answer within " +
                                           seconds_text(options.timeout) + " s");
        } catch (const CORBA::SystemException& e) {
            recover_or_rethrow(refs, options, store, what, endpoint, e, ref.in(), cached && attempt == 0, repeatable);
        } catch (...) {
            corba::rethrow_as_error(what, store, endpoint);
        }
    }
}

/// with_store() on `store` with `body`'s call bounded by
/// ControlPlane::kFetchCallTimeout: a fetch's call lasts as long as its
/// transfer (the store fails one that stalls).
template <class Body>
auto with_fetching_store(ControlPlane::Refs& refs, const SessionOptions& options, const std::string& store,
                         const std::string& what, Body body)
{
    return with_store(refs, options, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::BlobStore_var bounded = BlobStreaming::BlobStore::_duplicate(ref);
        omniORB::setClientCallTimeout(bounded, static_cast<CORBA::ULong>(ControlPlane::kFetchCallTimeout.count()));
        return body(bounded.in());
    });
}

/// The cached transporter of `store`, or a new one (`ref`'s).
BlobStreaming::BlobTransporter_var transporter(ControlPlane::Refs& refs, const std::string& store,
                                               BlobStreaming::BlobStore_ptr ref, const SessionOptions& options,
                                               const std::string& what)
{
    auto cached = [&]() -> BlobStreaming::BlobTransporter_var {
        std::lock_guard<std::mutex> lock(refs.mutex);
        const auto it = refs.transporters.find(store);
        if (it == refs.transporters.end()) return BlobStreaming::BlobTransporter::_nil();
        return it->second;  // duplicates
    };
    BlobStreaming::BlobTransporter_var t = cached();
    if (!CORBA::is_nil(t)) return t;
    std::lock_guard<std::mutex> opening(refs.opening);
    t = cached();  // opened by another call meanwhile
    if (!CORBA::is_nil(t)) return t;
    t = ref->openTransporter();
    refuse_plaintext(t, what, store, "the transporter reference it returned");
    omniORB::setClientCallTimeout(t, static_cast<CORBA::ULong>(options.timeout.count()));
    std::lock_guard<std::mutex> lock(refs.mutex);
    refs.transporters[store] = t;
    return t;
}

/// Runs `call(transporter)` on the store's cached transporter. The daemon
/// reclaims transporters left idle (blobstored --transporter-idle), so a
/// Session that waited long may hold one that is gone: OBJECT_NOT_EXIST,
/// raised before the call ran. Then a new transporter is opened and the call
/// made once more; other failures are with_store's.
template <class Call>
auto with_transporter(ControlPlane::Refs& refs, const std::string& store, BlobStreaming::BlobStore_ptr ref,
                      const SessionOptions& options, const std::string& what, Call call)
{
    bool cached = false;
    {
        std::lock_guard<std::mutex> lock(refs.mutex);
        cached = refs.transporters.count(store) != 0;
    }
    const BlobStreaming::BlobTransporter_var t = transporter(refs, store, ref, options, what);
    try {
        return call(t.in());
    } catch (const CORBA::OBJECT_NOT_EXIST&) {
        if (!cached) throw;
        library_log()->debug("store \"{}\": the cached transporter was reclaimed; opening a new one", store);
        std::lock_guard<std::mutex> lock(refs.mutex);
        const auto it = refs.transporters.find(store);
        if (it != refs.transporters.end() && it->second.in() == t.in()) refs.transporters.erase(it);
    }
    const BlobStreaming::BlobTransporter_var fresh = transporter(refs, store, ref, options, what);
    return call(fresh.in());
}

/// Tells `store`'s transporter `t` where to send notices, once per
/// transporter (a reopened one is told again).
void observe_once(ControlPlane::Refs& refs, const std::string& store, BlobStreaming::BlobTransporter_ptr t)
{
    {
        std::lock_guard<std::mutex> lock(refs.mutex);
        const auto it = refs.observing.find(store);
        if (it != refs.observing.end() && it->second.in() == t) return;
    }
    const BlobStreaming::TransferObserver_var observer = refs.notices.observer();
    t->observe(observer.in());
    std::lock_guard<std::mutex> lock(refs.mutex);
    refs.observing[store] = BlobStreaming::BlobTransporter::_duplicate(t);
}

/// Before a ticket is asked for with `notices`.
void prepare_notices(ControlPlane::Refs& refs, const std::string& store, BlobStreaming::BlobTransporter_ptr t,
                     NoticeMode notices)
{
    if (notices == NoticeMode::send) observe_once(refs, store, t);
}

/// Once the ticket is issued, before its transfer starts.
void await_notice(ControlPlane::Refs& refs, const std::string& store, const Ticket& ticket, const std::string& name,
                  TransferDirection direction, NoticeMode notices)
{
    if (notices != NoticeMode::none)
        refs.notices.expect(store, ticket.id, name, direction, ticket.offset, ticket.length);
}

}  // namespace

PushGrant ControlPlane::begin_push(const std::string& store, const std::string& name, std::uint64_t size, bool replace,
                                   std::optional<ChecksumAlgorithm> checksum, NoticeMode notices)
{
    const BlobStreaming::ChecksumAlgorithm algorithm =
        checksum ? corba::to_idl(*checksum) : BlobStreaming::CHECKSUM_STORE_DEFAULT;
    const std::string what = "push " + quote_name(name);
    // One round trip: the reservation and its ticket together.
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::PushGrant_var granted =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                prepare_notices(*refs_, store, t, notices);
                return t->push(name.c_str(), size, replace, algorithm, true, time_value(options_.timeout),
                               semantics_of(notices));
            });
        PushGrant grant;
        grant.reservation = granted->space.id;
        grant.ticket = ticket_of(granted->ticket);
        await_notice(*refs_, store, grant.ticket, name, TransferDirection::push, notices);
        return grant;
    });
}

PushGrant ControlPlane::begin_stream_push(const std::string& store, const std::string& name, std::uint64_t max_size,
                                          bool replace, std::optional<ChecksumAlgorithm> checksum, NoticeMode notices)
{
    const BlobStreaming::ChecksumAlgorithm algorithm =
        checksum ? corba::to_idl(*checksum) : BlobStreaming::CHECKSUM_STORE_DEFAULT;
    const std::string what = "push " + quote_name(name);
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::PushGrant_var granted =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                prepare_notices(*refs_, store, t, notices);
                try {
                    return t->pushStream(name.c_str(), max_size, replace, algorithm, true,
                                         time_value(options_.timeout), semantics_of(notices));
                } catch (const CORBA::BAD_OPERATION&) {
                    throw Error(Errc::refused,
                                what + " of unknown length: store \"" + store +
                                    "\" does not take pushes of unknown length (its blobstored is of a release "
                                    "before this client's, blobstreaming " BLOBSTREAMING_RELEASE
                                    "): give the size (blob push --size), or upgrade the store");
                }
            });
        PushGrant grant;
        grant.reservation = granted->space.id;
        grant.ticket = ticket_of(granted->ticket);
        await_notice(*refs_, store, grant.ticket, name, TransferDirection::push, notices);
        return grant;
    });
}

std::optional<PushGrant> ControlPlane::resume_push(const std::string& store, const std::string& name,
                                                   std::uint64_t size, std::optional<ChecksumAlgorithm> checksum,
                                                   NoticeMode notices)
{
    const std::string what = "push " + quote_name(name);
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) -> std::optional<PushGrant> {
        BlobStreaming::Reservation_var r;
        try {
            r = ref->resumable(name.c_str());
        } catch (const BlobStreaming::NoSuchReservation&) {
            return std::nullopt;
        }
        if (r->size != size)
            throw Error(Errc::invalid_argument, what + ": store \"" + store +
                                                    "\": cannot resume: the interrupted push was of " +
                                                    std::to_string(r->size) + " bytes, the source has " +
                                                    std::to_string(size) + " (push without resuming to start over)");
        if (const auto held = corba::algorithm_of(r->checksum); checksum && held && *held != *checksum)
            throw Error(Errc::invalid_argument,
                        what + ": store \"" + store + "\": cannot resume: the interrupted push was checksummed with " +
                            std::string(to_string(*held)) + ", this one asks for " + std::string(to_string(*checksum)) +
                            " (push without resuming to start over)");
        PushGrant grant;
        grant.reservation = r->id;
        BlobStreaming::TransferTicket_var ticket =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                prepare_notices(*refs_, store, t, notices);
                return t->recv(r->id, r->size - r->received, r->received, true, time_value(options_.timeout),
                               semantics_of(notices));
            });
        grant.ticket = ticket_of(ticket.in());
        await_notice(*refs_, store, grant.ticket, name, TransferDirection::push, notices);
        return grant;
    });
}

std::uint64_t ControlPlane::reserve_parts(const std::string& store, const std::string& name, std::uint64_t size,
                                          bool replace)
{
    const std::string what = "push " + quote_name(name);
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::Reservation_var r =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                return t->reserveParts(name.c_str(), size, replace, BlobStreaming::CHECKSUM_CRC32C);
            });
        return static_cast<std::uint64_t>(r->id);
    });
}

Ticket ControlPlane::part_ticket(const std::string& store, const std::string& name, std::uint64_t reservation,
                                 std::uint64_t offset, std::uint64_t length)
{
    const std::string what = "push " + quote_name(name);
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::TransferTicket_var ticket =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                return t->recvPart(reservation, length, offset, true, time_value(options_.timeout));
            });
        return ticket_of(ticket.in());
    });
}

BlobInfo ControlPlane::commit(const std::string& store, const std::string& name, std::uint64_t reservation,
                              const Checksum& expected)
{
    return with_store(*refs_, options_, store, "push " + quote_name(name), [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::BlobChecksum idl;
        corba::to_idl(expected, idl);
        BlobStreaming::BlobInfo_var info = ref->commit(reservation, idl);
        return info_of(info.in());
    });
}

void ControlPlane::abort(const std::string& store, std::uint64_t reservation) noexcept
{
    try {
        with_store(*refs_, options_, store, "abort reservation " + std::to_string(reservation),
                   [&](BlobStreaming::BlobStore_ptr ref) {
                       ref->abort(reservation);
                       return 0;
                   });
    } catch (const Error& e) {
        // Unreachable: the store drops the reservation of a broken connection itself.
        if (e.code() == Errc::unreachable || e.code() == Errc::timeout) library_log()->info("{}", e.what());
        else if (e.code() != Errc::no_such_reservation) library_log()->warn("{}", e.what());
    } catch (const std::exception& e) {
        library_log()->warn("abort reservation {} in store \"{}\": {}", reservation, store, e.what());
    }
}

Ticket ControlPlane::begin_pull(const std::string& store, const std::string& name, std::uint64_t offset,
                                std::uint64_t length, NoticeMode notices)
{
    const std::string what = "pull " + quote_name(name);
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::TransferTicket_var ticket =
            with_transporter(*refs_, store, ref, options_, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                prepare_notices(*refs_, store, t, notices);
                return t->send(name.c_str(), length, offset, true, time_value(options_.timeout), semantics_of(notices));
            });
        Ticket out = ticket_of(ticket.in());
        await_notice(*refs_, store, out, name, TransferDirection::pull, notices);
        return out;
    }, true);
}

std::vector<std::string> ControlPlane::transporter_stores()
{
    std::vector<std::string> out;
    std::lock_guard<std::mutex> lock(refs_->mutex);
    for (const auto& [store, t] : refs_->transporters) out.push_back(store);
    return out;
}

std::vector<TransferNotice> ControlPlane::poll_notices(const std::string& store)
{
    const std::string what = "poll notices";
    BlobStreaming::BlobTransporter_var t;
    {
        std::lock_guard<std::mutex> lock(refs_->mutex);
        const auto it = refs_->transporters.find(store);
        if (it == refs_->transporters.end()) return {};  // no transfer, no notice
        t = it->second;                                  // duplicates
    }
    const std::string endpoint = corba::endpoint_of(t);
    BlobStreaming::TransferNoticeSeq_var seq;
    try {
        seq = t->poll();
    } catch (const CORBA::OBJECT_NOT_EXIST&) {
        {
            std::lock_guard<std::mutex> lock(refs_->mutex);
            const auto it = refs_->transporters.find(store);
            if (it != refs_->transporters.end() && it->second.in() == t.in()) refs_->transporters.erase(it);
        }
        refs_->notices.forget_store(store);
        throw Error(Errc::transfer_failed,
                    what + ": store \"" + store + "\" at " + endpoint +
                        " no longer has this session's transporter (reclaimed after blobstored "
                        "--transporter-idle, or the daemon restarted): the notices it kept are lost");
    } catch (const CORBA::TIMEOUT&) {
        throw Error(Errc::timeout, what + ": store \"" + store + "\" at " + endpoint + " did not answer within " +
                                       seconds_text(options_.timeout) + " s");
    } catch (...) {
        corba::rethrow_as_error(what, store, endpoint);
    }
    std::vector<TransferNotice> out;
    out.reserve(seq->length());
    for (CORBA::ULong i = 0; i < seq->length(); ++i) out.push_back(refs_->notices.take(seq[i], store));
    return out;
}

std::optional<LocalFile> ControlPlane::find_local(const std::string& store, const std::string& name)
{
    return with_store(*refs_, options_, store, "pull " + quote_name(name),
                      [&](BlobStreaming::BlobStore_ptr ref) -> std::optional<LocalFile> {
                          BlobStreaming::LocalFile_var file;
                          if (!ref->findLocalFile(name.c_str(), file.out())) return std::nullopt;
                          if (!on_this_host(file->host.in())) return std::nullopt;
                          return local_file_of(file.in());
                      }, true);
}

std::optional<std::vector<std::optional<LocalFile>>> ControlPlane::find_local_files(
    const std::string& store, const std::vector<std::string>& names)
{
    using Files = std::vector<std::optional<LocalFile>>;
    const std::string what = "pull " + std::to_string(names.size()) + " Blobs in place";
    return with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) -> std::optional<Files> {
        const BlobStreaming::NameSeq seq = corba::to_name_seq(names);
        BlobStreaming::LocalFileSeq_var files;
        try {
            files = ref->findLocalFiles(seq);
        } catch (const CORBA::BAD_OPERATION&) {
            return std::nullopt;  // a store older than findLocalFiles
        }
        Files out(names.size());
        for (CORBA::ULong i = 0; i < files->length() && i < names.size(); ++i) {
            const BlobStreaming::LocalFile& file = files[i];
            if (file.path.in()[0] != '\0' && on_this_host(file.host.in())) out[i] = local_file_of(file);
        }
        return out;
    }, true);
}

BlobInfo ControlPlane::stat(const std::string& store, const std::string& name)
{
    return with_store(*refs_, options_, store, "stat " + quote_name(name), [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::BlobInfo_var info = ref->stat(name.c_str());
        return info_of(info.in());
    }, true);
}

namespace {

/// `store`'s BlobStore::identity, asked once.
std::string identity_of(ControlPlane::Refs& refs, const SessionOptions& options, const std::string& store,
                        const std::string& what)
{
    {
        std::lock_guard<std::mutex> lock(refs.mutex);
        if (const auto it = refs.identities.find(store); it != refs.identities.end()) return it->second;
    }
    std::string identity = with_store(refs, options, store, what, [](BlobStreaming::BlobStore_ptr ref) {
        CORBA::String_var id = ref->identity();
        return std::string(id.in());
    }, true);
    std::lock_guard<std::mutex> lock(refs.mutex);
    refs.identities[store] = identity;
    return identity;
}

/// A read grant of a store, or why the store refused it.
struct Granted {
    BlobStreaming::ReadGrant grant;
    std::optional<Error> error;
};

/// Read grants of store `from` for store `to` (its identity), one per name,
/// obtained under this client's identity (BlobTransporter::grantRead,
/// grantReads): what a copy hands to `to`, which never reads `from` with
/// its own authority. One name: its errors are thrown; several: each
/// name's is its `error`.
std::vector<Granted> grant_reads(ControlPlane::Refs& refs, const SessionOptions& options, const std::string& from,
                                 const std::vector<std::string>& names, const std::string& to,
                                 const std::string& what)
{
    const std::string reader = identity_of(refs, options, to, what);
    std::vector<Granted> out(names.size());
    with_store(refs, options, from, what, [&](BlobStreaming::BlobStore_ptr ref) {
        if (names.size() == 1) {
            // One name: its own errors as the call's, as a fetch raises them.
            BlobStreaming::TransferTicket_var ticket =
                with_transporter(refs, from, ref, options, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                    return t->grantRead(names[0].c_str(), reader.c_str());
                });
            out[0].grant.source = BlobStreaming::BlobStore::_duplicate(ref);
            out[0].grant.ticket = ticket.in();
            return 0;
        }
        const BlobStreaming::NameSeq seq = corba::to_name_seq(names);
        BlobStreaming::GrantOutcomeSeq_var got =
            with_transporter(refs, from, ref, options, what, [&](BlobStreaming::BlobTransporter_ptr t) {
                return t->grantReads(seq, reader.c_str());
            });
        if (got->length() != names.size())
            throw Error(Errc::protocol_error, what + ": store \"" + from + "\" answered " +
                                                  std::to_string(got->length()) + " grants for " +
                                                  std::to_string(names.size()) + " names");
        for (std::size_t i = 0; i < names.size(); ++i) {
            const BlobStreaming::GrantOutcome& o = got[static_cast<CORBA::ULong>(i)];
            if (o.code != 0) {
                out[i].error = Error(static_cast<Errc>(o.code), "copy " + quote_name(names[i]) + " from \"" + from +
                                                                    "\" to \"" + to + "\": store \"" + from +
                                                                    "\": " + o.message.in());
                continue;
            }
            out[i].grant.source = BlobStreaming::BlobStore::_duplicate(ref);
            out[i].grant.ticket = o.ticket;
        }
        return 0;
    }, true);
    return out;
}

}  // namespace

BlobInfo ControlPlane::fetch(const std::string& to, const std::string& name, const std::string& from, bool overwrite)
{
    const std::string what = "copy " + quote_name(name) + " from \"" + from + "\" to \"" + to + "\"";
    const BlobStreaming::ReadGrant grant = std::move(grant_reads(*refs_, options_, from, {name}, to, what).front().grant);
    return with_fetching_store(*refs_, options_, to, what, [&](BlobStreaming::BlobStore_ptr bounded) {
        BlobStreaming::BlobInfo_var info = bounded->fetch(grant, overwrite);
        return info_of(info.in());
    });
}

std::vector<ControlPlane::FetchOutcome> ControlPlane::fetch_each(const std::string& to,
                                                                 const std::vector<std::string>& names,
                                                                 const std::string& from, bool overwrite)
{
    std::vector<FetchOutcome> out = fetch_each_granted(to, names, from, overwrite);
    for (;;) {
        std::vector<std::size_t> expired;
        for (std::size_t i = 0; i < out.size(); ++i)
            if (out[i].error && out[i].error->code() == Errc::refused &&
                std::string(out[i].error->what()).find(" expired ") != std::string::npos)
                expired.push_back(i);
        if (expired.empty()) return out;
        std::vector<std::string> again;
        for (std::size_t i : expired) again.push_back(names[i]);
        library_log()->info("copy from \"{}\" to \"{}\": {} read grant(s) expired before their turn; asking again",
                            from, to, again.size());
        std::vector<FetchOutcome> retried = fetch_each_granted(to, again, from, overwrite);
        bool copied = false;
        for (std::size_t k = 0; k < expired.size(); ++k) {
            copied = copied || !retried[k].error;
            out[expired[k]] = std::move(retried[k]);
        }
        if (!copied) return out;
    }
}

std::vector<ControlPlane::FetchOutcome> ControlPlane::fetch_each_granted(const std::string& to,
                                                                         const std::vector<std::string>& names,
                                                                         const std::string& from, bool overwrite)
{
    const std::string what =
        "copy of " + std::to_string(names.size()) + " Blobs from \"" + from + "\" to \"" + to + "\"";
    std::vector<Granted> granted = grant_reads(*refs_, options_, from, names, to, what);
    std::vector<FetchOutcome> out(names.size());
    std::vector<std::size_t> asked;  // index in names of each grant handed on
    BlobStreaming::ReadGrantSeq seq;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (granted[i].error) {
            out[i].error = granted[i].error;
            continue;
        }
        asked.push_back(i);
        seq.length(seq.length() + 1);
        seq[seq.length() - 1] = granted[i].grant;
    }
    if (asked.empty()) return out;
    BlobStreaming::FetchOutcomeSeq_var got =
        with_fetching_store(*refs_, options_, to, what, [&](BlobStreaming::BlobStore_ptr bounded) {
            return BlobStreaming::FetchOutcomeSeq_var(bounded->fetchEach(seq, overwrite));
        });
    if (got->length() != asked.size())
        throw Error(Errc::protocol_error, what + ": store \"" + to + "\" answered " + std::to_string(got->length()) +
                                              " outcomes for " + std::to_string(asked.size()) + " grants");
    for (std::size_t k = 0; k < asked.size(); ++k) {
        const std::size_t i = asked[k];
        const BlobStreaming::FetchOutcome& o = got[static_cast<CORBA::ULong>(k)];
        if (o.code == 0) {
            out[i].info = info_of(o.info);
        } else {
            out[i].error =
                Error(static_cast<Errc>(o.code), "copy " + quote_name(names[i]) + " from \"" + from + "\" to \"" + to +
                                                     "\": store \"" + to + "\": " + o.message.in());
        }
    }
    return out;
}

void ControlPlane::begin_fetch(const std::string& to, const std::string& name, const std::string& from, bool overwrite)
{
    const std::string what = "copy " + quote_name(name) + " from \"" + from + "\" to \"" + to + "\"";
    const BlobStreaming::ReadGrant grant = std::move(grant_reads(*refs_, options_, from, {name}, to, what).front().grant);
    with_fetching_store(*refs_, options_, to, what, [&](BlobStreaming::BlobStore_ptr bounded) {
        bounded->beginFetch(grant, overwrite);
        return 0;
    });
}

BlobInfo ControlPlane::await_fetch(const std::string& to, const std::string& name)
{
    return with_fetching_store(*refs_, options_, to, "copy " + quote_name(name) + " to \"" + to + "\"",
                               [&](BlobStreaming::BlobStore_ptr bounded) {
                                   BlobStreaming::BlobInfo_var info = bounded->awaitFetch(name.c_str());
                                   return info_of(info.in());
                               });
}

BlobInfo ControlPlane::verify(const std::string& store, const std::string& name)
{
    return with_store(*refs_, options_, store, "verify " + quote_name(name), [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::BlobInfo_var info = ref->verify(name.c_str());
        return info_of(info.in());
    }, true);
}

std::vector<BlobInfo> ControlPlane::list(const std::string& store)
{
    return with_store(*refs_, options_, store, "list", [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::BlobInfoSeq_var seq = ref->list();
        return infos_of(seq.in());
    }, true);
}

void ControlPlane::remove(const std::string& store, const std::string& name)
{
    with_store(*refs_, options_, store, "rm " + quote_name(name), [&](BlobStreaming::BlobStore_ptr ref) {
        ref->remove(name.c_str());
        return 0;
    });
}

std::vector<std::string> ControlPlane::store_names()
{
    try {
        return with_naming(*refs_, options_,
                           [](CosNaming::NamingContext_ptr root) { return corba::list_stores(root); });
    } catch (const Error&) {
        throw;
    } catch (const CORBA::Exception& e) {
        throw Error(Errc::unreachable,
                    "cannot list the stores in the naming service at " + options_.naming_url + " (" + e._name() + ")");
    }
}

bool did_not_answer(const Error& e) noexcept { return e.code() == Errc::unreachable || e.code() == Errc::timeout; }

std::vector<Location> ControlPlane::locate(const std::string& name, std::vector<UnreachableStore>* unreachable)
{
    return locate_as(name, "locate " + quote_name(name), unreachable);
}

std::vector<Location> ControlPlane::locate_as(const std::string& name, const std::string& what,
                                              std::vector<UnreachableStore>* unreachable)
{
    validate_blob_name(name);
    std::vector<Location> answered;  // holders, and read-through stores that lack it
    std::optional<Error> insecure;
    for (const auto& store : store_names()) {
        try {
            const std::optional<Location> l = with_store(
                *refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) -> std::optional<Location> {
                    BlobStreaming::StoreStatus_var st = ref->status();
                    Location found{store, tier_of(st->tier), ref->contains(name.c_str())};
                    if (!found.holds && !st->readThrough) return std::nullopt;  // neither holds it nor fills itself
                    return found;
                });
            if (l) answered.push_back(*l);
        } catch (const InsecureReference& e) {
            // Not asked, so not known: said even when another store answers.
            library_log()->warn("{}", e.what());
            if (!insecure) insecure = e;
        } catch (const Error& e) {
            // A store that does not answer holds nothing we can get now.
            library_log()->debug("{}", e.what());
            if (unreachable && did_not_answer(e)) unreachable->push_back({store, e.what()});
        }
    }
    // "Nowhere" would be a guess while a store was refused unasked.
    std::vector<Location> out = nearest(std::move(answered));
    if (out.empty() && insecure) throw *insecure;
    return out;
}

namespace {

/// The BlobLocator bound as BlobStreaming/Locator, with the call timeout
/// set; nil when none is bound (or the Naming Service does not answer).
BlobStreaming::BlobLocator_var bound_locator(ControlPlane::Refs& refs, const SessionOptions& options)
{
    try {
        CORBA::Object_var obj = with_naming(refs, options, [](CosNaming::NamingContext_ptr root) {
            return CORBA::Object_var(root->resolve(corba::locator_path()));
        });
        BlobStreaming::BlobLocator_var locator = BlobStreaming::BlobLocator::_unchecked_narrow(obj.in());
        if (!CORBA::is_nil(locator))
            omniORB::setClientCallTimeout(locator, static_cast<CORBA::ULong>(options.timeout.count()));
        return locator;
    } catch (const CosNaming::NamingContext::NotFound&) {
    } catch (const CORBA::Exception& e) {
        library_log()->debug("BlobStreaming/Locator: cannot resolve it ({})", e._name());
    } catch (const Error& e) {
        library_log()->debug("BlobStreaming/Locator: {}", e.what());
    }
    return BlobStreaming::BlobLocator::_nil();
}

int idl_tier_order(Tier tier) noexcept { return static_cast<int>(tier); }

}  // namespace

std::optional<std::string> ControlPlane::locator_answer(const std::string& name, const std::string& what)
{
    if (corba::ssl_configured()) return std::nullopt;
    const BlobStreaming::BlobLocator_var locator = bound_locator(*refs_, options_);
    if (CORBA::is_nil(locator)) return std::nullopt;
    try {
        BlobStreaming::LocationSeq_var where = locator->locate(name.c_str());
        if (where->length() == 0) return std::nullopt;  // the survey says which stores were asked
        library_log()->debug("{}: the locator names store \"{}\"", what, where[0].store.in());
        return std::string(where[0].store.in());
    } catch (const CORBA::Exception& e) {
        library_log()->debug("{}: the locator did not answer ({}); asking every store", what, e._name());
        return std::nullopt;
    }
}

std::string ControlPlane::place(std::uint64_t size, std::optional<Tier> tier, const std::string& what)
{
    if (!corba::ssl_configured()) {
        const BlobStreaming::BlobLocator_var locator = bound_locator(*refs_, options_);
        if (!CORBA::is_nil(locator)) {
            BlobStreaming::StoreTierSeq tiers;
            if (tier) {
                tiers.length(1);
                tiers[0] = static_cast<BlobStreaming::StoreTier>(idl_tier_order(*tier));
            }
            try {
                BlobStreaming::Placement_var p = locator->place(size, tiers);
                library_log()->debug("{}: the locator places it on store \"{}\"{}", what, p->store.in(),
                                     p->byDefault ? " (its default)" : "");
                return p->store.in();
            } catch (const BlobStreaming::OutOfSpace& e) {
                const auto sent = corba::reply_error();
                throw Error(sent ? sent->code : Errc::out_of_space, what + ": " + e.message.in());
            } catch (const CORBA::TRANSIENT& e) {
                library_log()->debug("{}: the locator did not answer ({}); placing here", what, e._name());
            } catch (const CORBA::COMM_FAILURE& e) {
                library_log()->debug("{}: the locator did not answer ({}); placing here", what, e._name());
            } catch (const CORBA::OBJECT_NOT_EXIST& e) {
                library_log()->debug("{}: the locator is gone ({}); placing here", what, e._name());
            } catch (const CORBA::TIMEOUT& e) {
                library_log()->debug("{}: the locator did not answer ({}); placing here", what, e._name());
            } catch (const CORBA::SystemException& e) {
                // The locator's own error (no store of the tier, ...) travels in the reply's context.
                if (const auto sent = corba::reply_error()) throw Error(sent->code, what + ": " + sent->message);
                throw Error(Errc::transfer_failed, what + ": the locator failed: CORBA " + std::string(e._name()));
            }
        }
    }
    // No locator: the same rule over what the stores tell this client.
    std::vector<PlacementCandidate> candidates;
    for (const StoreStatus& s : stores()) {
        PlacementCandidate c;
        c.store = s.name;
        c.answered = s.reachable;
        c.problem = s.error;
        c.tier = idl_tier_order(s.tier);
        c.room = room_of(s.capacity, s.used, s.reserved);
        candidates.push_back(std::move(c));
    }
    std::vector<int> tiers;
    if (tier) tiers.push_back(idl_tier_order(*tier));
    const PlacementChoice choice = choose_placement(candidates, size, tiers, {});
    if (!choice.index)
        throw Error(choice.code, what + ": " + choice.message + " (no locator " +
                                     (corba::ssl_configured() ? "asked: TLS" : "bound") +
                                     "; this client asked the stores itself)");
    return candidates[*choice.index].store;
}

std::string ControlPlane::nearest_holder(const std::string& name, const std::string& what)
{
    if (auto found = locator_answer(name, what)) return *found;
    std::vector<UnreachableStore> unreachable;
    const auto where = locate_as(name, what, &unreachable);
    if (where.empty()) {
        std::string asked, silent;
        for (const auto& s : store_names()) {
            const bool answered = std::none_of(unreachable.begin(), unreachable.end(),
                                               [&](const UnreachableStore& u) { return u.name == s; });
            (answered ? asked : silent) += ((answered ? asked : silent).empty() ? "" : ", ") + s;
        }
        throw Error(Errc::no_such_blob, what + ": no registered store " + (silent.empty() ? "" : "that answered ") +
                                            "holds it (asked: " + (asked.empty() ? std::string("none") : asked) +
                                            (silent.empty() ? std::string() : "; did not answer: " + silent) + ")");
    }
    if (!unreachable.empty())
        library_log()->info("{}: store \"{}\" holds it; {} store(s) did not answer", what, where.front().store,
                            unreachable.size());
    return where.front().store;
}

std::vector<PrunedStore> ControlPlane::prune(std::chrono::milliseconds bound)
{
    std::vector<PrunedStore> out;
    for (const auto& name : store_names()) {
        try {
            const auto resolve = [&] {
                return with_naming(*refs_, options_, [&](CosNaming::NamingContext_ptr root) {
                    return CORBA::Object_var(root->resolve(corba::store_path(name)));
                });
            };
            const CORBA::Object_var ref = resolve();
            // Not asked, so not known to be gone: a TLS client sends nothing
            // to a reference that does not require TLS.
            if (CORBA::is_nil(ref.in()) || (corba::ssl_configured() && !corba::requires_tls(ref.in()))) continue;
            const corba::Probe probe = corba::probe(ref.in(), bound);
            if (probe.state != corba::Probe::gone) continue;
            // Only the entry that was probed: a daemon may have taken it over meanwhile.
            with_naming(*refs_, options_, [&](CosNaming::NamingContext_ptr root) {
                CORBA::Object_var now = root->resolve(corba::store_path(name));
                if (now->_is_equivalent(ref.in())) root->unbind(corba::store_path(name));
                return 0;
            });
            {
                std::lock_guard<std::mutex> lock(refs_->mutex);
                refs_->stores.erase(name);
                refs_->transporters.erase(name);
            }
            library_log()->info("store \"{}\": removed its naming service entry (its daemon at {} is gone: {})", name,
                                corba::endpoint_of(ref.in()), probe.why);
            out.push_back({name, corba::endpoint_of(ref.in()), probe.why});
        } catch (const CosNaming::NamingContext::NotFound&) {
            // Removed meanwhile.
        } catch (const CORBA::Exception& e) {
            throw Error(Errc::unreachable, "stores --prune: store \"" + name + "\": the naming service at " +
                                               options_.naming_url + " failed (" + e._name() + ")");
        }
    }
    return out;
}

StoreStatus ControlPlane::status(const std::string& store, const std::string& what)
{
    StoreStatus s;
    s.name = store;
    with_store(*refs_, options_, store, what, [&](BlobStreaming::BlobStore_ptr ref) {
        BlobStreaming::StoreStatus_var st = ref->status();
        BlobStreaming::DataEndpoint_var data = ref->dataAddress();
        fill_status(s, st.in(), data.in());
        return 0;
    }, true);
    s.reachable = true;
    return s;
}

std::vector<StoreStatus> ControlPlane::stores()
{
    std::vector<StoreStatus> out;
    for (const auto& name : store_names()) {
        try {
            out.push_back(status(name, "stores"));
        } catch (const Error& e) {
            StoreStatus s;
            s.name = name;
            s.error = e.what();
            out.push_back(std::move(s));
        }
    }
    return out;
}

}  // namespace blobstreaming::client
