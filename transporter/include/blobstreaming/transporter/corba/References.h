#pragma once
/// What an object reference says about how it will be reached, for messages
/// (endpoint_of) and for the TLS checks a client makes before it sends
/// anything (ssl_only, requires_tls); whether its server answers (probe).

#include <BlobStreaming.hh>

#include <chrono>
#include <string>

namespace blobstreaming::corba {

/// Host:port of the first IIOP profile of an object reference, for messages.
std::string endpoint_of(CORBA::Object_ptr ref);

/// Whether `ref` can be reached over TLS only (giop:ssl, no giop:tcp).
bool ssl_only(CORBA::Object_ptr ref);

/// Whether every way into `ref` is TLS that its server insists on: every
/// profile is IIOP with port 0 (no plain TCP), no alternate or Unix-socket
/// address, and a TAG_SSL_SEC_TRANS component whose "requires" holds
/// integrity, confidentiality and trust in the client. A client that uses
/// TLS sends nothing to a reference that fails this (a plaintext impostor
/// registered under a store's name, or a misconfigured store). Nil: false.
bool requires_tls(CORBA::Object_ptr ref);

/// What a bounded call to a reference's server showed.
struct Probe {
    enum State {
        answers,  ///< the object exists and its server answered
        gone,     ///< nobody listens at its address (connection refused), or its server no longer has it
        silent,   ///< no answer within the bound, or no way to tell (e.g. TLS only, this process has no TLS)
    };
    State state = silent;
    std::string why;  ///< gone, silent: what happened ("connection refused", "no answer within 3.000 s", ...)
};

/// One _non_existent() call to `ref`'s server, connection included, bounded
/// by `bound` (the reference's call timeout is set to it). Never throws a
/// CORBA system exception. Only a refused connection or a server that says
/// the object does not exist is `gone`: a server that accepted the
/// connection and is silent (stopped, overloaded) or that cannot be asked
/// is alive as far as anyone can tell.
Probe probe(CORBA::Object_ptr ref, std::chrono::milliseconds bound);

}  // namespace blobstreaming::corba
