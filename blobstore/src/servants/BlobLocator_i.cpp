#include "BlobLocator_i.h"

#include <blobstreaming/transporter/Nearest.h>

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
                             CORBA::Object_ptr own_ref)
    : naming_(CosNaming::NamingContext::_duplicate(naming)), naming_url_(std::move(naming_url)), own_(own),
      own_ref_(BlobStreaming::BlobStore::_unchecked_narrow(own_ref))
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
    auto* out = new BlobStreaming::LocationSeq;
    out->length(static_cast<CORBA::ULong>(found.size()));
    for (CORBA::ULong i = 0; i < out->length(); ++i) {
        (*out)[i].store = found[i].store.c_str();
        (*out)[i].tier = found[i].tier;
        (*out)[i].ref = BlobStreaming::BlobStore::_duplicate(found[i].ref.in());
        (*out)[i].holds = found[i].holds;
    }
    return out;
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
