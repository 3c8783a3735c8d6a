#include <blobstreaming/transporter/LibraryVersions.h>

#include <ace/Version.h>
#include <omniORB4/CORBA.h>
#include <openssl/crypto.h>

namespace blobstreaming {

std::vector<cli::LinkedLibrary> transporter_library_versions()
{
    return {{"omniORB", omniORB::versionString()},
            {"ACE", ACE_VERSION},
            {"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)}};
}

}  // namespace blobstreaming
