#include "BlobLocator_i.h"

#include <blobstreaming/transporter/Nearest.h>
#include <blobstreaming/transporter/Placement.h>

#include "server/AccessList.h"

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/NameSeqIdl.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace blobstreaming::corba {
namespace {

struct Found {
    std::string store;
    bool holds = true;
    BlobStreaming::StoreTier tier;
    BlobStreaming::BlobStore_var ref;
};

}  // namespace

BlobLocator_i::BlobLocator_i(CosNaming::NamingContext_ptr naming, std::string naming_url, const ServantContext& own,
                             CORBA::Object_ptr own_ref, std::string default_store)
    : naming_(CosNaming::NamingContext::_duplicate(naming)), naming_url_(std::move(naming_url)), own_(own),
      own_ref_(BlobStreaming::BlobStore::_unchecked_narrow(own_ref)),
      default_store_(default_store.empty() ? own.store_name() : std::move(default_store))
{}

BlobStreaming::LocationSeq* BlobLocator_i::locate(const char* name)
{
    if (own_.service.access_enforced()) return locate_own(name);
    if (auto problem = blob_name_problem(name))
        throw BlobStreaming::InvalidName(("locate " + quote_name(name) + ": " + *problem).c_str(), name);
    std::vector<Found> answered;  // holders, and read-through stores that lack the Blob
    std::vector<std::string> stores;
    try {
        stores = list_stores(naming_);
    } catch (...) {
        rethrow_declared(kInvalidName, "");
    }
    for (const std::string& store : stores) {
        try {
            Found f;
            f.store = store;
            f.ref = resolve_store(naming_, store, naming_url_);
            const bool holds = f.ref->contains(name);
            BlobStreaming::StoreStatus_var status = f.ref->status();
            f.tier = status->tier;
            f.holds = holds;
            if (holds || status->readThrough) answered.push_back(std::move(f));
        } catch (const CORBA::Exception& e) {
            spdlog::debug("locate {}: store \"{}\" skipped: CORBA {}", quote_name(name), store, e._name());
        } catch (const std::exception& e) {
            spdlog::debug("locate {}: store \"{}\" skipped: {}", quote_name(name), store, e.what());
        }
    }
    // A read-through store nearer than every holder fills itself from them
    // (Fetcher.h): it is where a client of its tier pulls, listed first.
    const std::vector<Found> found = nearest(std::move(answered));
    BlobStreaming::LocationSeq_var out = new BlobStreaming::LocationSeq;
    out->length(static_cast<CORBA::ULong>(found.size()));
    for (CORBA::ULong i = 0; i < out->length(); ++i) {
        out[i].store = found[i].store.c_str();
        out[i].tier = found[i].tier;
        out[i].ref = BlobStreaming::BlobStore::_duplicate(found[i].ref.in());
        out[i].holds = found[i].holds;
    }
    return out._retn();
}

BlobStreaming::LocationSeq* BlobLocator_i::locate_own(const char* name)
{
    // The permission first: a refused caller learns nothing, not even
    // whether the name is valid.
    require_permission(own_, server::Permission::read, "locate");
    if (auto problem = blob_name_problem(name))
        throw BlobStreaming::InvalidName(("locate " + quote_name(name) + ": " + *problem).c_str(), name);
    BlobStreaming::LocationSeq_var out = new BlobStreaming::LocationSeq;
    try {
        if (own_.service.contains(current_caller(), name)) {
            out->length(1);
            out[0].store = own_.store_name().c_str();
            out[0].tier = own_.tier;
            out[0].ref = BlobStreaming::BlobStore::_duplicate(own_ref_.in());
            out[0].holds = true;
        }
    } catch (...) {
        rethrow_idl(own_, kInvalidName, {name});
    }
    return out._retn();
}

BlobStreaming::NameSeq* BlobLocator_i::stores()
{
    try {
        return new BlobStreaming::NameSeq(to_name_seq(list_stores(naming_)));
    } catch (...) {
        rethrow_declared(kRaisesNothing, "");
    }
}

namespace {

std::string bytes_text(std::uint64_t size) { return std::to_string(size) + " bytes"; }

BlobStreaming::Placement* placement_of(const PlacementCandidate& c, const PlacementChoice& choice,
                                       BlobStreaming::BlobStore_ptr ref)
{
    BlobStreaming::Placement_var out = new BlobStreaming::Placement;
    out->store = c.store.c_str();
    out->tier = static_cast<BlobStreaming::StoreTier>(c.tier);
    out->ref = BlobStreaming::BlobStore::_duplicate(ref);
    out->byDefault = choice.by_default;
    out->room = c.room;
    return out._retn();
}

}  // namespace

BlobStreaming::Placement* BlobLocator_i::place(BlobStreaming::ByteCount size, const BlobStreaming::StoreTierSeq& tiers)
{
    std::vector<int> wanted;
    for (CORBA::ULong i = 0; i < tiers.length(); ++i) wanted.push_back(static_cast<int>(tiers[i]));
    if (own_.service.access_enforced()) return place_own(size, wanted);
    std::vector<std::string> stores;
    try {
        stores = list_stores(naming_);
    } catch (...) {
        rethrow_declared(kOutOfSpace, "");
    }
    std::vector<PlacementCandidate> candidates;
    std::vector<BlobStreaming::BlobStore_var> refs;
    for (const std::string& store : stores) {
        PlacementCandidate c;
        c.store = store;
        BlobStreaming::BlobStore_var ref;
        try {
            ref = resolve_store(naming_, store, naming_url_);
            BlobStreaming::StoreStatus_var status = ref->status();
            c.tier = static_cast<int>(status->tier);
            c.room = room_of(status->capacity, status->used, status->reserved);
            c.answered = true;
        } catch (const CORBA::Exception& e) {
            c.problem = std::string("CORBA ") + e._name();
        } catch (const std::exception& e) {
            c.problem = e.what();
        }
        if (!c.answered) spdlog::debug("place {}: store \"{}\" skipped: {}", bytes_text(size), store, c.problem);
        candidates.push_back(std::move(c));
        refs.push_back(std::move(ref));
    }
    const PlacementChoice choice = choose_placement(candidates, size, wanted, default_store_);
    if (!choice.index) {
        try {
            throw Error(choice.code, choice.message);
        } catch (...) {
            IdlContext context;
            context.requested = size;
            rethrow_declared(kOutOfSpace, "", context);
        }
    }
    const PlacementCandidate& c = candidates[*choice.index];
    spdlog::debug("place {}: store \"{}\" ({}{})", bytes_text(size), c.store, placement_tier_name(c.tier),
                  choice.by_default ? ", the default" : "");
    return placement_of(c, choice, refs[*choice.index].in());
}

BlobStreaming::Placement* BlobLocator_i::place_own(BlobStreaming::ByteCount size, const std::vector<int>& tiers)
{
    require_permission(own_, server::Permission::write, "place");
    try {
        const service::StoreService::Status status = own_.service.status();
        PlacementCandidate c;
        c.store = own_.store_name();
        c.answered = true;
        c.tier = static_cast<int>(own_.tier);
        c.room = room_of(status.usage.capacity, status.usage.used, status.usage.reserved);
        const PlacementChoice choice = choose_placement({c}, size, tiers, default_store_);
        if (!choice.index)
            throw Error(choice.code, choice.message + " (with TLS the locator places on its own store only)");
        return placement_of(c, choice, own_ref_.in());
    } catch (...) {
        IdlContext context;
        context.requested = size;
        rethrow_declared(kOutOfSpace, own_.store_name(), context);
    }
}

void bind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator)
{
    root->rebind(locator_path(), locator);
}

bool locator_is_alive(CosNaming::NamingContext_ptr root)
{
    CORBA::Object_var current;
    try {
        current = root->resolve(locator_path());
    } catch (const CosNaming::NamingContext::NotFound&) {
        return false;
    }
    if (CORBA::is_nil(current)) return false;
    if (ssl_configured() && !requires_tls(current)) return false;  // not asked: replaced
    try {
        return !current->_non_existent();
    } catch (const CORBA::SystemException&) {
        return false;  // its daemon is gone
    }
}

void unbind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator) noexcept
{
    try {
        CORBA::Object_var current = root->resolve(locator_path());
        if (current->_is_equivalent(locator)) root->unbind(locator_path());
    } catch (const CORBA::Exception&) {
    } catch (const std::exception&) {}
}

}  // namespace blobstreaming::corba
