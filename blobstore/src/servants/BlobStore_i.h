#pragma once
/// The BlobStore servant: the store's index, reservations and tickets on the
/// control plane. Never moves bulk data (that is the data plane's job).

#include "ServantContext.h"

#include <blobstreaming/blobstore/Store.h>

#include <optional>
#include <string>

#include <BlobStreaming.hh>

namespace blobstreaming::corba {

/// Thread-safe: omniORB runs upcalls on its own threads. Store errors are
/// raised as the IDL exceptions of Exceptions.h with the store's message.
class BlobStore_i : public POA_BlobStreaming::BlobStore {
public:
    explicit BlobStore_i(const ServantContext& context);

    char* name() override;
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
    BlobStreaming::BlobInfo* fetch(const char* name, BlobStreaming::BlobStore_ptr source,
                                   CORBA::Boolean overwrite) override;
    void beginFetch(const char* name, BlobStreaming::BlobStore_ptr source, CORBA::Boolean overwrite) override;
    BlobStreaming::BlobInfo* awaitFetch(const char* name) override;
    BlobStreaming::FetchOutcomeSeq* fetchEach(const BlobStreaming::NameSeq& names, BlobStreaming::BlobStore_ptr source,
                                              CORBA::Boolean overwrite) override;
    CORBA::Boolean findLocalFile(const char* name, BlobStreaming::LocalFile_out file) override;
    CORBA::Boolean shareImage(const char* name, BlobStreaming::SharedImage_out image) override;
    BlobStreaming::SharedImageSeq* shareImages(const BlobStreaming::NameSeq& names) override;
    BlobStreaming::DataEndpoint* dataAddress() override;
    BlobStreaming::BlobTransporter_ptr openTransporter() override;
    /// EventSubscription.h
    CORBA::ULongLong subscribe(BlobStreaming::EventSubscriber_ptr subscriber,
                               const BlobStreaming::StoreEventKindSeq& kinds) override;
    void unsubscribe(CORBA::ULongLong id) override;

private:
    /// The name of `source` for a fetch of `name`; refuses a nil source, a
    /// store that does not fetch, and this store as its own source.
    std::string fetch_source(const std::string& name, BlobStreaming::BlobStore_ptr source) const;
    /// The committed file of `name` this store hands to processes of its
    /// host (findLocalFile, shareImage): none when it does not `offering`
    /// (a missing name is still no_such_blob), for a Blob a fetch is
    /// bringing here and for an empty Blob. Throws what the store throws.
    std::optional<Store::LocalFile> offered_file(const std::string& name, bool offering) const;
    /// shareImage()'s answer for `name` into `image`; throws Error.
    bool share_image(const std::string& name, BlobStreaming::SharedImage& image);

    const ServantContext& context_;
};

}  // namespace blobstreaming::corba
