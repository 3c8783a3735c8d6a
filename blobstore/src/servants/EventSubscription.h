#pragma once
/// BlobStore::subscribe and unsubscribe: a remote EventSubscriber as a
/// subscription of the daemon's StoreEventHub (server/StoreEventHub.h).

#include "ServantContext.h"

#include <blobstreaming/blobstore/ObservedStore.h>

#include <BlobStreaming.hh>

#include <chrono>
#include <string>

namespace blobstreaming::corba {

/// Needs read permission. LimitReached past the hub's limit; NO_RESOURCES
/// when the daemon has no hub (events off). The subscription belongs to
/// the caller (corba::caller_client()); its id is random.
CORBA::ULongLong subscribe(const ServantContext& context, BlobStreaming::EventSubscriber_ptr subscriber,
                           const BlobStreaming::StoreEventKindSeq& kinds);
/// Ends the caller's own subscription `id`. An id of another client is
/// ignored exactly as an unknown one is (logged by the hub).
void unsubscribe(const ServantContext& context, CORBA::ULongLong id);

/// The IDL form of `event` of `store` (epoch: the daemon's start).
BlobStreaming::StoreEvent to_idl_event(const StoreEvent& event, const std::string& store,
                                       std::chrono::system_clock::time_point epoch);

}  // namespace blobstreaming::corba
