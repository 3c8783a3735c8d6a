#pragma once
/// The BlobStore servant: the store's index, reservations and tickets on the
/// control plane, as the store service (service/StoreService.h) decides
/// them; this class converts IDL types and maps errors to IDL exceptions.
/// Never moves bulk data (that is the data plane's job).

#include "Fetcher.h"
#include "ServantContext.h"

#include <blobstreaming/blobstore/Store.h>

#include <string>

#include <BlobStreaming.hh>

namespace blobstreaming::corba {

/// Thread-safe: omniORB runs upcalls on its own threads. Store errors are
/// raised as the IDL exceptions of Exceptions.h with the store's message.
class BlobStore_i : public POA_BlobStreaming::BlobStore {
public:
    explicit BlobStore_i(const ServantContext& context);

    char* name() override;
    char* identity() override;
    BlobStreaming::StoreStatus* status() override;
    CORBA::Boolean contains(const char* name) override;
    BlobStreaming::BlobInfo* stat(const char* name) override;
    BlobStreaming::BlobInfoSeq* list() override;
    BlobStreaming::Reservation* reserve(const char* name, BlobStreaming::ByteCount size,
                                        CORBA::Boolean overwrite) override;
    BlobStreaming::BlobInfo* commit(BlobStreaming::ReservationId id,
                                    const BlobStreaming::BlobChecksum& expected) override;
    void abort(BlobStreaming::ReservationId id) override;
    BlobStreaming::Reservation* resumable(const char* name) override;
    BlobStreaming::BlobInfo* verify(const char* name) override;
    void remove(const char* name) override;
    /// Fetcher.h
    BlobStreaming::BlobInfo* fetch(const BlobStreaming::ReadGrant& grant, CORBA::Boolean overwrite) override;
    void beginFetch(const BlobStreaming::ReadGrant& grant, CORBA::Boolean overwrite) override;
    BlobStreaming::BlobInfo* awaitFetch(const char* name) override;
    BlobStreaming::FetchOutcomeSeq* fetchEach(const BlobStreaming::ReadGrantSeq& grants,
                                              CORBA::Boolean overwrite) override;
    /// The source's side of a grant (BlobTransporter_i::grantRead).
    CORBA::Boolean findGrantedFile(const BlobStreaming::TicketId grant, BlobStreaming::LocalFile_out file) override;
    BlobStreaming::SharedImageSeq* shareGrantedImages(const BlobStreaming::TicketIdSeq& grants) override;
    CORBA::Boolean findLocalFile(const char* name, BlobStreaming::LocalFile_out file) override;
    BlobStreaming::LocalFileSeq* findLocalFiles(const BlobStreaming::NameSeq& names) override;
    CORBA::Boolean shareImage(const char* name, BlobStreaming::SharedImage_out image) override;
    BlobStreaming::SharedImageSeq* shareImages(const BlobStreaming::NameSeq& names) override;
    BlobStreaming::DataEndpoint* dataAddress() override;
    BlobStreaming::BlobTransporter_ptr openTransporter() override;
    /// EventSubscription.h
    CORBA::ULongLong subscribe(BlobStreaming::EventSubscriber_ptr subscriber,
                               const BlobStreaming::StoreEventKindSeq& kinds) override;
    void unsubscribe(CORBA::ULongLong id) override;

private:
    /// `grant` for a fetch here: refuses a bad name, a nil source, a store
    /// that does not fetch, a ticket that is not a whole pull of its name,
    /// and this store as its own source. Throws Error.
    Grant fetch_grant(const BlobStreaming::ReadGrant& grant) const;

    const ServantContext& context_;
};

}  // namespace blobstreaming::corba
