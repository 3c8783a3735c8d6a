#pragma once
/// blob-dicomd's study events (docs/DICOM.md "study-stable",
/// docs/EVENTS.md "study-stable"): a StudyEvents servant registered as
/// BlobStreaming/Gateways/<AE title> in the Naming Service, so that
/// `blob watch --events study-stable` finds it; its subscriptions are the
/// stores' (daemon::EventHub on a NoticeDispatcher: a bounded queue per
/// subscriber, drops counted and logged, a subscriber that does not take an
/// event within 2 s ended), so a slow or dead one never delays the gateway
/// nor another.

#include "StableTracker.h"

#include <blobstreaming/client/Options.h>

#include <cstdint>
#include <string>

namespace blobstreaming::dicom {

class StudyEvents {
public:
    /// Serves StudyEvents in the process's ORB (the Session's: it must
    /// outlive this) and registers it under `aetitle`. Throws Error
    /// (unreachable: the Naming Service at `session.naming_url`).
    StudyEvents(const client::SessionOptions& session, std::string aetitle);
    /// withdraw()
    ~StudyEvents();
    StudyEvents(const StudyEvents&) = delete;
    StudyEvents& operator=(const StudyEvents&) = delete;

    /// Queues `study` for every subscriber; never blocks beyond a mutex.
    void publish(const StableStudy& study) noexcept;

    /// Unregisters (quiet when the Naming Service is gone), drops what is
    /// queued, ends the delivery threads. Idempotent.
    void withdraw() noexcept;

    class Impl;

private:
    Impl* impl_;  ///< a reference-counted servant: the POA holds it while active
};

}  // namespace blobstreaming::dicom
