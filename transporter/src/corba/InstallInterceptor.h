#pragma once
/// Registering an omniORB interceptor so that it is there exactly once.

namespace blobstreaming::corba {

/// Adds `fn` to the interceptor list `list`, removing it first: idempotent
/// within one ORB, and a new ORB (whose lists omniORB emptied when the last
/// one was destroyed) gets it again.
template <class List, class Fn>
void install_interceptor(List& list, Fn fn)
{
    list.remove(fn);
    list.add(fn);
}

}  // namespace blobstreaming::corba
