#pragma once
/// Session::copy(): Blobs copied from store to store by the stores
/// themselves (BlobStore::fetch). The client only orchestrates: one lane
/// per destination, each with CopyOptions::window fetches in flight (each
/// one a blocking control call that lasts as long as its transfer, made on
/// a lane thread, never on the control threads or the loop), and for a
/// chain, destination k fetches Blob i from destination k-1 as soon as that
/// one has begun to receive it (BlobStore::beginFetch), following the bytes
/// as they arrive: one large Blob crosses the chain at once.
/// The lanes run under one control call, which joins them before the
/// series completes; per-slice completions are posted to the loop thread.

#include "SessionImpl.h"

#include <blobstreaming/client/Session.h>

#include <string>
#include <vector>

namespace blobstreaming::client {

/// Caller thread: Session::copy() in `mode`.
void start_copy(Session::Impl& session, std::vector<std::string> names, CopyOptions options, Mode mode,
                SeriesCompletion done, SliceCompletion slice_done);

}  // namespace blobstreaming::client
