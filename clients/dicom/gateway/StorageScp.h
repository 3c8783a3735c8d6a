#pragma once
/// blob-dicomd's DICOM side: DCMTK's SCP pool (a thread per association, at
/// most --max-associations; more are rejected "local limit exceeded"),
/// accepting every storage SOP class of DCMTK's list with the common
/// transfer syntaxes, and Verification (C-ECHO).

#include "InstanceStore.h"

#include <cstdint>
#include <string>

namespace blobstreaming::dicom {

/// Listens on options.port and serves associations until the process ends;
/// each C-STORE goes through `store`. Returns only when listening fails
/// (e.g. the port is taken), with why.
std::string serve_associations(const GatewayOptions& options, InstanceStore& store);

}  // namespace blobstreaming::dicom
