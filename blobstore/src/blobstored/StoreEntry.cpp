#include "StoreEntry.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace blobstreaming::daemon {

StoreEntry::StoreEntry(std::string name, std::string naming_url, std::chrono::milliseconds bound)
    : name_(std::move(name)), naming_url_(std::move(naming_url)), bound_(bound)
{}

EntryHolder StoreEntry::holder(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self) const
{
    CORBA::Object_var current;
    try {
        current = naming->resolve(corba::store_path(name_));
    } catch (const CosNaming::NamingContext::NotFound&) {
        return {};
    }
    if (CORBA::is_nil(current)) return {};
    EntryHolder h;
    h.address = corba::endpoint_of(current);
    if (!CORBA::is_nil(self) && current->_is_equivalent(self)) {
        h.kind = EntryHolder::self;
        return h;
    }
    // Started by blob-activatord (docs/ACTIVATION.md), whose entry this is:
    // taken over without a call (the call would ask the activator to start
    // this very daemon).
    if (const char* activator = std::getenv("BLOBSTREAMING_ACTIVATOR_ENDPOINT"); activator && h.address == activator) {
        h.kind = EntryHolder::gone;
        h.why = "the entry of the activator that started this daemon";
        return h;
    }
    // A TLS store does not call a registrant that does not require TLS (a
    // plaintext impostor): it takes its name at once.
    if (corba::ssl_configured() && !corba::requires_tls(current)) {
        h.kind = EntryHolder::plaintext;
        return h;
    }
    const corba::Probe p = corba::probe(current, bound_);
    h.kind = p.state == corba::Probe::answers ? EntryHolder::answers
             : p.state == corba::Probe::gone  ? EntryHolder::gone
                                              : EntryHolder::silent;
    h.why = p.why;
    return h;
}

std::string StoreEntry::in_use(const EntryHolder& h) const
{
    const std::string state =
        h.kind == EntryHolder::answers
            ? "answers at " + h.address
            : "is registered at " + h.address + " and accepts connections but gave " + h.why + " (stopped or hung?)";
    return "store \"" + name_ + "\" is in use: the daemon registered as BlobStreaming/Stores/" + name_ +
           " in the naming service at " + naming_url_ + " " + state +
           "; stop it first, or give this store another --name (the entry of a daemon that is gone is taken "
           "over)";
}

void StoreEntry::check_free(CosNaming::NamingContext_ptr naming) const
{
    const EntryHolder h = holder(naming, CORBA::Object::_nil());
    if (h.kind == EntryHolder::answers || h.kind == EntryHolder::silent) throw Error(Errc::store_busy, in_use(h));
}

void StoreEntry::bind(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self, const EntryHolder& replaced,
                      const char* when)
{
    corba::bind_store(naming, name_, self);
    if (replaced.kind == EntryHolder::gone)
        spdlog::warn("store \"{}\": took over its naming service entry {}from a daemon that is gone (at {}: {})", name_,
                     when, replaced.address, replaced.why);
    else if (replaced.kind == EntryHolder::plaintext)
        spdlog::warn("store \"{}\": took over its naming service entry {}from a registrant at {} that does not "
                     "require TLS (not called)",
                     name_, when, replaced.address);
}

void StoreEntry::claim(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self)
{
    const EntryHolder h = holder(naming, self);
    if (h.kind == EntryHolder::answers || h.kind == EntryHolder::silent) throw Error(Errc::store_busy, in_use(h));
    bind(naming, self, h, "");
}

void StoreEntry::keep(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self)
{
    const EntryHolder h = holder(naming, self);
    switch (h.kind) {
    case EntryHolder::self: yielded_ = false; return;
    case EntryHolder::answers:
    case EntryHolder::silent:
        if (!yielded_)
            spdlog::warn("store \"{}\": its naming service entry names another daemon of the same name, which {}; "
                         "this daemon leaves it alone and keeps serving the clients that hold its reference (stop "
                         "one of the two)",
                         name_,
                         h.kind == EntryHolder::answers ? "answers at " + h.address : h.why + " at " + h.address);
        yielded_ = true;
        return;
    case EntryHolder::none:
    case EntryHolder::gone:
    case EntryHolder::plaintext:
        bind(naming, self, h, "again ");
        yielded_ = false;
        if (h.kind == EntryHolder::none)
            spdlog::info("store \"{}\" registered again in the naming service at {} (its entry was missing)", name_,
                         naming_url_);
        return;
    }
}

void StoreEntry::release(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self) noexcept
{
    try {
        CORBA::Object_var current = naming->resolve(corba::store_path(name_));
        if (CORBA::is_nil(current) || !current->_is_equivalent(self)) {
            spdlog::info("store \"{}\": its naming service entry names another daemon now; left in place", name_);
            return;
        }
        corba::unbind_store(naming, name_);
    } catch (const CosNaming::NamingContext::NotFound&) {
    } catch (const CORBA::Exception& e) {
        spdlog::warn("cannot remove store \"{}\" from the naming service at {}: CORBA {}", name_, naming_url_,
                     e._name());
    } catch (const std::exception& e) {
        spdlog::warn("cannot remove store \"{}\" from the naming service: {}", name_, e.what());
    }
}

}  // namespace blobstreaming::daemon
